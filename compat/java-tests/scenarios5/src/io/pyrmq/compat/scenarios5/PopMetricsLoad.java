package io.pyrmq.compat.scenarios5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.AckStatus;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.consumer.PopStatus;
import org.apache.rocketmq.client.impl.consumer.PullAPIWrapper;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.junit.jupiter.api.Test;

/**
 * A fixed POP load for comparing the brokers' POP metrics (tests/compat/test_pop_metrics.py).
 *
 * <p>{@code count} messages into a one-queue {@code topic}; group {@code group} pops them all with
 * the client's own POP calls (PullAPIWrapper#popAsync, then ACK_MESSAGE as the POP push consumer's
 * ackAsync builds it) and acks the first {@code acked} by queue offset; the rest stay un-acked, so
 * after {@code invisibleMs} the broker's revive puts them into the group's retry topic. No consumer
 * heartbeat names the group (the producer's client instance carries the calls): the broker knows
 * it from the POP requests alone, as a POP group (ConsumerManager#compensateBasicConsumerInfo), the
 * way the gRPC proxy's simple consumers reach it.
 *
 * <p>Writes {@code holdFile} ("pops N", the POP requests that returned messages) once the acks are
 * answered, and waits for {@code holdFile}.done (the test scrapes the metrics meanwhile).
 */
public class PopMetricsLoad {

    static String required(String key) {
        String v = PopTest.prop(key, null);
        if (v == null) {
            throw new IllegalStateException("system property '" + key + "' is required");
        }
        return v;
    }

    @Test
    public void load() throws Exception {
        String namesrv = PopTest.namesrv();
        String topic = required("topic");
        String group = required("group");
        int count = Integer.parseInt(PopTest.prop("count", "10"));
        int acked = Integer.parseInt(PopTest.prop("acked", "6"));
        long invisibleMs = Long.parseLong(PopTest.prop("invisibleMs", "10000"));
        PopTest.setUp(namesrv, topic, group, 1);
        DefaultMQProducer p = PopTest.producer(namesrv, "metrics");
        try {
            PopTest.send(p, topic, count);
            MQClientInstance client = p.getDefaultMQProducerImpl().getMqClientFactory();
            client.updateTopicRouteInfoFromNameServer(topic);
            String brokerName = client.getTopicRouteTable().get(topic).getBrokerDatas().get(0).getBrokerName();
            MessageQueue mq = new MessageQueue(topic, brokerName, 0);
            PullAPIWrapper pop = new PullAPIWrapper(client, group, false);
            List<MessageExt> got = new ArrayList<>();
            int pops = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < count && System.currentTimeMillis() < deadline) {
                CompletableFuture<PopResult> f = new CompletableFuture<>();
                pop.popAsync(mq, invisibleMs, count - got.size(), group, 3_000, new PopCallback() {
                    @Override
                    public void onSuccess(PopResult r) {
                        f.complete(r);
                    }

                    @Override
                    public void onException(Throwable e) {
                        f.completeExceptionally(e);
                    }
                }, true, ConsumeInitMode.MIN, false, ExpressionType.TAG, "*");
                PopResult r = f.get(20, TimeUnit.SECONDS);
                if (r.getPopStatus() == PopStatus.FOUND && !r.getMsgFoundList().isEmpty()) {
                    pops++;
                    got.addAll(r.getMsgFoundList());
                }
            }
            assertEquals(count, got.size(), "popped");
            got.sort(Comparator.comparingLong(MessageExt::getQueueOffset));
            String addr = client.findBrokerAddressInSubscribe(brokerName, MixAll.MASTER_ID, true).getBrokerAddr();
            for (MessageExt m : got.subList(0, acked)) {
                String extraInfo = m.getProperty(MessageConst.PROPERTY_POP_CK);
                String[] info = ExtraInfoUtil.split(extraInfo);
                AckMessageRequestHeader h = new AckMessageRequestHeader();
                h.setTopic(ExtraInfoUtil.getRealTopic(info, topic, group));
                h.setQueueId(ExtraInfoUtil.getQueueId(info));
                h.setOffset(ExtraInfoUtil.getQueueOffset(info));
                h.setConsumerGroup(group);
                h.setExtraInfo(extraInfo);
                h.setBrokerName(brokerName);
                CompletableFuture<AckResult> f = new CompletableFuture<>();
                client.getMQClientAPIImpl().ackMessageAsync(addr, 10_000, new AckCallback() {
                    @Override
                    public void onSuccess(AckResult r) {
                        f.complete(r);
                    }

                    @Override
                    public void onException(Throwable e) {
                        f.completeExceptionally(e);
                    }
                }, h);
                assertEquals(AckStatus.OK, f.get(20, TimeUnit.SECONDS).getStatus(), "ack of " + m.getQueueOffset());
            }
            System.out.println("pop metrics load: popped " + got.size() + " in " + pops + " pops, acked " + acked);
            String hold = PopTest.prop("holdFile", null);
            if (hold != null) {
                Files.writeString(Path.of(hold), "pops " + pops);
                assertTrue(PopTest.await(180_000, () -> Files.exists(Path.of(hold + ".done"))), "no " + hold + ".done");
            }
        } finally {
            p.shutdown();
        }
    }
}

package io.pyrmq.compat.scenarios5;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.junit.jupiter.api.Test;

/**
 * A remoting push consumer in POP mode (the group switched with setMessageRequestMode, then
 * DefaultMQPushConsumer with setClientRebalance(false)) under a fixed load, for comparing the
 * brokers' metrics (tests/compat/test_pop_metrics.py).
 *
 * <p>{@code count} messages ("pop-0" ...) go into a one-queue {@code topic} before the consumer
 * starts. The listener succeeds for the first {@code acked} (so the client acks them) and sleeps
 * past the invisible time on the first delivery of the others (the client then drops its answer:
 * nothing is acked, the broker's revive puts them into the group's retry topic); their second
 * delivery succeeds and is acked. The scenario stops three times for the test to scrape, writing
 * {@code holdFile}.A, .B and .C and waiting for the matching ".done" file each time:
 * <ul>
 *   <li>A: the first {@code acked} consumed, the rest asleep (in flight);
 *   <li>B: the rest delivered again from the retry topic and consumed;
 *   <li>C: the consumer shut down (the broker no longer knows the group from a heartbeat).
 * </ul>
 * A and B hold "cks N": the POP check points behind the deliveries so far (distinct POP_CK
 * prefixes: start offset, pop time, invisible time, revive queue, topic, broker, queue), which is
 * what the broker wrote to its revive topic as CK records.
 */
public class PopPushMetricsLoad {

    /** The check point a delivery came from: its POP_CK without the message's own queue offset. */
    static String checkpointOf(String extraInfo) {
        String[] info = ExtraInfoUtil.split(extraInfo);
        return String.join(" ", Arrays.copyOf(info, 7));
    }

    static void sleepUntil(long deadlineMs) {
        long left;
        while ((left = deadlineMs - System.currentTimeMillis()) > 0) {
            try {
                Thread.sleep(left);
            } catch (InterruptedException e) {
                // keep sleeping: an answer before the invisible time would reach the broker
            }
        }
    }

    static void hold(String hold, String phase, String content) throws Exception {
        if (hold == null) {
            return;
        }
        Files.writeString(Path.of(hold + "." + phase), content);
        assertTrue(PopTest.await(180_000, () -> Files.exists(Path.of(hold + "." + phase + ".done"))),
            "no " + hold + "." + phase + ".done");
    }

    @Test
    public void load() throws Exception {
        String namesrv = PopTest.namesrv();
        String topic = PopMetricsLoad.required("topic");
        String group = PopMetricsLoad.required("group");
        int count = Integer.parseInt(PopTest.prop("count", "10"));
        int acked = Integer.parseInt(PopTest.prop("acked", "6"));
        long invisibleMs = Long.parseLong(PopTest.prop("invisibleMs", "5000"));
        String holdFile = PopTest.prop("holdFile", null);
        PopTest.setUp(namesrv, topic, group, 1);
        DefaultMQProducer p = PopTest.producer(namesrv, "push-metrics");
        try {
            PopTest.send(p, topic, count);
        } finally {
            p.shutdown();
        }
        Set<String> cks = ConcurrentHashMap.newKeySet();
        Set<String> done = ConcurrentHashMap.newKeySet();
        Set<String> again = ConcurrentHashMap.newKeySet();
        AtomicInteger asleep = new AtomicInteger();
        DefaultMQPushConsumer c = PopTest.consumer(namesrv, group, "push-metrics");
        c.setPopInvisibleTime(invisibleMs);
        c.setConsumeMessageBatchMaxSize(1);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String extraInfo = m.getProperty(MessageConst.PROPERTY_POP_CK);
                cks.add(checkpointOf(extraInfo));
                String body = PopTest.body(m);
                if (m.getReconsumeTimes() > 0) {
                    again.add(body);
                } else if (Integer.parseInt(body.substring(4)) < acked) {
                    done.add(body);
                } else {
                    asleep.incrementAndGet();
                    String[] info = ExtraInfoUtil.split(extraInfo);
                    sleepUntil(ExtraInfoUtil.getPopTime(info) + ExtraInfoUtil.getInvisibleTime(info) + 500);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        boolean running = true;
        try {
            assertTrue(PopTest.await(60_000, () -> done.size() == acked && asleep.get() == count - acked),
                "consumed " + done + ", asleep " + asleep.get());
            hold(holdFile, "A", "cks " + cks.size());
            assertTrue(PopTest.await(90_000, () -> again.size() == count - acked), "delivered again: " + again);
            hold(holdFile, "B", "cks " + cks.size());
            c.shutdown();
            running = false;
            hold(holdFile, "C", "cks " + cks.size());
            System.out.println("pop push metrics load: " + cks.size() + " check points, " + again.size() + " again");
        } finally {
            if (running) {
                c.shutdown();
            }
        }
    }
}

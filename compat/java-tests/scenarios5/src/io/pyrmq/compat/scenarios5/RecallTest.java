package io.pyrmq.compat.scenarios5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.junit.jupiter.api.Test;

/**
 * Recalling a timer message with the 5.5.0 client's own API: SendResult#getRecallHandle and
 * DefaultMQProducer#recallMessage (RECALL_MESSAGE). Two timer messages -DaheadMs (4000) ahead, one
 * recalled: the push consumer gets the other one and a plain message, never the recalled one. The
 * broker's refusals reach the caller as MQBrokerException with Java's code. The broker must run
 * with recallMessageEnable=true. System properties: namesrv, topic, aheadMs.
 */
public class RecallTest {
    private static Message message(String topic, String body, long deliverMs) {
        Message m = new Message(topic, "TagR", "rkey-" + body, body.getBytes(StandardCharsets.UTF_8));
        if (deliverMs > 0) {
            m.setDeliverTimeMs(deliverMs);
        }
        return m;
    }

    @Test
    public void recallTimerMessage() throws Exception {
        String namesrv = PopTest.namesrv();
        String topic = PopTest.prop("topic", "RecallT_" + PopTest.RUN);
        long aheadMs = Long.parseLong(PopTest.prop("aheadMs", "4000"));
        String group = "recall_" + PopTest.RUN;
        PopTest.createTopic(namesrv, topic, 4);
        Map<String, MessageExt> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = PopTest.consumer(namesrv, group, "recall");
        c.setClientRebalance(true);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.putIfAbsent(new String(m.getBody(), StandardCharsets.UTF_8), m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer p = PopTest.producer(namesrv, "recall");
        try {
            assertTrue(PopTest.await(30_000, () -> c.getDefaultMQPushConsumerImpl().getRebalanceImpl()
                .getProcessQueueTable().keySet().stream().anyMatch(mq -> mq.getTopic().equals(topic))),
                "no queue of " + topic + " assigned");
            // the rebalance's heartbeat with the new subscription version may have met the lock
            for (int i = 0; i < 3; i++) {
                c.getDefaultMQPushConsumerImpl().getmQClientFactory().sendHeartbeatToAllBrokerWithLock();
                Thread.sleep(100);
            }
            long deliver = System.currentTimeMillis() + aheadMs;
            SendResult keep = p.send(message(topic, "keep", deliver));
            SendResult gone = p.send(message(topic, "recall", deliver));
            SendResult plain = p.send(message(topic, "plain", 0));
            for (SendResult r : new SendResult[] {keep, gone, plain}) {
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
            }
            assertNotNull(keep.getRecallHandle(), "a timer message's send result has a recall handle");
            assertNotNull(gone.getRecallHandle());
            assertNull(plain.getRecallHandle(), "a plain message's has none");

            String recalledId = p.recallMessage(topic, gone.getRecallHandle());
            assertEquals(gone.getMsgId(), recalledId, "recallMessage answers the recalled message's id");

            // a handle of another topic, and a handle the client cannot decode
            MQBrokerException other = assertThrows(MQBrokerException.class,
                () -> p.recallMessage(topic + "X", keep.getRecallHandle()));
            System.out.println("other topic: " + other.getResponseCode() + " " + other.getErrorMessage());
            assertTrue(other.getResponseCode() == ResponseCode.TOPIC_NOT_EXIST
                || other.getResponseCode() == ResponseCode.ILLEGAL_OPERATION, other.toString());
            assertThrows(MQClientException.class, () -> p.recallMessage(topic, "bm90IGEgaGFuZGxl"));

            assertTrue(PopTest.await(aheadMs + 20_000, () -> got.containsKey("keep") && got.containsKey("plain")),
                "received " + got.keySet());
            Thread.sleep(2000); // a slot later: the recalled one stays away
            assertEquals(2, got.size(), "received " + got.keySet());
            assertEquals(topic, got.get("keep").getTopic());

            // too late: the kept message's slot has passed
            MQBrokerException late = assertThrows(MQBrokerException.class,
                () -> p.recallMessage(topic, keep.getRecallHandle()));
            assertEquals(ResponseCode.ILLEGAL_OPERATION, late.getResponseCode(), late.toString());
            System.out.println("too late: " + late.getErrorMessage());
        } finally {
            p.shutdown();
            c.shutdown();
        }
    }
}

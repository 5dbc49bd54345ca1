package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Consumer retry and dead-letter queue (issue 5, "what must be shown" 3). The broker runs short
 * custom delay levels so the retry ladder (level 3 + reconsumeTimes) takes seconds.
 *
 * <p>retryThenSucceed: a listener returning RECONSUME_LATER twice, then CONSUME_SUCCESS, gets
 * each message exactly 3 times with reconsumeTimes 0, 1, 2 (same msgId and topic each time).
 * <p>deadLetter: maxReconsumeTimes=2 and a listener that always fails: 3 deliveries, then the
 * message is in %DLQ%&lt;group&gt; and a consumer of that topic receives it with its original
 * body, tags, keys and user property, RETRY_TOPIC = the topic and reconsumeTimes 3.
 */
public class RetryDlqTest {

    private static String send(DefaultMQProducer p, String topic, String tag) throws Exception {
        Message m = new Message(topic, "TagR", "rkey-" + tag, ("retry-" + tag).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("color", "red-" + tag);
        SendResult r = p.send(m);
        assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
        return r.getMsgId();
    }

    @Test
    public void retryThenSucceed() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 2, 30_000);
        }
        Map<String, List<Integer>> times = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = SemA.consumer(namesrv, "semA_retry_" + SemA.RUN, "retry");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            MessageExt m = msgs.get(0);
            List<Integer> seen = times.computeIfAbsent(m.getMsgId(), k -> Collections.synchronizedList(new ArrayList<>()));
            seen.add(m.getReconsumeTimes());
            if (!topic.equals(m.getTopic())) {
                seen.add(-1000); // the client restores the topic from RETRY_TOPIC
            }
            return seen.size() <= 2 ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer p = SemA.producer(namesrv, "retry");
        try {
            SemA.awaitAssigned(c, topic, 30_000);
            String id = send(p, topic, "a");
            SemA.awaitOrFail(Props.integer("timeoutSec", 40) * 1000L,
                () -> times.containsKey(id) && times.get(id).size() >= 3, () -> "deliveries: " + times);
            Thread.sleep(Props.integer("quietMs", 5000)); // nothing more may come
            assertEquals(List.of(0, 1, 2), times.get(id), "reconsumeTimes of the deliveries of " + id);
            assertEquals(1, times.size(), "only the sent message was delivered: " + times);
            System.out.println("deliveries: " + times);
        } finally {
            SemA.quietly(p::shutdown);
            SemA.quietly(c::shutdown);
        }
    }

    @Test
    public void deadLetter() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        String group = "semA_dlq_" + SemA.RUN;
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 2, 30_000);
        }
        List<Integer> attempts = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = SemA.consumer(namesrv, group, "dlq");
        c.setMaxReconsumeTimes(2);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            attempts.add(msgs.get(0).getReconsumeTimes());
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        c.start();
        DefaultMQProducer p = SemA.producer(namesrv, "dlq");
        String id;
        try {
            SemA.awaitAssigned(c, topic, 30_000);
            id = send(p, topic, "d");
            SemA.awaitOrFail(Props.integer("timeoutSec", 40) * 1000L, () -> attempts.size() >= 3,
                () -> "attempts: " + attempts);
        } finally {
            SemA.quietly(p::shutdown);
        }
        Map<String, MessageExt> dead = new ConcurrentHashMap<>();
        String dlqTopic = "%DLQ%" + group;
        DefaultMQPushConsumer d = SemA.consumer(namesrv, "semA_dlqreader_" + SemA.RUN, "dlqreader");
        try {
            // the DLQ topic appears in the route once the broker created it (after the 3rd failure)
            SemA.awaitOrFail(30_000, () -> {
                try {
                    d.subscribe(dlqTopic, "*");
                    return true;
                } catch (Exception e) {
                    return false;
                }
            }, () -> "cannot subscribe " + dlqTopic);
            d.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    dead.put(m.getMsgId(), m);
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            d.start();
            SemA.awaitOrFail(Props.integer("timeoutSec", 40) * 1000L, () -> dead.containsKey(id),
                () -> "DLQ consumer received " + dead.keySet() + ", want " + id + "; attempts " + attempts);
            Thread.sleep(1000);
            assertEquals(List.of(0, 1, 2), attempts, "reconsumeTimes of the failed deliveries");
            MessageExt m = dead.get(id);
            assertEquals(dlqTopic, m.getTopic());
            assertEquals("retry-d", new String(m.getBody(), StandardCharsets.UTF_8));
            assertEquals("TagR", m.getTags());
            assertEquals("rkey-d", m.getKeys());
            assertEquals("red-d", m.getUserProperty("color"));
            assertEquals(topic, m.getProperty("RETRY_TOPIC"));
            assertNotNull(m.getProperty("ORIGIN_MESSAGE_ID"));
            assertEquals(3, m.getReconsumeTimes());
            System.out.println("DLQ message: " + m);
        } finally {
            SemA.quietly(d::shutdown);
            SemA.quietly(c::shutdown);
        }
    }
}

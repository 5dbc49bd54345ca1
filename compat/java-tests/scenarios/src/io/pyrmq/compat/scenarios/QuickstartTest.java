package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * The RocketMQ quickstart, routed only through the name server under test: sync-send
 * `count` messages (tag, keys, user property), then a clustering push consumer that starts
 * from the first offset must receive exactly those messages, intact, within `timeoutSec`.
 *
 * <p>Properties: namesrv (required), topic, count (1000), queues (4), timeoutSec (120).
 */
public class QuickstartTest {

    /** What we sent, to compare with what arrives. */
    static final class Sent {
        final String msgId;
        final String body;
        final String keys;
        final String tags;
        final String idx;

        Sent(String msgId, String body, String keys, String tags, String idx) {
            this.msgId = msgId;
            this.body = body;
            this.keys = keys;
            this.tags = tags;
            this.idx = idx;
        }
    }

    @Test
    public void quickstart() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Quickstart");
        int count = Props.integer("count", 1000);
        int queues = Props.integer("queues", 4);
        int timeoutSec = Props.integer("timeoutSec", 120);
        String run = Long.toHexString(System.nanoTime());
        System.out.printf("quickstart: namesrv=%s topic=%s count=%d run=%s%n", namesrv, topic, count, run);

        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, queues, 30_000);
        }

        Map<String, Sent> sent = new TreeMap<>();
        DefaultMQProducer producer = new DefaultMQProducer("compat_producer_" + run);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("compat-producer-" + run);
        producer.setSendMsgTimeout(10_000);
        producer.start();
        try {
            for (int i = 0; i < count; i++) {
                String tags = i % 2 == 0 ? "TagA" : "TagB";
                String keys = "key-" + run + "-" + i;
                String body = "Hello pyrmq " + i + " run " + run;
                Message msg = new Message(topic, tags, keys, body.getBytes(StandardCharsets.UTF_8));
                msg.putUserProperty("idx", Integer.toString(i));
                SendResult r = producer.send(msg);
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    fail("send " + i + " returned " + r);
                }
                sent.put(r.getMsgId(), new Sent(r.getMsgId(), body, keys, tags, Integer.toString(i)));
            }
        } finally {
            producer.shutdown();
        }
        assertEquals(count, sent.size(), "distinct msgIds from send results");
        System.out.printf("quickstart: sent %d messages%n", sent.size());

        Map<String, MessageExt> received = new ConcurrentHashMap<>();
        AtomicInteger deliveries = new AtomicInteger();
        List<String> strangers = java.util.Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("compat_consumer_" + run);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("compat-consumer-" + run);
        // MessageModel lives in different packages in 4.9.x and 5.x; CLUSTERING is the default.
        assertEquals("CLUSTERING", consumer.getMessageModel().name(), "message model");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                deliveries.incrementAndGet();
                if (sent.containsKey(m.getMsgId())) {
                    received.put(m.getMsgId(), m);
                } else {
                    strangers.add(m.getMsgId() + " " + m);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSec);
            while (received.size() < count && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
        } finally {
            consumer.shutdown();
        }
        System.out.printf("quickstart: received %d distinct of %d (%d deliveries, %d unknown)%n",
            received.size(), count, deliveries.get(), strangers.size());

        List<String> problems = new ArrayList<>();
        for (Sent s : sent.values()) {
            MessageExt m = received.get(s.msgId);
            if (m == null) {
                problems.add("missing " + s.msgId + " idx=" + s.idx);
                continue;
            }
            String body = new String(m.getBody(), StandardCharsets.UTF_8);
            check(problems, s, "body", s.body, body);
            check(problems, s, "keys", s.keys, m.getKeys());
            check(problems, s, "tags", s.tags, m.getTags());
            check(problems, s, "idx property", s.idx, m.getUserProperty("idx"));
            check(problems, s, "topic", topic, m.getTopic());
        }
        for (String s : strangers) {
            problems.add("unexpected message " + s);
        }
        if (!problems.isEmpty()) {
            fail(problems.size() + " problem(s), first 20:\n  "
                + String.join("\n  ", problems.subList(0, Math.min(20, problems.size()))));
        }
    }

    private static void check(List<String> problems, Sent s, String what, String want, String got) {
        if (!want.equals(got)) {
            problems.add(s.msgId + " idx=" + s.idx + " " + what + ": want '" + want + "' got '" + got + "'");
        }
    }
}

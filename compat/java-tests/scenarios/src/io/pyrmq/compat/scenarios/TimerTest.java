package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
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
 * Timer messages (issue 5, "what must be shown" 2): a delivery time -DaheadMs (3000) ahead,
 * set with Message#setDeliverTimeMs on client 5.x (the same TIMER_DELIVER_MS property by hand
 * on 4.9.x, which has no setter).
 *
 * <p>timerOnTime: each message arrives in [deliver - precision, deliver + lateMs]: the broker
 * rounds the delivery time down to timerPrecisionMs (1 s), as the Java broker does.
 * <p>timerSend / timerReceive: the halves around a broker restart; every timer message sent
 * before arrives after, not before deliver - precision.
 */
public class TimerTest {
    private static final long PRECISION_MS = 1000;

    private static Message message(String topic, int idx, long deliverMs) throws Exception {
        Message m = new Message(topic, "TagT", "tkey-" + idx, ("timer-" + idx).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("idx", Integer.toString(idx));
        m.putUserProperty("deliverMs", Long.toString(deliverMs));
        SemA.setDeliverTimeMs(m, deliverMs);
        return m;
    }

    private static DefaultMQPushConsumer consumer(String namesrv, String topic, String tag, Map<Integer, MessageExt> got,
        Map<Integer, Long> arrived) throws Exception {
        DefaultMQPushConsumer c = SemA.consumer(namesrv, "semA_timer_" + tag + "_" + SemA.RUN, "timer-" + tag);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                int idx = Integer.parseInt(m.getUserProperty("idx"));
                got.putIfAbsent(idx, m);
                arrived.putIfAbsent(idx, now);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        return c;
    }

    @Test
    public void timerOnTime() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        int count = Props.integer("count", 5);
        long aheadMs = Props.integer("aheadMs", 3000);
        long lateMs = Props.integer("lateMs", 1000);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
        }
        Map<Integer, MessageExt> got = new ConcurrentHashMap<>();
        Map<Integer, Long> arrived = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consumer(namesrv, topic, "a", got, arrived);
        DefaultMQProducer p = SemA.producer(namesrv, "timer");
        Map<Integer, Long> deliverAt = new ConcurrentHashMap<>();
        try {
            SemA.awaitAssigned(c, topic, 30_000);
            Thread.sleep(1000);
            for (int i = 0; i < count; i++) {
                long deliver = System.currentTimeMillis() + aheadMs;
                deliverAt.put(i, deliver);
                SendResult r = p.send(message(topic, i, deliver));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
            }
            SemA.awaitOrFail(aheadMs + 15_000, () -> got.size() >= count,
                () -> "received " + got.size() + " of " + count);
            List<String> report = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                long d = arrived.get(i) - deliverAt.get(i);
                report.add("idx=" + i + " arrival-deliverTime=" + d + "ms");
                assertTrue(d >= -PRECISION_MS, "message " + i + " arrived " + (-d) + " ms early");
                assertTrue(d <= lateMs, "message " + i + " arrived " + d + " ms late");
                MessageExt m = got.get(i);
                assertEquals(topic, m.getTopic());
                assertEquals("TagT", m.getTags());
                assertEquals("timer-" + i, new String(m.getBody(), StandardCharsets.UTF_8));
                assertTrue(m.getProperty("TIMER_OUT_MS") != null, "TIMER_OUT_MS kept on delivery");
                assertEquals(topic, m.getProperty("REAL_TOPIC"), "REAL_TOPIC kept on the delivered record (Java)");
            }
            System.out.println(String.join("\n", report));
        } finally {
            SemA.quietly(p::shutdown);
            SemA.quietly(c::shutdown);
        }
    }

    @Test
    public void timerSend() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        int count = Props.integer("count", 5);
        long aheadMs = Props.integer("aheadMs", 15000);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
        }
        Properties state = new Properties();
        DefaultMQProducer p = SemA.producer(namesrv, "timer1");
        try {
            for (int i = 0; i < count; i++) {
                long deliver = System.currentTimeMillis() + aheadMs;
                SendResult r = p.send(message(topic, i, deliver));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
                state.setProperty("msgId." + i, r.getMsgId());
            }
        } finally {
            p.shutdown();
        }
        SemA.save(state, SemA.required("stateFile"));
    }

    @Test
    public void timerReceive() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        int count = Props.integer("count", 5);
        Properties state = SemA.load(SemA.required("stateFile"));
        Map<Integer, MessageExt> got = new ConcurrentHashMap<>();
        Map<Integer, Long> arrived = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consumer(namesrv, topic, "b", got, arrived);
        try {
            SemA.awaitOrFail(Props.integer("timeoutSec", 60) * 1000L, () -> got.size() >= count,
                () -> "after the restart received " + got.size() + " of " + count);
            for (int i = 0; i < count; i++) {
                MessageExt m = got.get(i);
                long deliver = Long.parseLong(m.getUserProperty("deliverMs"));
                assertEquals(state.getProperty("msgId." + i), m.getMsgId());
                assertTrue(arrived.get(i) >= deliver - PRECISION_MS, "message " + i + " arrived early");
            }
            System.out.println("all " + count + " timer messages arrived after the restart");
        } finally {
            SemA.quietly(c::shutdown);
        }
    }
}

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
 * Delay levels (issue 5, "what must be shown" 1) with a broker configured with short custom
 * levels (-DdelaysMs gives the table's first entries in ms, e.g. 1000,2000,3000).
 *
 * <p>delayLevels: a consumer owns the topic's queues, then `perLevel` messages per level of
 * -Dlevels are sent; each arrives no earlier than born + delay and at most -DlateMs (1000)
 * after the send returned + delay, on its own topic with DELAY and REAL_TOPIC still on the
 * record (as the Java broker delivers). With -DexpectDelayLevel the broker's GET_BROKER_CONFIG must report
 * exactly that messageDelayLevel.
 * <p>sendDelayed / receiveDelayed: the two halves around a broker restart (pytest restarts it
 * in between): every message sent at -Dlevel before the restart arrives after it, not early.
 */
public class DelayTest {

    private static long[] delays() {
        String[] parts = SemA.required("delaysMs").split(",");
        long[] out = new long[parts.length + 1];
        for (int i = 0; i < parts.length; i++) {
            out[i + 1] = Long.parseLong(parts[i].trim());
        }
        return out;
    }

    private static Message message(String topic, int level, int idx) {
        Message m = new Message(topic, "TagD", "key-" + idx, ("delay-" + idx).getBytes(StandardCharsets.UTF_8));
        m.setDelayTimeLevel(level);
        m.putUserProperty("idx", Integer.toString(idx));
        m.putUserProperty("level", Integer.toString(level));
        return m;
    }

    @Test
    public void delayLevels() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        long[] delays = delays();
        int perLevel = Props.integer("perLevel", 3);
        long lateMs = Props.integer("lateMs", 1000);
        String[] levels = Props.str("levels", "1,2,3").split(",");
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
            String expect = Props.str("expectDelayLevel", null);
            if (expect != null) {
                for (String addr : admin.masters()) {
                    Properties cfg = admin.admin.getBrokerConfig(addr);
                    assertEquals(expect, cfg.getProperty("messageDelayLevel"), "messageDelayLevel of " + addr);
                }
            }
        }
        Map<Integer, Long> arrived = new ConcurrentHashMap<>();
        Map<Integer, MessageExt> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = SemA.consumer(namesrv, "semA_delay_" + SemA.RUN, "delay");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                int idx = Integer.parseInt(m.getUserProperty("idx"));
                arrived.putIfAbsent(idx, now);
                got.putIfAbsent(idx, m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer p = SemA.producer(namesrv, "delay");
        Map<Integer, Long> sentDone = new ConcurrentHashMap<>();
        Map<Integer, Integer> levelOf = new ConcurrentHashMap<>();
        try {
            SemA.awaitAssigned(c, topic, 30_000);
            Thread.sleep(1000); // the first long poll of every owned queue is on the broker
            int idx = 0;
            for (String l : levels) {
                int level = Integer.parseInt(l.trim());
                for (int i = 0; i < perLevel; i++, idx++) {
                    SendResult r = p.send(message(topic, level, idx));
                    sentDone.put(idx, System.currentTimeMillis());
                    levelOf.put(idx, level);
                    assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
                }
            }
            int total = idx;
            long maxDelay = 0;
            for (int lv : levelOf.values()) {
                maxDelay = Math.max(maxDelay, delays[lv]);
            }
            SemA.awaitOrFail(maxDelay + 15_000, () -> arrived.size() >= total,
                () -> "received " + arrived.size() + " of " + total + ": " + arrived.keySet());
            List<String> report = new ArrayList<>();
            for (int i = 0; i < total; i++) {
                MessageExt m = got.get(i);
                long delay = delays[levelOf.get(i)];
                long early = m.getBornTimestamp() + delay - arrived.get(i);
                long late = arrived.get(i) - (sentDone.get(i) + delay);
                report.add("idx=" + i + " level=" + levelOf.get(i) + " after-born=" + (arrived.get(i) - m.getBornTimestamp())
                    + "ms late-by=" + late + "ms");
                assertTrue(early <= 0, "message " + i + " arrived " + early + " ms before its delay");
                assertTrue(late <= lateMs, "message " + i + " arrived " + late + " ms after its delay");
                assertEquals(topic, m.getTopic());
                // the Java broker writes the delivered record's properties before clearing DELAY
                assertEquals((int) levelOf.get(i), m.getDelayTimeLevel(), "DELAY kept on the delivered record");
                assertEquals(topic, m.getProperty("REAL_TOPIC"));
                assertEquals("TagD", m.getTags());
                assertEquals("key-" + i, m.getKeys());
                assertEquals("delay-" + i, new String(m.getBody(), StandardCharsets.UTF_8));
            }
            System.out.println(String.join("\n", report));
        } finally {
            SemA.quietly(p::shutdown);
            SemA.quietly(c::shutdown);
        }
    }

    @Test
    public void sendDelayed() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        int level = Props.integer("level", 4);
        int count = Props.integer("count", 10);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
        }
        Properties state = new Properties();
        DefaultMQProducer p = SemA.producer(namesrv, "delay1");
        try {
            for (int i = 0; i < count; i++) {
                SendResult r = p.send(message(topic, level, i));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
                state.setProperty("msgId." + i, r.getMsgId());
            }
        } finally {
            p.shutdown();
        }
        state.setProperty("sentAt", Long.toString(System.currentTimeMillis()));
        SemA.save(state, SemA.required("stateFile"));
    }

    @Test
    public void receiveDelayed() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        int level = Props.integer("level", 4);
        int count = Props.integer("count", 10);
        long delay = delays()[level];
        Properties state = SemA.load(SemA.required("stateFile"));
        Map<Integer, MessageExt> got = new ConcurrentHashMap<>();
        Map<Integer, Long> arrived = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = SemA.consumer(namesrv, "semA_delay2_" + SemA.RUN, "delay2");
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
        try {
            SemA.awaitOrFail(delay + 30_000, () -> got.size() >= count,
                () -> "after the restart received " + got.size() + " of " + count + ": " + got.keySet());
            for (int i = 0; i < count; i++) {
                MessageExt m = got.get(i);
                assertEquals(state.getProperty("msgId." + i), m.getMsgId(), "msgId (UNIQ_KEY) kept");
                assertTrue(arrived.get(i) >= m.getBornTimestamp() + delay,
                    "message " + i + " arrived before its delay");
            }
            System.out.println("all " + count + " delayed messages arrived after the restart");
        } finally {
            SemA.quietly(c::shutdown);
        }
    }
}

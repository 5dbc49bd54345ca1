package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Committed offsets survive a broker restart (scenario 8, second half), in two JVMs with the
 * broker restarted on the same store in between (pytest does that):
 *
 * <p>phase1: send `count` messages, consume them all with group `group`, let the client
 * commit, shut the consumer down; then send `more` messages nobody consumes yet. The msgIds
 * go to `stateFile`.
 * <p>phase2 (after the restart): the same group (CONSUME_FROM_FIRST_OFFSET, which only
 * applies to a group without offsets) must receive exactly the `more` later messages, and
 * viewMessage still finds a phase-1 message.
 *
 * <p>Properties: namesrv, topic, group, stateFile (all required), count (50), more (30),
 * queues (4), timeoutSec (30).
 */
public class OffsetRestartTest {

    private static String required(String key) {
        String v = Props.str(key, null);
        if (v == null) {
            throw new IllegalStateException("system property '" + key + "' is required");
        }
        return v;
    }

    private static DefaultMQPushConsumer consumer(String namesrv, String group, String topic, Set<Integer> got,
        Set<Integer> dups) throws Exception {
        DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, group, "compat-offs-" + Clients.RUN);
        c.setPersistConsumerOffsetInterval(1000);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                int idx = Integer.parseInt(m.getUserProperty("idx"));
                if (!got.add(idx)) {
                    dups.add(idx);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        return c;
    }

    private static Set<Integer> range(int from, int to) {
        Set<Integer> s = new TreeSet<>();
        for (int i = from; i < to; i++) {
            s.add(i);
        }
        return s;
    }

    @Test
    public void phase1() throws Exception {
        String namesrv = Props.namesrv();
        String topic = required("topic");
        String group = required("group");
        Path state = Path.of(required("stateFile"));
        int count = Props.integer("count", 50);
        int more = Props.integer("more", 30);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, Props.integer("queues", 4), 30_000);
        }
        Properties out = new Properties();
        DefaultMQProducer p = Clients.producer(namesrv, "offs1");
        try {
            for (int i = 0; i < count; i++) {
                out.setProperty("msgId." + i, send(p, topic, i).getMsgId());
            }
            Set<Integer> got = ConcurrentHashMap.newKeySet();
            Set<Integer> dups = ConcurrentHashMap.newKeySet();
            DefaultMQPushConsumer c = consumer(namesrv, group, topic, got, dups);
            try {
                Clients.awaitOrFail(Props.integer("timeoutSec", 30) * 1000L, () -> got.size() >= count,
                    () -> "phase1 consumed " + got.size() + " of " + count);
                Thread.sleep(3000); // at least two offset commits (persistConsumerOffsetInterval 1 s)
            } finally {
                c.shutdown();
            }
            assertEquals(range(0, count), got, "phase1 consumed");
            for (int i = count; i < count + more; i++) {
                out.setProperty("msgId." + i, send(p, topic, i).getMsgId());
            }
        } finally {
            p.shutdown();
        }
        try (var w = Files.newBufferedWriter(state, StandardCharsets.UTF_8)) {
            out.store(w, "OffsetRestartTest phase1");
        }
    }

    @Test
    public void phase2() throws Exception {
        String namesrv = Props.namesrv();
        String topic = required("topic");
        String group = required("group");
        int count = Props.integer("count", 50);
        int more = Props.integer("more", 30);
        Properties in = new Properties();
        try (var r = Files.newBufferedReader(Path.of(required("stateFile")), StandardCharsets.UTF_8)) {
            in.load(r);
        }
        Set<Integer> got = ConcurrentHashMap.newKeySet();
        Set<Integer> dups = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer c = consumer(namesrv, group, topic, got, dups);
        try {
            Clients.await(Props.integer("timeoutSec", 30) * 1000L, () -> got.containsAll(range(count, count + more)));
            Thread.sleep(2000); // a redelivery of phase-1 messages would show up now
        } finally {
            c.shutdown();
        }
        Set<Integer> early = new TreeSet<>(got);
        early.retainAll(range(0, count));
        if (!early.isEmpty()) {
            fail("after the restart the group re-consumed " + early.size() + " messages it had committed in phase 1: "
                + early);
        }
        assertEquals(range(count, count + more), new TreeSet<>(got), "phase2 consumed exactly the unconsumed tail");
        try (Admin admin = new Admin(namesrv)) {
            String id = in.getProperty("msgId.0");
            MessageExt m = null;
            Exception last = null;
            long deadline = System.currentTimeMillis() + 15_000;
            while (m == null && System.currentTimeMillis() < deadline) {
                try {
                    m = admin.admin.viewMessage(topic, id);
                } catch (Exception e) {
                    last = e;
                    Thread.sleep(300);
                }
            }
            if (m == null) {
                fail("viewMessage(" + topic + ", " + id + ") after restart: " + last);
            }
            assertEquals("0", m.getUserProperty("idx"), "phase-1 message after restart");
        }
    }

    private static SendResult send(DefaultMQProducer p, String topic, int i) throws Exception {
        Message m = Clients.message(topic, "O", "o-" + i, "offsets " + i);
        m.putUserProperty("idx", Integer.toString(i));
        return Clients.sendOk(p, m);
    }
}

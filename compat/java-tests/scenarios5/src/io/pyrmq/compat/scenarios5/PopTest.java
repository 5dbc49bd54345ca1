package io.pyrmq.compat.scenarios5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * POP consumption with the official 5.x remoting client, as the example simple.PopConsumer does
 * it: the group is switched to POP through the admin API (setMessageRequestMode, what mqadmin
 * setConsumeMode sends), then a DefaultMQPushConsumer with setClientRebalance(false) gets its
 * queues from QUERY_ASSIGNMENT and pops.
 *
 * <p>popExactlyOnce: every message consumed once, none again after the invisible time.
 * <p>popRedelivery: a message the listener fails comes back (reconsumeTimes 1) no sooner than
 * the client's first pop delay level (10 s, through CHANGE_MESSAGE_INVISIBLETIME), then is acked.
 * <p>popNotAcked: a consumer that dies without acking: the next consumer gets the messages
 * after the invisible time (popInvisibleTime), through the broker's revive.
 * <p>popOrderly: MessageListenerOrderly in POP mode keeps each queue's order.
 *
 * System properties: namesrv, topic, count, invisibleMs.
 */
public class PopTest {
    static final String RUN = Long.toHexString(System.nanoTime());

    static String prop(String key, String dflt) {
        String v = System.getProperty(key);
        return v == null || v.isEmpty() ? dflt : v;
    }

    static String namesrv() {
        String v = prop("namesrv", null);
        if (v == null) {
            throw new IllegalStateException("system property 'namesrv' is required");
        }
        return v;
    }

    static boolean await(long timeoutMs, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (cond.getAsBoolean()) {
                return true;
            }
            Thread.sleep(100);
        }
        return cond.getAsBoolean();
    }

    /** Create the topic on every master and switch the group to POP there (the example's switchPop). */
    static void setUp(String namesrv, String topic, String group, int queues) throws Exception {
        withTopic(namesrv, topic, group, queues);
    }

    /** Create the topic on every master (no group, no POP switch). */
    static void createTopic(String namesrv, String topic, int queues) throws Exception {
        withTopic(namesrv, topic, null, queues);
    }

    private static void withTopic(String namesrv, String topic, String group, int queues) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10_000);
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("pop-admin-" + System.nanoTime());
        admin.start();
        try {
            List<String> masters = new ArrayList<>();
            for (var bd : admin.examineBrokerClusterInfo().getBrokerAddrTable().values()) {
                String addr = bd.getBrokerAddrs().get(MixAll.MASTER_ID);
                if (addr != null) {
                    masters.add(addr);
                }
            }
            assertTrue(!masters.isEmpty(), "no master broker");
            for (String addr : masters) {
                admin.createAndUpdateTopicConfig(addr, new TopicConfig(topic, queues, queues, 6));
                if (group != null) {
                    admin.createAndUpdateSubscriptionGroupConfig(addr, subscriptionGroup(group));
                }
            }
            long deadline = System.currentTimeMillis() + 30_000;
            while (true) {
                try {
                    if (!admin.examineTopicRouteInfo(topic).getQueueDatas().isEmpty()) {
                        break;
                    }
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                }
                Thread.sleep(200);
            }
            for (String addr : group == null ? List.<String>of() : masters) {
                admin.setMessageRequestMode(addr, topic, group, MessageRequestMode.POP, 0, 10_000);
            }
        } finally {
            admin.shutdown();
        }
    }

    static org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig subscriptionGroup(String group) {
        var sg = new org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig();
        sg.setGroupName(group);
        return sg;
    }

    /** One producer per case: the cases may run concurrently in one JVM. */
    static DefaultMQProducer producer(String namesrv, String tag) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("pop_p_" + tag + "_" + RUN);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName("pop-p-" + tag + "-" + RUN);
        p.setSendMsgTimeout(10_000);
        p.start();
        return p;
    }

    static DefaultMQPushConsumer consumer(String namesrv, String group, String instance) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("pop-c-" + instance + "-" + RUN);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setClientRebalance(false);
        c.setPollNameServerInterval(1000);
        return c;
    }

    static List<String> send(DefaultMQProducer p, String topic, int count) throws Exception {
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            SendResult r = p.send(new Message(topic, "TagP", "k" + i, ("pop-" + i).getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, r.getSendStatus());
            sent.add("pop-" + i);
        }
        return sent;
    }

    static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    @Test
    public void popExactlyOnce() throws Exception {
        String namesrv = namesrv();
        String topic = prop("topic", "PopT_" + RUN);
        String group = "pop_once_" + RUN;
        int count = Integer.parseInt(prop("count", "40"));
        setUp(namesrv, topic, group, 4);
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        List<String> popCk = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = consumer(namesrv, group, "once");
        c.setPopInvisibleTime(Long.parseLong(prop("invisibleMs", "5000")));
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                seen.computeIfAbsent(body(m), k -> new AtomicInteger()).incrementAndGet();
                if (m.getProperty("POP_CK") != null) {
                    popCk.add(m.getProperty("POP_CK"));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer p = producer(namesrv, "popExactlyOnce");
        try {
            List<String> sent = send(p, topic, count);
            if (!await(60_000, () -> seen.keySet().containsAll(sent))) {
                fail("consumed " + seen.size() + " of " + count + ": " + new TreeMap<>(seen));
            }
            // past the invisible time and the broker's revive: an acked message never comes back
            Thread.sleep(Long.parseLong(prop("invisibleMs", "5000")) + 6000);
            for (String b : sent) {
                assertEquals(1, seen.get(b).get(), "deliveries of " + b + ": " + new TreeMap<>(seen));
            }
            assertEquals(sent.size(), seen.size());
            assertEquals(count, popCk.size(), "every message carries POP_CK");
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    @Test
    public void popRedelivery() throws Exception {
        String namesrv = namesrv();
        String topic = prop("topic", "PopR_" + RUN);
        String group = "pop_redo_" + RUN;
        setUp(namesrv, topic, group, 2);
        Map<String, List<Long>> arrivals = new ConcurrentHashMap<>();
        Map<String, List<Integer>> reconsume = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consumer(namesrv, group, "redo");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            boolean fail = false;
            for (MessageExt m : msgs) {
                arrivals.computeIfAbsent(body(m), k -> new CopyOnWriteArrayList<>()).add(System.currentTimeMillis());
                reconsume.computeIfAbsent(body(m), k -> new CopyOnWriteArrayList<>()).add(m.getReconsumeTimes());
                fail |= m.getReconsumeTimes() == 0;
            }
            return fail ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.setConsumeMessageBatchMaxSize(1);
        c.start();
        DefaultMQProducer p = producer(namesrv, "popRedelivery");
        try {
            List<String> sent = send(p, topic, 3);
            if (!await(60_000, () -> sent.stream().allMatch(b -> arrivals.getOrDefault(b, List.of()).size() >= 2))) {
                fail("not redelivered: " + arrivals);
            }
            Thread.sleep(3000);
            for (String b : sent) {
                List<Long> t = arrivals.get(b);
                assertEquals(2, t.size(), b + " delivered " + t.size() + " times");
                assertEquals(List.of(0, 1), reconsume.get(b), b);
                long gap = t.get(1) - t.get(0);
                assertTrue(gap >= 9_000, b + " came back after " + gap + " ms, before the 10 s pop delay");
            }
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    @Test
    public void popNotAcked() throws Exception {
        String namesrv = namesrv();
        String topic = prop("topic", "PopN_" + RUN);
        String group = "pop_lost_" + RUN;
        long invisibleMs = Long.parseLong(prop("invisibleMs", "5000"));
        setUp(namesrv, topic, group, 1);
        Map<String, Long> first = new ConcurrentHashMap<>();
        DefaultMQPushConsumer dying = consumer(namesrv, group, "dying");
        dying.setPopInvisibleTime(invisibleMs);
        dying.subscribe(topic, "*");
        dying.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                first.putIfAbsent(body(m), System.currentTimeMillis());
            }
            try {
                Thread.sleep(600_000); // never answers: nothing is acked
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        dying.start();
        DefaultMQProducer p = producer(namesrv, "popNotAcked");
        Map<String, MessageExt> again = new ConcurrentHashMap<>();
        Map<String, Long> againAt = new ConcurrentHashMap<>();
        DefaultMQPushConsumer next = null;
        try {
            List<String> sent = send(p, topic, 2);
            assertTrue(await(30_000, () -> first.keySet().containsAll(sent)), "first consumer got " + first);
            dying.shutdown();
            next = consumer(namesrv, group, "next");
            next.subscribe(topic, "*");
            next.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    again.putIfAbsent(body(m), m);
                    againAt.putIfAbsent(body(m), System.currentTimeMillis());
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            next.start();
            if (!await(60_000, () -> again.keySet().containsAll(sent))) {
                fail("not revived: " + again.keySet());
            }
            for (String b : sent) {
                assertEquals(1, again.get(b).getReconsumeTimes(), b);
                long gap = againAt.get(b) - first.get(b);
                assertTrue(gap >= invisibleMs - 1000, b + " revived after " + gap + " ms");
            }
        } finally {
            if (next != null) {
                next.shutdown();
            }
            p.shutdown();
        }
    }

    @Test
    public void popOrderly() throws Exception {
        String namesrv = namesrv();
        String topic = prop("topic", "PopO_" + RUN);
        String group = "pop_order_" + RUN;
        int count = Integer.parseInt(prop("count", "30"));
        setUp(namesrv, topic, group, 2);
        Map<Integer, List<Integer>> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consumer(namesrv, group, "order");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.computeIfAbsent(m.getQueueId(), k -> new CopyOnWriteArrayList<>())
                    .add(Integer.parseInt(body(m).substring(4)));
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        c.start();
        DefaultMQProducer p = producer(namesrv, "popOrderly");
        try {
            for (int i = 0; i < count; i++) {
                Message m = new Message(topic, "TagO", ("ord-" + i).getBytes(StandardCharsets.UTF_8));
                SendResult r = p.send(m, (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size()), i);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus());
            }
            if (!await(60_000, () -> got.values().stream().mapToInt(List::size).sum() >= count)) {
                fail("orderly consumed " + got);
            }
            Thread.sleep(2000);
            int total = 0;
            for (var e : got.entrySet()) {
                List<Integer> seq = e.getValue();
                for (int i = 1; i < seq.size(); i++) {
                    assertTrue(seq.get(i - 1) < seq.get(i), "queue " + e.getKey() + " out of order: " + seq);
                }
                total += seq.size();
            }
            assertEquals(count, total, "each message once: " + got);
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }
}

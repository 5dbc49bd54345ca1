package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * Rebalance (scenario 4): one clustering group grows 1 -> 3 consumers and shrinks back to 1
 * while `count` messages are sent. At each stable point every consumer's queues must be
 * exactly what AllocateMessageQueueAveragely gives for the sorted client-id list (which the
 * clients learn from the broker's GET_CONSUMER_LIST_BY_GROUP), the broker's connection list
 * must name exactly the live consumers, and in the end every message was consumed at least once.
 *
 * <p>Properties: namesrv (required), topic, count (5000), queues (8), settleSec (30), timeoutSec (40).
 */
public class RebalanceTest {

    @Test
    public void growAndShrink() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Rebalance");
        int count = Props.integer("count", 5000);
        int queues = Props.integer("queues", 8);
        long settleMs = Props.integer("settleSec", 30) * 1000L;
        int timeoutSec = Props.integer("timeoutSec", 40);
        String group = "compat_rebal_" + Clients.RUN;
        Set<String> received = ConcurrentHashMap.newKeySet();
        AtomicInteger deliveries = new AtomicInteger();
        CountDownLatch grow = new CountDownLatch(1);
        CountDownLatch shrink = new CountDownLatch(1);
        AtomicReference<Throwable> sendError = new AtomicReference<>();

        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, queues, 30_000);
            List<DefaultMQPushConsumer> live = new ArrayList<>();
            DefaultMQPushConsumer c1 = start(namesrv, group, topic, "c1", received, deliveries);
            live.add(c1);
            List<MessageQueue> mqAll = Clients.sortedQueues(c1.fetchSubscribeMessageQueues(topic));
            assertEquals(queues, mqAll.size(), "queues in route: " + mqAll);
            settle(admin, group, live, mqAll, settleMs, "one consumer");

            DefaultMQProducer p = Clients.producer(namesrv, "rebal");
            Thread sender = new Thread(() -> {
                try {
                    for (int i = 0; i < count; i++) {
                        if (i == count * 2 / 5) {
                            grow.await(120, TimeUnit.SECONDS);
                        } else if (i == count * 7 / 10) {
                            shrink.await(120, TimeUnit.SECONDS);
                        }
                        Message m = Clients.message(topic, "R", "r-" + i, "rebalance " + i);
                        m.putUserProperty("idx", Integer.toString(i));
                        Clients.sendOk(p, m);
                        if (i % 100 == 0) {
                            Thread.sleep(5);
                        }
                    }
                } catch (Throwable t) {
                    sendError.set(t);
                }
            }, "sender");
            sender.start();
            try {
                DefaultMQPushConsumer c2 = start(namesrv, group, topic, "c2", received, deliveries);
                live.add(c2);
                DefaultMQPushConsumer c3 = start(namesrv, group, topic, "c3", received, deliveries);
                live.add(c3);
                grow.countDown();
                settle(admin, group, live, mqAll, settleMs, "three consumers");

                shrink.countDown();
                c2.shutdown();
                c3.shutdown();
                live.remove(c3);
                live.remove(c2);
                settle(admin, group, live, mqAll, settleMs, "back to one consumer");

                sender.join(120_000);
                if (sendError.get() != null) {
                    throw new AssertionError("sender failed", sendError.get());
                }
                Clients.await(timeoutSec * 1000L, () -> received.size() >= count);
            } finally {
                grow.countDown();
                shrink.countDown();
                sender.join(30_000);
                p.shutdown();
                for (DefaultMQPushConsumer c : live) {
                    Clients.quietly(c::shutdown);
                }
            }
        }
        Set<String> missing = new TreeSet<>();
        for (int i = 0; i < count; i++) {
            if (!received.contains(Integer.toString(i))) {
                missing.add(Integer.toString(i));
            }
        }
        System.out.printf("rebalance: %d distinct of %d, %d deliveries%n", received.size(), count, deliveries.get());
        if (!missing.isEmpty()) {
            fail(missing.size() + " of " + count + " messages never consumed, e.g. idx " + Clients.first(missing, 20));
        }
    }

    private static DefaultMQPushConsumer start(String namesrv, String group, String topic, String name,
        Set<String> received, AtomicInteger deliveries) throws Exception {
        DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, group, "compat-rebal-" + name + "-" + Clients.RUN);
        c.setAllocateMessageQueueStrategy(new AllocateMessageQueueAveragely());
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                received.add(m.getUserProperty("idx"));
                deliveries.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        return c;
    }

    /** Wait until the broker lists exactly `live` and each owns what the averaging strategy assigns it. */
    private static void settle(Admin admin, String group, List<DefaultMQPushConsumer> live, List<MessageQueue> mqAll,
        long settleMs, String stage) throws Exception {
        List<String> cids = new ArrayList<>();
        for (DefaultMQPushConsumer c : live) {
            cids.add(Clients.clientId(c));
        }
        java.util.Collections.sort(cids);
        AllocateMessageQueueAveragely strategy = new AllocateMessageQueueAveragely();
        Map<String, Set<MessageQueue>> want = new LinkedHashMap<>();
        for (String cid : cids) {
            want.put(cid, new TreeSet<>(strategy.allocate("g", cid, mqAll, cids)));
        }
        AtomicReference<String> last = new AtomicReference<>("");
        boolean ok = Clients.await(settleMs, () -> {
            Map<String, Set<MessageQueue>> have = new LinkedHashMap<>();
            for (DefaultMQPushConsumer c : live) {
                have.put(Clients.clientId(c), Clients.owned(c, mqAll.get(0).getTopic(), false));
            }
            Set<String> listed = new TreeSet<>();
            try {
                for (var conn : admin.admin.examineConsumerConnectionInfo(group).getConnectionSet()) {
                    listed.add(conn.getClientId());
                }
            } catch (Exception e) {
                last.set("examineConsumerConnectionInfo: " + e);
                return false;
            }
            last.set("broker lists " + listed + "; owned:" + Clients.describe(have));
            return listed.equals(new TreeSet<>(cids)) && have.equals(want);
        });
        if (!ok) {
            fail(stage + ": no stable AllocateMessageQueueAveragely assignment after " + settleMs + " ms\n want:"
                + Clients.describe(want) + "\n last seen: " + last.get());
        }
        System.out.println("rebalance: " + stage + " settled:" + Clients.describe(want));
    }
}

package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * Ordered messages (scenario 3): a producer picks the queue by order id with a
 * MessageQueueSelector; three MessageListenerOrderly consumers in one group share the
 * queues (each queue locked by one of them through LOCK_BATCH_MQ). For every order id the
 * steps must arrive exactly once and in send order.
 *
 * <p>Properties: namesrv (required), topic, orders (20), steps (20), queues (6), timeoutSec (45).
 */
public class OrderedTest {

    @Test
    public void orderly() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Ordered");
        int orders = Props.integer("orders", 20);
        int steps = Props.integer("steps", 20);
        int queues = Props.integer("queues", 6);
        int timeoutSec = Props.integer("timeoutSec", 45);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, queues, 30_000);
        }
        String group = "compat_ordered_" + Clients.RUN;
        Map<Integer, List<Integer>> seen = new ConcurrentHashMap<>();
        Map<Integer, String> consumerOf = new ConcurrentHashMap<>();
        List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicInteger total = new AtomicInteger();

        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (int n = 0; n < 3; n++) {
                String name = "c" + n;
                DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, group, "compat-ord-" + name + "-" + Clients.RUN);
                c.subscribe(topic, "*");
                c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        int order = Integer.parseInt(m.getUserProperty("order"));
                        int step = Integer.parseInt(m.getUserProperty("step"));
                        List<Integer> l = seen.computeIfAbsent(order, k -> java.util.Collections.synchronizedList(new ArrayList<>()));
                        synchronized (l) {
                            int expect = l.size();
                            if (step != expect) {
                                violations.add("order " + order + ": got step " + step + " after " + l + " (" + name + ")");
                            }
                            l.add(step);
                        }
                        String prev = consumerOf.putIfAbsent(order, name);
                        if (prev != null && !prev.equals(name)) {
                            violations.add("order " + order + " consumed by " + prev + " and " + name);
                        }
                        total.incrementAndGet();
                    }
                    return ConsumeOrderlyStatus.SUCCESS;
                });
                c.start();
                consumers.add(c);
            }
            // Produce only once the three have split the queues and locked theirs, so no
            // rebalance happens while the messages flow.
            Clients.awaitOrFail(30_000, () -> {
                Set<MessageQueue> all = new TreeSet<>();
                int sum = 0;
                for (DefaultMQPushConsumer c : consumers) {
                    Set<MessageQueue> mine = Clients.owned(c, topic, true);
                    if (mine.isEmpty()) {
                        return false;
                    }
                    sum += mine.size();
                    all.addAll(mine);
                }
                return all.size() == queues && sum == queues;
            }, () -> "3 consumers never locked all " + queues + " queues: " + describe(consumers, topic));
            System.out.println("ordered: assignment " + describe(consumers, topic));

            DefaultMQProducer p = Clients.producer(namesrv, "ordered");
            MessageQueueSelector byOrder = (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size());
            try {
                for (int step = 0; step < steps; step++) {
                    for (int order = 0; order < orders; order++) {
                        Message m = Clients.message(topic, "Ord", "order-" + order, "order " + order + " step " + step);
                        m.putUserProperty("order", Integer.toString(order));
                        m.putUserProperty("step", Integer.toString(step));
                        SendResult r = p.send(m, byOrder, order);
                        assertEquals(SendStatus.SEND_OK, r.getSendStatus());
                        assertEquals(order % queues, r.getMessageQueue().getQueueId(), "selector's queue for order " + order);
                    }
                }
            } finally {
                p.shutdown();
            }
            Clients.await(timeoutSec * 1000L, () -> total.get() >= orders * steps);
        } finally {
            for (DefaultMQPushConsumer c : consumers) {
                Clients.quietly(c::shutdown);
            }
        }
        List<String> problems = new ArrayList<>(violations);
        Map<Integer, Integer> short_ = new TreeMap<>();
        for (int order = 0; order < orders; order++) {
            List<Integer> l = seen.get(order);
            if (l == null || l.size() != steps) {
                short_.put(order, l == null ? 0 : l.size());
            }
        }
        if (!short_.isEmpty()) {
            problems.add("orders with missing steps (order -> steps seen): " + short_);
        }
        if (!problems.isEmpty()) {
            fail(problems.size() + " problem(s):\n  " + Clients.first(problems, 20));
        }
        System.out.printf("ordered: %d messages, %d orders in order across 3 consumers%n", total.get(), orders);
    }

    private static String describe(List<DefaultMQPushConsumer> consumers, String topic) {
        StringBuilder sb = new StringBuilder();
        for (DefaultMQPushConsumer c : consumers) {
            sb.append("\n  ").append(Clients.clientId(c)).append(" locked ").append(Clients.owned(c, topic, true))
                .append(" owned ").append(Clients.owned(c, topic, false));
        }
        return sb.toString();
    }
}

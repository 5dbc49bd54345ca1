package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.fail;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Small helpers shared by the broker-core scenarios: clients wired only to the name server
 * under test, bounded waits, and the few calls whose types moved between client 4.9.x and
 * 5.x (done by reflection so one source compiles against both).
 */
final class Clients {
    /** A short id that tells this JVM's groups, instances and keys apart from other runs. */
    static final String RUN = Long.toHexString(System.nanoTime());

    static DefaultMQProducer producer(String namesrv, String tag) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("compat_p_" + tag + "_" + RUN);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName("compat-p-" + tag + "-" + RUN);
        p.setSendMsgTimeout(10_000);
        p.start();
        return p;
    }

    /** Not started: callers subscribe and register a listener first. */
    static DefaultMQPushConsumer pushConsumer(String namesrv, String group, String instance) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(instance);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        return c;
    }

    /** MessageModel moved from common.protocol.heartbeat (4.9) to remoting.protocol.heartbeat (5.x). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setMessageModel(DefaultMQPushConsumer c, String model) throws Exception {
        Class type = c.getMessageModel().getDeclaringClass();
        Object value = Enum.valueOf(type, model);
        Method m = DefaultMQPushConsumer.class.getMethod("setMessageModel", type);
        m.invoke(c, value);
    }

    static Message message(String topic, String tags, String keys, String body) {
        return new Message(topic, tags, keys, body.getBytes(StandardCharsets.UTF_8));
    }

    static SendResult sendOk(DefaultMQProducer p, Message m) throws Exception {
        SendResult r = p.send(m);
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            fail("send returned " + r);
        }
        return r;
    }

    /** Queues of `topic` as the client sees them, sorted like the rebalance code sorts them. */
    static List<MessageQueue> sortedQueues(Collection<MessageQueue> mqs) {
        List<MessageQueue> out = new ArrayList<>(mqs);
        java.util.Collections.sort(out);
        return out;
    }

    /**
     * The queues of `topic` a push consumer currently owns (process queues not dropped),
     * sorted. Client 4.9.x also owns queues of the group's %RETRY% topic; those are left out.
     */
    static Set<MessageQueue> owned(DefaultMQPushConsumer c, String topic, boolean mustBeLocked) {
        Set<MessageQueue> out = new TreeSet<>();
        for (var e : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()) {
            if (e.getKey().getTopic().equals(topic) && !e.getValue().isDropped()
                && (!mustBeLocked || e.getValue().isLocked())) {
                out.add(e.getKey());
            }
        }
        return out;
    }

    static String clientId(DefaultMQPushConsumer c) {
        return c.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId();
    }

    /** Poll `cond` every 100 ms until true; false after `timeoutMs`. */
    static boolean await(long timeoutMs, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(100);
        }
        return true;
    }

    /** Like await, but fails the case with `what` (evaluated at the end) on timeout. */
    static void awaitOrFail(long timeoutMs, BooleanSupplier cond, Supplier<String> what) throws InterruptedException {
        if (!await(timeoutMs, cond)) {
            fail("timed out after " + timeoutMs + " ms: " + what.get());
        }
    }

    static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            System.out.println("ignored on shutdown: " + e);
        }
    }

    static String first(Collection<String> items, int n) {
        List<String> l = new ArrayList<>(items);
        return String.join("\n  ", l.subList(0, Math.min(n, l.size())));
    }

    static <K, V> String describe(Map<K, V> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> sb.append("\n  ").append(k).append(" -> ").append(v));
        return sb.toString();
    }

    private Clients() {
    }
}

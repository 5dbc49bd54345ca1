package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

/**
 * Helpers of the message-semantics scenarios (delay, timer, retry/DLQ, request-reply): clients
 * bound to the name server under test, bounded waits, state files between the two JVMs of a
 * restart case, and the 5.x-only timer setter called by reflection so one source compiles
 * against client 5.5.0 and 4.9.8.
 */
final class SemA {
    static final String RUN = Long.toHexString(System.nanoTime());

    static String required(String key) {
        String v = Props.str(key, null);
        if (v == null) {
            throw new IllegalStateException("system property '" + key + "' is required");
        }
        return v;
    }

    static DefaultMQProducer producer(String namesrv, String tag) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("semA_p_" + tag + "_" + RUN);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName("semA-p-" + tag + "-" + RUN);
        p.setSendMsgTimeout(10_000);
        p.start();
        return p;
    }

    static DefaultMQPushConsumer consumer(String namesrv, String group, String tag) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("semA-c-" + tag + "-" + RUN);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        // %RETRY%<group> and %DLQ%<group> only get a route after the broker made them: find it soon
        c.setPollNameServerInterval(1000);
        return c;
    }

    /** Until the started consumer owns at least one queue of `topic` (rebalance done). */
    static void awaitAssigned(DefaultMQPushConsumer c, String topic, long timeoutMs) throws InterruptedException {
        awaitOrFail(timeoutMs, () -> c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable()
            .keySet().stream().anyMatch(mq -> mq.getTopic().equals(topic)), () -> "no queue of " + topic + " assigned");
        // The rebalance that assigned the queues raised the subscription version, and its heartbeat is
        // dropped when another heartbeat of the client holds the lock ("lock heartBeat, but failed"):
        // pulls then get SUBSCRIPTION_NOT_LATEST from any broker until the next periodic heartbeat, 30 s
        // on. Send the current subscription now; more than once, in case a try meets the lock.
        for (int i = 0; i < 3; i++) {
            c.getDefaultMQPushConsumerImpl().getmQClientFactory().sendHeartbeatToAllBrokerWithLock();
            Thread.sleep(100);
        }
    }

    static boolean await(long timeoutMs, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }

    static void awaitOrFail(long timeoutMs, BooleanSupplier cond, Supplier<String> what) throws InterruptedException {
        if (!await(timeoutMs, cond)) {
            fail("timed out after " + timeoutMs + " ms: " + what.get());
        }
    }

    /** Message#setDeliverTimeMs (5.x); 4.9.x has no setter, so the property the 5.x setter writes. */
    static void setDeliverTimeMs(Message m, long deliverMs) throws Exception {
        try {
            Method setter = Message.class.getMethod("setDeliverTimeMs", long.class);
            setter.invoke(m, deliverMs);
        } catch (NoSuchMethodException e) {
            m.putUserProperty("TIMER_DELIVER_MS", Long.toString(deliverMs));
        }
    }

    static void save(Properties p, String file) throws IOException {
        try (var w = Files.newBufferedWriter(Path.of(file), StandardCharsets.UTF_8)) {
            p.store(w, "semantics-A state");
        }
    }

    static Properties load(String file) throws IOException {
        Properties p = new Properties();
        try (var r = Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8)) {
            p.load(r);
        }
        return p;
    }

    static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            System.out.println("ignored on shutdown: " + e);
        }
    }

    private SemA() {
    }
}

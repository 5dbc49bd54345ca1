package io.pyrmq.compat.grpc;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * Scenarios of the official 5.x Java SDK against one gRPC endpoint, run concurrently (each step
 * has its own topic and group, named {@code <prefix>-<step>} and {@code <prefix>-<step>-g}).
 *
 * <p>Usage: {@code GrpcScenarios <endpoint> <prefix> <step>...}; steps: simple, fifo, delay, tx,
 * push, send (send only, to topic {@code <prefix>-send}), recv (receive what `send` sent).
 * Every observation is one line {@code @@ <json>} on stdout; each step ends with
 * {@code {"step":..,"ev":"done","ok":true|false,"error":..}}. The pytest side asserts on them.
 */
public final class GrpcScenarios {
    static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    static final Duration INVISIBLE = Duration.ofSeconds(10); // the Java proxy's minimum for receive
    static final Duration CHANGED_INVISIBLE = Duration.ofSeconds(2); // ChangeInvisibleDuration has no minimum

    final ClientConfiguration config;
    final String prefix;
    final int count = Integer.getInteger("count", 3);
    final long stepTimeoutMs = Long.getLong("stepTimeoutMs", 60000);

    GrpcScenarios(String endpoint, String prefix) {
        // the SDK's own default (SSL on, any server certificate trusted), as a stock application
        // has it; -Dplaintext=true switches SSL off
        ClientConfigurationBuilder builder = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .setRequestTimeout(Duration.ofSeconds(10));
        if (Boolean.getBoolean("plaintext")) {
            builder.enableSsl(false);
        }
        this.config = builder.build();
        this.prefix = prefix;
    }

    public static void main(String[] args) throws Exception {
        GrpcScenarios s = new GrpcScenarios(args[0], args[1]);
        ExecutorService pool = Executors.newCachedThreadPool();
        List<Future<?>> all = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            String step = args[i];
            all.add(pool.submit(() -> s.run(step)));
        }
        for (Future<?> f : all) {
            f.get();
        }
        pool.shutdownNow();
        emit("*", "exit");
        System.out.flush();
        System.exit(0); // the SDK's non-daemon threads would keep the JVM alive
    }

    void run(String step) {
        String error = null;
        try {
            switch (step) {
                case "simple": simple(step); break;
                case "fifo": fifo(step); break;
                case "delay": delay(step); break;
                case "tx": tx(step); break;
                case "push": push(step); break;
                case "dlq": dlq(step); break;
                case "send": sendOnly(step); break;
                case "recv": recvOnly(step); break;
                default: throw new IllegalArgumentException("unknown step " + step);
            }
        } catch (Throwable t) {
            error = t.toString();
            t.printStackTrace();
        }
        emit(step, "done", "ok", error == null, "error", error);
    }

    String topic(String step) {
        return prefix + "-" + step;
    }

    String group(String step) {
        return prefix + "-" + step + "-g";
    }

    Producer producer(String topic) throws Exception {
        return PROVIDER.newProducerBuilder().setClientConfiguration(config).setTopics(topic).build();
    }

    SimpleConsumer simpleConsumer(String step, String topic) throws Exception {
        return PROVIDER.newSimpleConsumerBuilder()
            .setClientConfiguration(config)
            .setConsumerGroup(group(step))
            .setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .build();
    }

    MessageBuilder message(String topic, String body) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
    }

    void sent(String step, SendReceipt r, String body) {
        emit(step, "sent", "id", r.getMessageId().toString(), "body", body);
    }

    static String body(MessageView v) {
        ByteBuffer b = v.getBody().duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return new String(out, StandardCharsets.UTF_8);
    }

    void received(String step, MessageView v) {
        emit(step, "received", "id", v.getMessageId().toString(), "body", body(v), "topic", v.getTopic(),
            "tag", v.getTag().orElse(null), "keys", String.join(",", v.getKeys()),
            "group", v.getMessageGroup().orElse(null), "attempt", v.getDeliveryAttempt(),
            "deliveryTs", v.getDeliveryTimestamp().orElse(null), "bornTs", v.getBornTimestamp(),
            "now", System.currentTimeMillis(), "props", new LinkedHashMap<>(v.getProperties()));
    }

    long deadline() {
        return System.currentTimeMillis() + stepTimeoutMs;
    }

    /**
     * Send with tag, keys and properties; receive; ack all but the last two: one is left to its
     * invisible duration, the other's is changed to 2 s; both come back and are acked then.
     */
    void simple(String step) throws Exception {
        String topic = topic(step);
        try (Producer p = producer(topic); SimpleConsumer c = simpleConsumer(step, topic)) {
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String b = step + "-" + i;
                Message m = message(topic, b).setTag("TagA").setKeys("key-" + i, "k2-" + i)
                    .addProperty("color", "c" + i).build();
                SendReceipt r = p.send(m);
                ids.add(r.getMessageId().toString());
                sent(step, r, b);
            }
            String kept = ids.get(ids.size() - 1);
            String changed = ids.get(ids.size() - 2);
            Set<String> acked = new HashSet<>();
            long end = deadline();
            while (System.currentTimeMillis() < end && !(acked.contains(kept) && acked.contains(changed))) {
                for (MessageView v : c.receive(16, INVISIBLE)) {
                    received(step, v);
                    String id = v.getMessageId().toString();
                    if (id.equals(kept) && v.getDeliveryAttempt() == 1) {
                        emit(step, "withheld", "id", id, "now", System.currentTimeMillis());
                        continue;
                    }
                    if (id.equals(changed) && v.getDeliveryAttempt() == 1) {
                        c.changeInvisibleDuration(v, CHANGED_INVISIBLE);
                        emit(step, "changed", "id", id, "now", System.currentTimeMillis());
                        continue;
                    }
                    c.ack(v);
                    acked.add(id);
                    emit(step, "acked", "id", id);
                }
            }
        }
    }

    /** One message group, sent in order, received and acked in the same order. */
    void fifo(String step) throws Exception {
        String topic = topic(step);
        int n = count * 2;
        try (Producer p = producer(topic); SimpleConsumer c = simpleConsumer(step, topic)) {
            for (int i = 0; i < n; i++) {
                String b = step + "-" + i;
                sent(step, p.send(message(topic, b).setTag("F").setMessageGroup("mg-1").build()), b);
            }
            int got = 0;
            long end = deadline();
            while (System.currentTimeMillis() < end && got < n) {
                for (MessageView v : c.receive(16, INVISIBLE)) {
                    received(step, v);
                    c.ack(v);
                    got++;
                }
            }
        }
    }

    /** deliveryTimestamp three seconds ahead: not received before it. */
    void delay(String step) throws Exception {
        String topic = topic(step);
        try (Producer p = producer(topic); SimpleConsumer c = simpleConsumer(step, topic)) {
            long at = System.currentTimeMillis() + 3000;
            String b = step + "-0";
            SendReceipt r = p.send(message(topic, b).setTag("D").setDeliveryTimestamp(at).build());
            emit(step, "sent", "id", r.getMessageId().toString(), "body", b, "deliverAt", at,
                "now", System.currentTimeMillis());
            long end = deadline();
            boolean got = false;
            while (System.currentTimeMillis() < end && !got) {
                for (MessageView v : c.receive(16, INVISIBLE)) {
                    received(step, v);
                    c.ack(v);
                    got = true;
                }
            }
        }
    }

    /**
     * Three half messages: committed, rolled back, and left open for the check-back, whose checker
     * commits it. The broker may check the others too (Java does when the check runs before the
     * end-transaction op is read): the checker answers as their transaction ended.
     */
    void tx(String step) throws Exception {
        String topic = topic(step);
        Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config).setTopics(topic)
            .setTransactionChecker(v -> {
                emit(step, "checked", "id", v.getMessageId().toString(), "body", body(v));
                // As an application would: the local transaction's outcome, found by its key.
                return v.getKeys().contains("rollback") ? TransactionResolution.ROLLBACK : TransactionResolution.COMMIT;
            }).build();
        try (SimpleConsumer c = simpleConsumer(step, topic)) {
            for (String what : new String[] {"commit", "rollback", "check"}) {
                String b = step + "-" + what;
                Transaction t = p.beginTransaction();
                SendReceipt r = p.send(message(topic, b).setTag("T").setKeys(what).build(), t);
                sent(step, r, b);
                if (what.equals("commit")) {
                    t.commit();
                } else if (what.equals("rollback")) {
                    t.rollback();
                }
            }
            Set<String> bodies = new HashSet<>();
            long end = deadline();
            while (System.currentTimeMillis() < end && !bodies.contains(step + "-check")) {
                for (MessageView v : c.receive(16, INVISIBLE)) {
                    received(step, v);
                    c.ack(v);
                    bodies.add(body(v));
                }
            }
            // One more receive: a rolled-back message must not show up late either.
            for (MessageView v : c.receive(16, INVISIBLE)) {
                received(step, v);
                c.ack(v);
            }
        } finally {
            p.close();
        }
    }

    /** PushConsumer: each message fails once, then succeeds on its redelivery. */
    void push(String step) throws Exception {
        String topic = topic(step);
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(count);
        PushConsumer c = PROVIDER.newPushConsumerBuilder()
            .setClientConfiguration(config)
            .setConsumerGroup(group(step))
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("P", FilterExpressionType.TAG)))
            .setMessageListener(v -> {
                int n = seen.computeIfAbsent(v.getMessageId().toString(), k -> new AtomicInteger()).incrementAndGet();
                received(step, v);
                if (n == 1) {
                    emit(step, "failed", "id", v.getMessageId().toString());
                    return ConsumeResult.FAILURE;
                }
                emit(step, "consumed", "id", v.getMessageId().toString());
                done.countDown();
                return ConsumeResult.SUCCESS;
            })
            .build();
        try (Producer p = producer(topic)) {
            for (int i = 0; i < count; i++) {
                String b = step + "-" + i;
                sent(step, p.send(message(topic, b).setTag("P").build()), b);
            }
            done.await(stepTimeoutMs, TimeUnit.MILLISECONDS);
        } finally {
            c.close();
        }
    }

    /**
     * PushConsumer of a group with retryMaxTimes 1 that fails every delivery: two deliveries, then
     * the message is in the group's %DLQ% topic (pytest reads it there with a remoting consumer).
     */
    void dlq(String step) throws Exception {
        String topic = topic(step);
        AtomicInteger deliveries = new AtomicInteger();
        PushConsumer c = PROVIDER.newPushConsumerBuilder()
            .setClientConfiguration(config)
            .setConsumerGroup(group(step))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .setMessageListener(v -> {
                deliveries.incrementAndGet();
                received(step, v);
                return ConsumeResult.FAILURE;
            })
            .build();
        try (Producer p = producer(topic)) {
            String b = step + "-0";
            sent(step, p.send(message(topic, b).setTag("Q").build()), b);
            long end = deadline();
            while (System.currentTimeMillis() < end && deliveries.get() < 2) {
                Thread.sleep(100);
            }
            Thread.sleep(3000); // a third delivery would come now
        } finally {
            c.close();
        }
    }

    /** Only send (tag, keys, property) to <prefix>-send: another client reads them. */
    void sendOnly(String step) throws Exception {
        String topic = topic(step);
        try (Producer p = producer(topic)) {
            for (int i = 0; i < count; i++) {
                String b = step + "-" + i;
                sent(step, p.send(message(topic, b).setTag("X").setKeys("key-" + i).addProperty("color", "c" + i)
                    .build()), b);
            }
        }
    }

    /** Receive and ack `count` messages of <prefix>-recv (sent there by another client). */
    void recvOnly(String step) throws Exception {
        String topic = topic(step);
        try (SimpleConsumer c = simpleConsumer(step, topic)) {
            int got = 0;
            long end = deadline();
            while (System.currentTimeMillis() < end && got < count) {
                for (MessageView v : c.receive(16, INVISIBLE)) {
                    received(step, v);
                    c.ack(v);
                    got++;
                }
            }
        }
    }

    static void emit(String step, String ev, Object... kv) {
        StringBuilder sb = new StringBuilder("@@ {");
        json(sb, "step").append(':');
        json(sb, step).append(',');
        json(sb, "ev").append(':');
        json(sb, ev);
        for (int i = 0; i + 1 < kv.length; i += 2) {
            sb.append(',');
            json(sb, kv[i]).append(':');
            json(sb, kv[i + 1]);
        }
        sb.append('}');
        synchronized (System.out) {
            System.out.println(sb);
            System.out.flush();
        }
    }

    static StringBuilder json(StringBuilder sb, Object o) {
        if (o == null) {
            return sb.append("null");
        }
        if (o instanceof Number || o instanceof Boolean) {
            return sb.append(o);
        }
        if (o instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                json(sb, String.valueOf(e.getKey())).append(':');
                json(sb, e.getValue());
            }
            return sb.append('}');
        }
        String s = o.toString();
        sb.append('"');
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                sb.append('\\').append(ch);
            } else if (ch < 0x20) {
                sb.append(String.format("\\u%04x", (int) ch));
            } else {
                sb.append(ch);
            }
        }
        return sb.append('"');
    }
}

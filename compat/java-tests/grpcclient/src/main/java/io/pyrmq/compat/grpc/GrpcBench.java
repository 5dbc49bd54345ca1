package io.pyrmq.compat.grpc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Throughput and latency of the official 5.x Java SDK against one gRPC endpoint
 * (tools/bench/grpc_bench.py runs it against pyrmq's endpoint and the Java proxy's).
 *
 * <p>Usage: {@code GrpcBench <endpoint> <topic> <group> <count> <threads> [warmup]}. A Producer
 * sends {@code warmup} messages (not timed), then {@code count} 1 KiB messages from {@code threads}
 * threads (synchronous send); a SimpleConsumer then receives (32 at a time, 30 s invisible) and
 * acks every message from {@code threads} threads until all {@code count + warmup} are acked (the
 * phase's time ends at the last ack). Prints one line {@code @@ <json>} per phase with msgs/s and the call latencies in ms.
 * Plaintext unless {@code -Dssl=true}.
 */
public final class GrpcBench {
    static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String group = args[2];
        int count = Integer.parseInt(args[3]);
        int threads = Integer.parseInt(args[4]);
        int warmup = args.length > 5 ? Integer.parseInt(args[5]) : 200;
        ClientConfigurationBuilder builder = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .setRequestTimeout(Duration.ofSeconds(10));
        if (!Boolean.getBoolean("ssl")) {
            builder.enableSsl(false);
        }
        ClientConfiguration config = builder.build();
        byte[] body = new byte[1024];
        Arrays.fill(body, (byte) 'x');
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config).setTopics(topic).build();
             SimpleConsumer consumer = PROVIDER.newSimpleConsumerBuilder()
                 .setClientConfiguration(config)
                 .setConsumerGroup(group)
                 .setAwaitDuration(Duration.ofSeconds(2))
                 .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
                 .build()) {
            for (int i = 0; i < warmup; i++) {
                producer.send(message(topic, body));
            }
            long[] sendNs = new long[count];
            AtomicInteger next = new AtomicInteger();
            long start = System.nanoTime();
            List<Future<?>> senders = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                senders.add(pool.submit(() -> {
                    for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                        long t0 = System.nanoTime();
                        producer.send(message(topic, body));
                        sendNs[i] = System.nanoTime() - t0;
                    }
                    return null;
                }));
            }
            for (Future<?> f : senders) {
                f.get();
            }
            long sendElapsed = System.nanoTime() - start;
            report("send", count, sendElapsed, sendNs, null);

            int total = count + warmup;
            ConcurrentHashMap<String, Boolean> acked = new ConcurrentHashMap<>();
            List<Long> receiveNs = Collections.synchronizedList(new ArrayList<>());
            List<Long> ackNs = Collections.synchronizedList(new ArrayList<>());
            long deadline = System.currentTimeMillis() + 300_000;
            start = System.nanoTime();
            AtomicLong lastAck = new AtomicLong(start);
            List<Future<?>> receivers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                receivers.add(pool.submit(() -> {
                    while (acked.size() < total && System.currentTimeMillis() < deadline) {
                        long t0 = System.nanoTime();
                        List<MessageView> got = consumer.receive(32, Duration.ofSeconds(30));
                        if (!got.isEmpty()) {
                            receiveNs.add(System.nanoTime() - t0);
                        }
                        for (MessageView v : got) {
                            long a0 = System.nanoTime();
                            consumer.ack(v);
                            long a1 = System.nanoTime();
                            ackNs.add(a1 - a0);
                            lastAck.accumulateAndGet(a1, Math::max);
                            acked.put(v.getMessageId().toString(), Boolean.TRUE);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : receivers) {
                f.get();
            }
            long receiveElapsed = lastAck.get() - start; // not the receivers' last idle long poll
            report("receive", acked.size(), receiveElapsed, toArray(receiveNs), toArray(ackNs));
            if (acked.size() < total) {
                throw new IllegalStateException("acked " + acked.size() + " of " + total);
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.flush();
        System.exit(0); // the SDK's non-daemon threads would keep the JVM alive
    }

    static Message message(String topic, byte[] body) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setTag("Bench").setBody(body).build();
    }

    static long[] toArray(List<Long> values) {
        synchronized (values) {
            return values.stream().mapToLong(Long::longValue).toArray();
        }
    }

    static String millis(long[] ns, double q) {
        if (ns.length == 0) {
            return "null";
        }
        long[] sorted = ns.clone();
        Arrays.sort(sorted);
        int i = Math.min(sorted.length - 1, (int) Math.floor(q * sorted.length));
        return String.format(Locale.ROOT, "%.3f", sorted[i] / 1e6);
    }

    static String mean(long[] ns) {
        return ns.length == 0 ? "null" : String.format(Locale.ROOT, "%.3f", Arrays.stream(ns).average().orElse(0) / 1e6);
    }

    static void report(String phase, int messages, long elapsedNs, long[] callNs, long[] ackNs) {
        StringBuilder b = new StringBuilder();
        b.append("{\"phase\":\"").append(phase).append('"');
        b.append(",\"messages\":").append(messages);
        b.append(",\"seconds\":").append(String.format(Locale.ROOT, "%.3f", elapsedNs / 1e9));
        b.append(",\"msgs_per_s\":").append(String.format(Locale.ROOT, "%.1f", messages / (elapsedNs / 1e9)));
        b.append(",\"calls\":").append(callNs.length);
        b.append(",\"mean_ms\":").append(mean(callNs));
        b.append(",\"p50_ms\":").append(millis(callNs, 0.5));
        b.append(",\"p99_ms\":").append(millis(callNs, 0.99));
        if (ackNs != null) {
            b.append(",\"ack_mean_ms\":").append(mean(ackNs));
            b.append(",\"ack_p99_ms\":").append(millis(ackNs, 0.99));
        }
        b.append('}');
        System.out.println("@@ " + b);
        System.out.flush();
    }
}

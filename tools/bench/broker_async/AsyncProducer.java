import java.util.Arrays;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Async send load for tools/bench/broker_bench.py, on the official 5.5.0 client.
 *
 * The benchmark Producer's async mode (-y true) queues up to 10,000 sends in the client's async
 * executor, and on a 2-core machine most of them pass their 3 s timeout while still queued, so it
 * reports only failures against either broker. This keeps a fixed number of sends in flight
 * instead (a semaphore released in the callback) and prints the same stats line as the benchmark
 * Producer, over the same 10-second sliding window, so broker_bench.py parses both alike, plus
 * the 99th percentile RT over that window (0.1 ms buckets up to 10 s; the official tools print
 * average and max only).
 *
 * Args: namesrv topic messageSize inFlight
 */
public final class AsyncProducer {
    /** RT histogram: bucket i counts RTs in [i, i+1) x 0.1 ms; the last one everything from 10 s. */
    private static final int BUCKETS = 100_001;

    /** The 99th percentile RT in ms of the sends counted between two histogram snapshots. */
    static double p99(long[] from, long[] to) {
        long total = 0;
        for (int i = 0; i < BUCKETS; i++) {
            total += to[i] - from[i];
        }
        long rank = (long) Math.ceil(total * 0.99);
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += to[i] - from[i];
            if (seen >= rank && total > 0) {
                return (i + 1) / 10.0;
            }
        }
        return Double.NaN;
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int size = Integer.parseInt(args[2]);
        int inFlight = Integer.parseInt(args[3]);
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'a');

        LongAdder ok = new LongAdder();
        LongAdder failed = new LongAdder();
        LongAdder rtTotal = new LongAdder();
        AtomicLong maxRt = new AtomicLong();
        Semaphore permits = new Semaphore(inFlight);
        AtomicLongArray rtBuckets = new AtomicLongArray(BUCKETS);

        DefaultMQProducer producer = new DefaultMQProducer("benchmark_async_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(Long.toString(System.currentTimeMillis()));
        producer.start();
        System.out.printf("topic: %s, messageSize: %d, inFlight: %d%n", topic, size, inFlight);

        Thread reporter = new Thread(() -> {
            long[][] window = new long[10][];
            long[][] hist = new long[10][];
            int n = 0;
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long[] snap = {System.currentTimeMillis(), ok.sum(), rtTotal.sum(), failed.sum()};
                long[] counts = new long[BUCKETS];
                for (int i = 0; i < BUCKETS; i++) {
                    counts[i] = rtBuckets.get(i);
                }
                if (n < 10) {
                    hist[n] = counts;
                    window[n++] = snap;
                } else {
                    System.arraycopy(window, 1, window, 0, 9);
                    System.arraycopy(hist, 1, hist, 0, 9);
                    window[9] = snap;
                    hist[9] = counts;
                }
                if (n == 10) {
                    long[] b = window[0];
                    long[] e = window[9];
                    long tps = (long) ((e[1] - b[1]) / (double) (e[0] - b[0]) * 1000L);
                    double avg = (e[2] - b[2]) / (double) (e[1] - b[1]);
                    System.out.printf("Current Time: %d | Send TPS: %d | Max RT(ms): %d | Average RT(ms): %7.3f | "
                        + "Send Failed: %d | Response Failed: %d | P99 RT(ms): %.1f%n", e[0], tps, maxRt.get(), avg,
                        e[3], 0, p99(hist[0], hist[9]));
                }
            }
        }, "reporter");
        reporter.setDaemon(true);
        reporter.start();

        while (true) {
            permits.acquire();
            final long begin = System.currentTimeMillis();
            final long beginNs = System.nanoTime();
            try {
                producer.send(new Message(topic, body), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult sendResult) {
                        long rt = System.currentTimeMillis() - begin;
                        rtBuckets.incrementAndGet((int) Math.min((System.nanoTime() - beginNs) / 100_000L, BUCKETS - 1));
                        ok.increment();
                        rtTotal.add(rt);
                        maxRt.accumulateAndGet(rt, Math::max);
                        permits.release();
                    }

                    @Override
                    public void onException(Throwable e) {
                        failed.increment();
                        permits.release();
                    }
                });
            } catch (Exception e) {
                failed.increment();
                permits.release();
                Thread.sleep(100);
            }
        }
    }
}

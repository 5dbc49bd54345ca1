import java.util.Arrays;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
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
 * Producer, over the same 10-second sliding window, so broker_bench.py parses both alike.
 *
 * Args: namesrv topic messageSize inFlight
 */
public final class AsyncProducer {
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

        DefaultMQProducer producer = new DefaultMQProducer("benchmark_async_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(Long.toString(System.currentTimeMillis()));
        producer.start();
        System.out.printf("topic: %s, messageSize: %d, inFlight: %d%n", topic, size, inFlight);

        Thread reporter = new Thread(() -> {
            long[][] window = new long[10][];
            int n = 0;
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long[] snap = {System.currentTimeMillis(), ok.sum(), rtTotal.sum(), failed.sum()};
                if (n < 10) {
                    window[n++] = snap;
                } else {
                    System.arraycopy(window, 1, window, 0, 9);
                    window[9] = snap;
                }
                if (n == 10) {
                    long[] b = window[0];
                    long[] e = window[9];
                    long tps = (long) ((e[1] - b[1]) / (double) (e[0] - b[0]) * 1000L);
                    double avg = (e[2] - b[2]) / (double) (e[1] - b[1]);
                    System.out.printf("Current Time: %d | Send TPS: %d | Max RT(ms): %d | Average RT(ms): %7.3f | "
                        + "Send Failed: %d | Response Failed: %d%n", e[0], tps, maxRt.get(), avg, e[3], 0);
                }
            }
        }, "reporter");
        reporter.setDaemon(true);
        reporter.start();

        while (true) {
            permits.acquire();
            final long begin = System.currentTimeMillis();
            try {
                producer.send(new Message(topic, body), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult sendResult) {
                        long rt = System.currentTimeMillis() - begin;
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

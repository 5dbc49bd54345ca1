import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * Sync send load with latency percentiles, for tools/bench/ha_bench.py, on the official 5.5.0
 * client. `threads` threads each send one message at a time for `warmupSec` + `measureSec`
 * seconds; only sends that start inside the measured window count. A send whose status is not
 * SEND_OK (FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) or that throws counts as failed.
 *
 * Prints one line: "HA_RESULT tps=.. p50_ms=.. p99_ms=.. max_ms=.. avg_ms=.. ok=.. not_ok=.. errors=.."
 *
 * Args: namesrv topic messageSize threads warmupSec measureSec
 */
public final class LatencyProducer {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int size = Integer.parseInt(args[2]);
        int threads = Integer.parseInt(args[3]);
        long warmupNs = Long.parseLong(args[4]) * 1_000_000_000L;
        long measureNs = Long.parseLong(args[5]) * 1_000_000_000L;
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'h');

        DefaultMQProducer producer = new DefaultMQProducer("ha_bench_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(Long.toString(System.nanoTime()));
        producer.setSendMsgTimeout(10_000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();

        long start = System.nanoTime();
        long from = start + warmupNs;
        long until = from + measureNs;
        LongAdder notOk = new LongAdder();
        LongAdder errors = new LongAdder();
        List<long[]> perThread = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long[][] holder = {new long[1 << 16]};
            int[] count = {0};
            perThread.add(null);
            final int idx = t;
            Thread w = new Thread(() -> {
                while (true) {
                    long begin = System.nanoTime();
                    if (begin >= until) {
                        break;
                    }
                    boolean ok = false;
                    try {
                        SendResult r = producer.send(new Message(topic, body));
                        ok = r.getSendStatus() == SendStatus.SEND_OK;
                        if (!ok && begin >= from) {
                            notOk.increment();
                        }
                    } catch (Exception e) {
                        if (begin >= from) {
                            errors.increment();
                        }
                    }
                    long rt = System.nanoTime() - begin;
                    if (ok && begin >= from) {
                        if (count[0] == holder[0].length) {
                            holder[0] = Arrays.copyOf(holder[0], count[0] * 2);
                        }
                        holder[0][count[0]++] = rt;
                    }
                }
                synchronized (perThread) {
                    perThread.set(idx, Arrays.copyOf(holder[0], count[0]));
                }
            }, "sender-" + t);
            workers.add(w);
            w.start();
        }
        for (Thread w : workers) {
            w.join();
        }
        producer.shutdown();

        int n = 0;
        for (long[] a : perThread) {
            n += a.length;
        }
        long[] all = new long[n];
        int pos = 0;
        long sum = 0;
        for (long[] a : perThread) {
            System.arraycopy(a, 0, all, pos, a.length);
            pos += a.length;
            for (long v : a) {
                sum += v;
            }
        }
        Arrays.sort(all);
        double secs = measureNs / 1e9;
        System.out.printf("HA_RESULT tps=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f avg_ms=%.3f ok=%d not_ok=%d errors=%d%n",
            n / secs, pct(all, 0.50), pct(all, 0.99), n == 0 ? 0.0 : all[n - 1] / 1e6, n == 0 ? 0.0 : sum / 1e6 / n,
            n, notOk.sum(), errors.sum());
    }

    private static double pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0.0;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(i, sorted.length - 1))] / 1e6;
    }
}

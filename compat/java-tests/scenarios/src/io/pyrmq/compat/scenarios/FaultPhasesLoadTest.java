package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * The official client under a load that lasts until the Python test says stop, while the test
 * injects one fault after another into the broker group (SIGSTOP, a follower far behind, two of
 * three down).
 *
 * <p>Unlike FailoverLoadTest the load has no fixed length: the producer threads send sync, one
 * unique body after another, until the file `stop` appears in `out` (or `maxLoadMs` passed, a
 * safety net). A body is its key "t&lt;thread&gt;-&lt;seq&gt;", a space and filler up to `bodyBytes`,
 * so the test can write megabytes in a few seconds; only the key is recorded. A push consumer
 * (first offset) runs meanwhile and drains afterwards until it has seen every acknowledged key or
 * `drainMs` passed.
 *
 * <p>Files in `out`, the same columns as FailoverLoadTest's: progress ("&lt;SEND_OK count&gt;
 * &lt;ms of the last SEND_OK&gt; &lt;failed count&gt;", every 100 ms), acked.tsv (key, offsetMsgId,
 * send start ms, send end ms), failed.tsv (key, start ms, end ms, reason), consumed.tsv (key,
 * offsetMsgId, ms), done (last).
 *
 * <p>Properties: namesrv, topic, group, threads (2), bodyBytes (8192), maxLoadMs (120000),
 * drainMs (60000), out (dir), pollMs (1000), sendTimeoutMs (5000), goWaitMs (0: how long the
 * senders wait for the file `go` in `out`, so that the JVM can start before the topic exists).
 */
public class FaultPhasesLoadTest {

    @Test
    public void load() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.str("topic", "FaultPhasesT");
        String group = Props.str("group", "fault_phases_" + Clients.RUN);
        int threads = Props.integer("threads", 2);
        int bodyBytes = Props.integer("bodyBytes", 8192);
        long maxLoadMs = Props.integer("maxLoadMs", 120_000);
        long drainMs = Props.integer("drainMs", 60_000);
        int pollMs = Props.integer("pollMs", 1000);
        int sendTimeoutMs = Props.integer("sendTimeoutMs", 5000);
        Path out = Paths.get(Props.str("out", "."));
        Files.createDirectories(out);
        Path stop = out.resolve("stop");

        Set<String> seen = ConcurrentHashMap.newKeySet();
        ConcurrentLinkedQueue<String> consumed = new ConcurrentLinkedQueue<>();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(namesrv, group, "faults-c-" + Clients.RUN);
        consumer.setPollNameServerInterval(pollMs);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                String key = keyOf(m.getBody());
                String offsetId = m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId();
                consumed.add(key + "\t" + offsetId + "\t" + now);
                seen.add(key);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("fault_phases_p_" + Clients.RUN);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("faults-p-" + Clients.RUN);
        producer.setSendMsgTimeout(sendTimeoutMs);
        producer.setPollNameServerInterval(pollMs);
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE); // the filler stays the size it is
        producer.start();

        // the JVM starts while the test starts the brokers; the sends wait for its `go` file
        Path go = out.resolve("go");
        long goUntil = System.currentTimeMillis() + Props.integer("goWaitMs", 0);
        while (!Files.exists(go) && System.currentTimeMillis() < goUntil) {
            Thread.sleep(20);
        }

        ConcurrentLinkedQueue<String> acked = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<String> failed = new ConcurrentLinkedQueue<>();
        AtomicInteger ackCount = new AtomicInteger();
        AtomicInteger failCount = new AtomicInteger();
        AtomicLong lastAck = new AtomicLong();
        long until = System.currentTimeMillis() + maxLoadMs;
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int thread = t;
            Thread s = new Thread(() -> {
                for (int seq = 0; System.currentTimeMillis() < until && !Files.exists(stop); seq++) {
                    String key = "t" + thread + "-" + seq;
                    long start = System.currentTimeMillis();
                    String reason;
                    try {
                        SendResult r = producer.send(new Message(topic, body(key, bodyBytes)));
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            long end = System.currentTimeMillis();
                            acked.add(key + "\t" + r.getOffsetMsgId() + "\t" + start + "\t" + end);
                            lastAck.accumulateAndGet(end, Math::max);
                            ackCount.incrementAndGet();
                            continue;
                        }
                        reason = r.getSendStatus().name();
                    } catch (Exception e) {
                        reason = e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).split("\n")[0];
                    }
                    failCount.incrementAndGet();
                    failed.add(key + "\t" + start + "\t" + System.currentTimeMillis() + "\t" + reason.replace('\t', ' '));
                }
            }, "faults-sender-" + t);
            s.start();
            senders.add(s);
        }
        Path progress = out.resolve("progress");
        while (senders.stream().anyMatch(Thread::isAlive)) {
            write(progress, ackCount.get() + " " + lastAck.get() + " " + failCount.get());
            Thread.sleep(100);
        }
        write(progress, ackCount.get() + " " + lastAck.get() + " " + failCount.get());
        producer.shutdown();

        List<String> keys = new ArrayList<>();
        for (String a : acked) {
            keys.add(a.substring(0, a.indexOf('\t')));
        }
        long drainUntil = System.currentTimeMillis() + drainMs;
        while (System.currentTimeMillis() < drainUntil && !seen.containsAll(keys)) {
            Thread.sleep(200);
        }
        Thread.sleep(1000); // late redeliveries count as duplicates
        consumer.shutdown();

        Files.write(out.resolve("acked.tsv"), new ArrayList<>(acked), StandardCharsets.UTF_8);
        Files.write(out.resolve("failed.tsv"), new ArrayList<>(failed), StandardCharsets.UTF_8);
        Files.write(out.resolve("consumed.tsv"), new ArrayList<>(consumed), StandardCharsets.UTF_8);
        write(out.resolve("done"), "ok");
        System.out.printf("fault-phases: %d acked, %d failed, %d consumed%n", acked.size(), failed.size(), consumed.size());
        assertTrue(!acked.isEmpty(), "no send was acknowledged");
    }

    /** The key, a space, then filler: `size` bytes in all (at least the key and the space). */
    private static byte[] body(String key, int size) {
        byte[] k = (key + " ").getBytes(StandardCharsets.US_ASCII);
        byte[] b = Arrays.copyOf(k, Math.max(size, k.length));
        Arrays.fill(b, k.length, b.length, (byte) 'x');
        return b;
    }

    private static String keyOf(byte[] body) {
        String s = new String(body, StandardCharsets.US_ASCII);
        int space = s.indexOf(' ');
        return space < 0 ? s : s.substring(0, space);
    }

    private static void write(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(tmp, text.getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}

package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
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
 * The official client under load while the Python test kills the master of a broker group.
 *
 * <p>`threads` producer threads send sync, one unique body after another ("t&lt;thread&gt;-&lt;seq&gt;"),
 * for `loadMs`; a push consumer (first offset) consumes the topic meanwhile. A failed send
 * (exception or a status other than SEND_OK) is recorded and the thread goes on with the next
 * body. After the load the consumer runs until it has seen every acknowledged body or `drainMs`
 * passed. The Python test reads the files and measures; this case only fails when nothing was
 * acknowledged at all.
 *
 * <p>Files in `out`: progress (number of SEND_OKs so far, rewritten every 100 ms; the test waits
 * on it before the kill), acked.tsv (body, offsetMsgId, send start ms, send end ms), failed.tsv
 * (body, start ms, end ms, reason), consumed.tsv (body, offsetMsgId, ms), done (written last).
 *
 * <p>Properties: namesrv, topic, group, threads (4), loadMs (12000), drainMs (60000), out (dir),
 * pollMs (1000: the clients' pollNameServerInterval, how soon they see the new master's route).
 */
public class FailoverLoadTest {

    private static final class Ack {
        final String body;
        final String offsetMsgId;
        final long start;
        final long end;

        Ack(String body, String offsetMsgId, long start, long end) {
            this.body = body;
            this.offsetMsgId = offsetMsgId;
            this.start = start;
            this.end = end;
        }
    }

    @Test
    public void load() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.str("topic", "FailoverLoadT");
        String group = Props.str("group", "failover_load_" + Clients.RUN);
        int threads = Props.integer("threads", 4);
        long loadMs = Props.integer("loadMs", 12_000);
        long drainMs = Props.integer("drainMs", 60_000);
        int pollMs = Props.integer("pollMs", 1000);
        Path out = Paths.get(Props.str("out", "."));
        Files.createDirectories(out);

        Set<String> seen = ConcurrentHashMap.newKeySet();
        ConcurrentLinkedQueue<String> consumed = new ConcurrentLinkedQueue<>();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(namesrv, group, "failover-c-" + Clients.RUN);
        consumer.setPollNameServerInterval(pollMs);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                String offsetId = m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId();
                consumed.add(body + "\t" + offsetId + "\t" + now);
                seen.add(body);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("failover_load_p_" + Clients.RUN);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("failover-p-" + Clients.RUN);
        producer.setSendMsgTimeout(5_000);
        producer.setPollNameServerInterval(pollMs);
        producer.start();

        ConcurrentLinkedQueue<Ack> acked = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<String> failed = new ConcurrentLinkedQueue<>();
        AtomicInteger ackCount = new AtomicInteger();
        long until = System.currentTimeMillis() + loadMs;
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int thread = t;
            Thread s = new Thread(() -> {
                for (int seq = 0; System.currentTimeMillis() < until; seq++) {
                    String body = "t" + thread + "-" + seq;
                    long start = System.currentTimeMillis();
                    String reason;
                    try {
                        SendResult r = producer.send(new Message(topic, body.getBytes(StandardCharsets.UTF_8)));
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            acked.add(new Ack(body, r.getOffsetMsgId(), start, System.currentTimeMillis()));
                            ackCount.incrementAndGet();
                            continue;
                        }
                        reason = r.getSendStatus().name();
                    } catch (Exception e) {
                        reason = e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).split("\n")[0];
                    }
                    failed.add(body + "\t" + start + "\t" + System.currentTimeMillis() + "\t" + reason.replace('\t', ' '));
                }
            }, "failover-sender-" + t);
            s.start();
            senders.add(s);
        }
        Path progress = out.resolve("progress");
        while (senders.stream().anyMatch(Thread::isAlive)) {
            write(progress, Integer.toString(ackCount.get()));
            Thread.sleep(100);
        }
        write(progress, Integer.toString(ackCount.get()));
        producer.shutdown();

        long drainUntil = System.currentTimeMillis() + drainMs;
        while (System.currentTimeMillis() < drainUntil && !acked.stream().allMatch(a -> seen.contains(a.body))) {
            Thread.sleep(200);
        }
        Thread.sleep(1000); // late redeliveries count as duplicates
        consumer.shutdown();

        List<String> ackLines = new ArrayList<>();
        for (Ack a : acked) {
            ackLines.add(a.body + "\t" + a.offsetMsgId + "\t" + a.start + "\t" + a.end);
        }
        Files.write(out.resolve("acked.tsv"), ackLines, StandardCharsets.UTF_8);
        Files.write(out.resolve("failed.tsv"), new ArrayList<>(failed), StandardCharsets.UTF_8);
        Files.write(out.resolve("consumed.tsv"), new ArrayList<>(consumed), StandardCharsets.UTF_8);
        write(out.resolve("done"), "ok");
        System.out.printf("failover-load: %d acked, %d failed, %d consumed%n", acked.size(), failed.size(), consumed.size());
        assertTrue(!acked.isEmpty(), "no send was acknowledged");
    }

    private static void write(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(tmp, text.getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}

package io.pyrmq.compat.scenarios;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.Permission;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs many official mqadmin commands in ONE JVM (a JVM per command costs ~4 s on the CI box).
 *
 * <p>Usage: {@code MqadminBatch <script> <outDir>}. Every script line is either a command line
 * (arguments separated by TABs, exactly what {@code mqadmin} would get) or a directive:
 * {@code @sleep ms}, {@code @push-consumer group topic} (a push consumer that stays up and
 * consumes everything), {@code @wait-consumed group n timeoutMs}, {@code @wait-committed group topic
 * n timeoutMs} (until the broker's consume stats show the group's committed offsets on the topic
 * summing to n: a client persists offsets only from 10 s after its start, so a fixed sleep races),
 * {@code @timed ms cmd args...} (a command that never returns by itself, e.g. clusterRT, run in a thread
 * and interrupted after ms), {@code @trace-producer group topic traceTopic key} (one message sent with
 * message trace on into traceTopic; prints the message id), {@code @producer group topic}
 * (a producer that stays registered, one message sent to queue 0), {@code @dlq-consumer group topic}
 * (a push consumer that fails every message with maxReconsumeTimes 0, so each goes straight to the
 * group's DLQ; counted like push-consumer), {@code @shutdown name}. Line {@code i}
 * (0-based) writes {@code outDir/i.out}, {@code i.err} and {@code i.exit}: stdout and stderr
 * captured while the command ran, and the exit status (0, or the code a {@code System.exit}
 * inside the tool asked for; the exit is stopped so the next line still runs). Requires
 * {@code -Djava.security.manager=allow} on JDK 17+ to stop exits.
 */
public final class MqadminBatch {
    static final class ExitTrap extends SecurityException {
        final int status;

        ExitTrap(int status) {
            super("System.exit(" + status + ")");
            this.status = status;
        }
    }

    static final Map<String, AutoCloseable> CLIENTS = new HashMap<>();
    static final Map<String, AtomicInteger> CONSUMED = new HashMap<>();

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: MqadminBatch <script> <outDir>");
            System.exit(2);
        }
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        Path out = Paths.get(args[1]);
        Files.createDirectories(out);
        String namesrv = System.getProperty("namesrv");
        installExitTrap();
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            ByteArrayOutputStream so = new ByteArrayOutputStream();
            ByteArrayOutputStream se = new ByteArrayOutputStream();
            int status = 0;
            long t0 = System.currentTimeMillis();
            System.setOut(new PrintStream(so, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(se, true, StandardCharsets.UTF_8));
            try {
                if (line.startsWith("@")) {
                    directive(line.substring(1).trim().split("\\s+"), namesrv);
                } else if (!line.isBlank()) {
                    freshCommands();
                    MQAdminStartup.main(line.split("\t"));
                }
            } catch (ExitTrap e) {
                status = e.status;
            } catch (Throwable t) {
                t.printStackTrace();
                status = 99;
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            Files.write(out.resolve(i + ".out"), so.toByteArray());
            Files.write(out.resolve(i + ".err"), se.toByteArray());
            Files.write(out.resolve(i + ".exit"), Integer.toString(status).getBytes(StandardCharsets.UTF_8));
            realOut.printf("[%d] %s -> %d (%d ms)%n", i, line.replace('\t', ' '), status,
                System.currentTimeMillis() - t0);
        }
        for (AutoCloseable c : CLIENTS.values()) {
            try {
                c.close();
            } catch (Exception ignored) {
            }
        }
        realOut.println("DONE");
        realOut.flush();
        removeExitTrap();
        Runtime.getRuntime().halt(0);
    }

    /** Commands keep clients in fields (sendMessage's producer): every line gets new command objects. */
    static void freshCommands() throws Exception {
        for (java.lang.reflect.Field f : MQAdminStartup.class.getDeclaredFields()) {
            if (java.lang.reflect.Modifier.isStatic(f.getModifiers()) && List.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                ((List<?>) f.get(null)).clear();
            }
        }
    }

    @SuppressWarnings("removal")
    static void removeExitTrap() {
        System.setSecurityManager(null);
    }

    @SuppressWarnings("removal")
    static void installExitTrap() {
        System.setSecurityManager(new SecurityManager() {
            @Override
            public void checkPermission(Permission perm) {
            }

            @Override
            public void checkPermission(Permission perm, Object context) {
            }

            @Override
            public void checkExit(int status) {
                throw new ExitTrap(status);
            }
        });
    }

    /** A push consumer that stays up, counts what it gets and answers every batch with `status`;
     * RECONSUME_LATER comes with maxReconsumeTimes 0, so each message goes straight to the DLQ. */
    static void pushConsumer(String namesrv, String group, String topic, String expression,
        ConsumeConcurrentlyStatus status)
        throws Exception {
        AtomicInteger n = CONSUMED.computeIfAbsent(group, k -> new AtomicInteger());
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("batch-" + group);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPersistConsumerOffsetInterval(1000);
        if (status != ConsumeConcurrentlyStatus.CONSUME_SUCCESS) {
            c.setMaxReconsumeTimes(0);
        }
        c.subscribe(topic, expression);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            n.addAndGet(msgs.size());
            return status;
        });
        c.start();
        CLIENTS.put(group, c::shutdown);
        System.out.printf("push consumer %s started on %s (%s)%n", group, topic, status);
    }

    static void directive(String[] d, String namesrv) throws Exception {
        switch (d[0]) {
            case "sleep":
                Thread.sleep(Long.parseLong(d[1]));
                break;
            case "push-consumer":
                pushConsumer(namesrv, d[1], d[2], d.length > 3 ? d[3] : "*", ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
                break;
            case "dlq-consumer":
                pushConsumer(namesrv, d[1], d[2], "*", ConsumeConcurrentlyStatus.RECONSUME_LATER);
                break;
            case "wait-consumed": {
                AtomicInteger n = CONSUMED.get(d[1]);
                int want = Integer.parseInt(d[2]);
                long deadline = System.currentTimeMillis() + Long.parseLong(d[3]);
                while (n.get() < want && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                }
                System.out.printf("consumed %d of %d%n", n.get(), want);
                if (n.get() < want) {
                    throw new ExitTrap(3);
                }
                break;
            }
            case "wait-committed": {
                waitCommitted(namesrv, d[1], d[2], Long.parseLong(d[3]), Long.parseLong(d[4]));
                break;
            }
            case "timed": {
                String[] argv = Arrays.copyOfRange(d, 2, d.length);
                Throwable[] failed = new Throwable[1];
                Thread t = new Thread(() -> {
                    try {
                        freshCommands();
                        MQAdminStartup.main(argv);
                    } catch (Throwable e) {
                        failed[0] = e;
                    }
                }, "timed-command");
                t.setDaemon(true);
                t.start();
                t.join(Long.parseLong(d[1]));
                boolean ended = !t.isAlive();
                t.interrupt();
                t.join(10_000);
                System.out.flush();
                System.err.printf("timed: %s after %s ms%n", ended ? "ended" : "interrupted", d[1]);
                if (ended && failed[0] instanceof ExitTrap) {
                    throw (ExitTrap) failed[0];
                }
                break;
            }
            case "trace-producer": {
                DefaultMQProducer p = new DefaultMQProducer(d[1], true, d[3]);
                p.setNamesrvAddr(namesrv);
                p.setInstanceName("batch-" + d[1]);
                p.start();
                CLIENTS.put(d[1], p::shutdown);
                Message m = new Message(d[2], "traced", d[4], "traced body".getBytes(StandardCharsets.UTF_8));
                var r = p.send(m, (mqs, msg, arg) -> mqs.get(0), null);
                System.out.printf("traced %s %s%n", r.getMsgId(), r.getSendStatus());
                break;
            }
            case "producer": {
                DefaultMQProducer p = new DefaultMQProducer(d[1]);
                p.setNamesrvAddr(namesrv);
                p.setInstanceName("batch-" + d[1]);
                p.start();
                CLIENTS.put(d[1], p::shutdown);
                // always queue 0, so both brokers of a comparison hold the same queue contents
                var r = p.send(new Message(d[2], "ptag", "pkey", "from a producer".getBytes(StandardCharsets.UTF_8)),
                    (mqs, msg, arg) -> mqs.get(0), null);
                // The client's own heartbeat runs 1 s after start and then every 30 s; if the first send
                // (which learns the broker address) took longer, the broker would not know the group for
                // 30 s. A synchronous heartbeat now (same call the client makes; same instance by client id).
                MQClientManager.getInstance().getOrCreateMQClientInstance(p).sendHeartbeatToAllBrokerWithLock();
                System.out.printf("producer %s sent %s%n", d[1], r.getSendStatus());
                break;
            }
            case "shutdown": {
                AutoCloseable c = CLIENTS.remove(d[1]);
                if (c != null) {
                    c.close();
                }
                System.out.printf("shut down %s%n", d[1]);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown directive " + Arrays.toString(d));
        }
    }

    /** Polls GET_CONSUME_STATS (through the tools' own admin client) until the committed offsets arrive. */
    static void waitCommitted(String namesrv, String group, String topic, long want, long timeoutMs)
        throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("batch-wait-" + System.nanoTime());
        admin.start();
        long deadline = System.currentTimeMillis() + timeoutMs;
        long sum = -1;
        String last = "";
        try {
            while (System.currentTimeMillis() < deadline) {
                try {
                    var stats = admin.examineConsumeStats(group);
                    sum = stats.getOffsetTable().entrySet().stream()
                        .filter(e -> e.getKey().getTopic().equals(topic))
                        .mapToLong(e -> e.getValue().getConsumerOffset()).sum();
                    if (sum == want) {
                        break;
                    }
                } catch (Exception e) {
                    last = e.toString();
                }
                Thread.sleep(300);
            }
        } finally {
            admin.shutdown();
        }
        System.out.printf("committed %d of %d %s%n", sum, want, last);
        if (sum != want) {
            throw new ExitTrap(3);
        }
    }

    private MqadminBatch() {
    }
}

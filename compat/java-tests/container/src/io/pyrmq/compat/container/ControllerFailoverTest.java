package io.pyrmq.compat.container;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * Controller mode in docker/compose.yaml (profile "controller") with the official client 5.5.0:
 * two broker groups, each a master + slave pair elected by the controller, with
 * allAckInSyncStateSet (a send is acknowledged once every member of the sync state set holds it).
 *
 * <p>A push consumer runs throughout. `count` sends spread over both groups; then a load thread
 * sends one message after another (the producer's own queue selection and retries) while
 * `killCmd` SIGKILLs the master of `failoverGroup` (its address is `killedAddr`), so sends to it
 * are in flight when it dies. A probe then sends straight to a queue of `failoverGroup` until one
 * is SEND_OK: the time from the kill to that send is printed. The group's master in the name
 * server's cluster info must be another address by then. `count` more sends, every other one to
 * `failoverGroup`, must all be SEND_OK, and the consumer must receive every acknowledged message
 * (load and probe sends included; a failed send counts as not acknowledged).
 *
 * <p>Properties: namesrv, topic, killCmd, failoverGroup, killedAddr, count (per phase, 150),
 * electTimeoutSec (60), timeoutSec (90).
 */
public class ControllerFailoverTest {

    private static String required(String key) {
        String v = System.getProperty(key);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException("system property '" + key + "' is required");
        }
        return v;
    }

    private static void shell(String cmd) throws Exception {
        Process p = new ProcessBuilder("sh", "-c", cmd).inheritIO().start();
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            fail("command failed: " + cmd);
        }
    }

    private static Map<String, BrokerData> brokers(DefaultMQAdminExt admin) throws Exception {
        ClusterInfo info = admin.examineBrokerClusterInfo();
        return new TreeMap<>(info.getBrokerAddrTable());
    }

    @Test
    public void failover() throws Exception {
        String namesrv = required("namesrv");
        String topic = required("topic");
        String group = required("failoverGroup");
        String killedAddr = required("killedAddr");
        int count = Integer.getInteger("count", 150);
        int electTimeoutSec = Integer.getInteger("electTimeoutSec", 60);
        int timeoutSec = Integer.getInteger("timeoutSec", 90);
        String run = Long.toHexString(System.nanoTime());

        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("ctl-failover-admin-" + run);
        admin.start();
        try {
            Map<String, BrokerData> before = brokers(admin);
            assertEquals(2, before.size(), "broker groups: " + before.keySet());
            for (BrokerData bd : before.values()) {
                assertEquals(2, bd.getBrokerAddrs().size(), "master + slave of " + bd.getBrokerName() + ": "
                    + bd.getBrokerAddrs());
                // on the slave too: it serves the topic as soon as it is elected, without waiting
                // for SlaveSynchronize to copy the master's table
                for (String addr : bd.getBrokerAddrs().values()) {
                    admin.createAndUpdateTopicConfig(addr, new TopicConfig(topic, 4, 4));
                }
            }
            assertEquals(killedAddr, before.get(group).getBrokerAddrs().get(0L), "master of " + group);

            Map<String, MessageExt> received = new ConcurrentHashMap<>();
            Set<String> dups = ConcurrentHashMap.newKeySet();
            DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("ctl_failover_consumer_" + run);
            consumer.setNamesrvAddr(namesrv);
            consumer.setInstanceName("ctl-failover-consumer-" + run);
            consumer.setPollNameServerInterval(1000);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    if (received.put(m.getMsgId(), m) != null) {
                        dups.add(m.getMsgId());
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();

            Map<String, String> sent = new ConcurrentHashMap<>();  // msgId -> body, acknowledged (SEND_OK) only
            DefaultMQProducer producer = new DefaultMQProducer("ctl_failover_producer_" + run);
            producer.setNamesrvAddr(namesrv);
            producer.setInstanceName("ctl-failover-producer-" + run);
            producer.setPollNameServerInterval(1000);
            producer.setSendMsgTimeout(3_000);
            producer.setRetryTimesWhenSendFailed(2);
            producer.setSendLatencyFaultEnable(true);
            producer.start();
            AtomicInteger seq = new AtomicInteger();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicBoolean probeOk = new AtomicBoolean();
            Map<String, Integer> load = new ConcurrentHashMap<>();
            AtomicInteger loadFailed = new AtomicInteger();
            AtomicLong lastGroupOk = new AtomicLong(-1);  // the load's last SEND_OK from `group` before the probe's
            // the load: one send after another through the producer's own queue selection, across
            // the kill, so sends to the master are in flight when it dies
            Thread loader = new Thread(() -> {
                while (!stop.get()) {
                    try {
                        Message m = message(topic, run, seq.getAndIncrement());
                        SendResult r = producer.send(m);
                        if (acknowledged(m, r, sent, load, false) && group.equals(r.getMessageQueue().getBrokerName())
                            && !probeOk.get()) {
                            lastGroupOk.set(System.nanoTime());
                        }
                    } catch (Exception e) {
                        loadFailed.incrementAndGet();
                    }
                }
            }, "load");
            try {
                Map<String, Integer> phase1 = new ConcurrentHashMap<>();
                for (int i = 0; i < count; i++) {
                    Message m = message(topic, run, seq.getAndIncrement());
                    acknowledged(m, producer.send(m), sent, phase1, true);
                }
                System.out.printf("controller-failover: before kill %s%n", new TreeMap<>(phase1));
                assertEquals(before.keySet(), phase1.keySet(), "sends spread over both groups");

                loader.start();
                Thread.sleep(500);
                long killStart = System.nanoTime();
                shell(required("killCmd"));
                long killed = System.nanoTime();
                int failedProbe = 0;
                int probeQueue = 0;
                long firstOk = -1;
                long deadline = killed + TimeUnit.SECONDS.toNanos(electTimeoutSec);
                Map<String, Integer> probe = new ConcurrentHashMap<>();
                while (firstOk < 0 && System.nanoTime() < deadline) {
                    try {
                        MessageQueue mq = new MessageQueue(topic, group, probeQueue++ % 4);
                        Message m = message(topic, run, seq.getAndIncrement());
                        if (acknowledged(m, producer.send(m, mq), sent, probe, false)) {
                            firstOk = System.nanoTime();
                            probeOk.set(true);
                        }
                    } catch (Exception e) {
                        failedProbe++;
                        Thread.sleep(50);
                    }
                }
                assertTrue(firstOk > 0, "no send to " + group + " succeeded within " + electTimeoutSec + " s of the kill");
                long lastOld = lastGroupOk.get();
                assertTrue(lastOld > 0 && lastOld < firstOk, "the load had no SEND_OK from the old master");
                System.out.printf("controller-failover: kill command %d ms; kill command returned -> first SEND_OK "
                        + "on %s %d ms; last SEND_OK from the old master -> first from the new %d ms "
                        + "(%d failed probes; load so far: acknowledged %s, %d failed)%n",
                    TimeUnit.NANOSECONDS.toMillis(killed - killStart), group,
                    TimeUnit.NANOSECONDS.toMillis(firstOk - killed), TimeUnit.NANOSECONDS.toMillis(firstOk - lastOld),
                    failedProbe, new TreeMap<>(load), loadFailed.get());

                Map<String, BrokerData> after = brokers(admin);
                String newMaster = after.get(group).getBrokerAddrs().get(0L);
                assertNotNull(newMaster, group + " has no master in the cluster info: " + after.get(group));
                assertNotEquals(killedAddr, newMaster, "master of " + group);
                System.out.printf("controller-failover: %s master %s -> %s%n", group, killedAddr, newMaster);

                Map<String, Integer> phase3 = new ConcurrentHashMap<>();
                for (int i = 0; i < count; i++) {
                    Message m = message(topic, run, seq.getAndIncrement());
                    SendResult r = i % 2 == 0
                        ? producer.send(m)
                        : producer.send(m, new MessageQueue(topic, group, i % 4));
                    acknowledged(m, r, sent, phase3, true);
                }
                System.out.printf("controller-failover: after the failover %s%n", new TreeMap<>(phase3));
            } finally {
                stop.set(true);
                loader.join(10_000);
                producer.shutdown();
            }
            System.out.printf("controller-failover: load acknowledged %s, %d failed%n", new TreeMap<>(load),
                loadFailed.get());

            List<String> missing = Delivery.awaitAcknowledged(consumer, sent, received, timeoutSec);
            System.out.printf("controller-failover: acknowledged %d, received %d of them (%d redelivered)%n",
                sent.size(), sent.size() - missing.size(), dups.size());
            assertTrue(missing.isEmpty(), missing.size() + " acknowledged message(s) lost, first: "
                + missing.subList(0, Math.min(10, missing.size())));
        } finally {
            admin.shutdown();
        }
    }

    private static Message message(String topic, String run, int i) {
        String body = "controller failover " + i + " run " + run;
        return new Message(topic, "TagA", "k" + i, body.getBytes(StandardCharsets.UTF_8));
    }

    /** Records a SEND_OK; anything else fails when `strict`, else only is not counted. */
    private static boolean acknowledged(Message m, SendResult r, Map<String, String> sent,
        Map<String, Integer> perBroker, boolean strict) {
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            if (strict) {
                fail("send returned " + r);
            }
            return false;
        }
        sent.put(r.getMsgId(), new String(m.getBody(), StandardCharsets.UTF_8));
        perBroker.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
        return true;
    }
}

package io.pyrmq.compat.container;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * Two-broker cluster (docker/compose.yaml) with the official client 5.5.0:
 * the topic is created on both brokers; sync sends spread over both; after `killCmd` (docker kill
 * of broker-b, SIGKILL) every send still succeeds within the producer's retries (on broker-a);
 * after `startCmd` (broker-b back on its store) a new consumer group receives every acknowledged
 * message once, including those broker-b stored before it was killed (SYNC_FLUSH).
 *
 * <p>Properties: namesrv, topic, killCmd, startCmd (shell commands), count (300), timeoutSec (90).
 */
public class ClusterFailoverTest {

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

    @Test
    public void failover() throws Exception {
        String namesrv = required("namesrv");
        String topic = required("topic");
        int count = Integer.getInteger("count", 300);
        int timeoutSec = Integer.getInteger("timeoutSec", 90);
        String run = Long.toHexString(System.nanoTime());

        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("failover-admin-" + run);
        admin.start();
        List<String> brokerNames = new ArrayList<>();
        try {
            ClusterInfo info = admin.examineBrokerClusterInfo();
            for (BrokerData bd : info.getBrokerAddrTable().values()) {
                TopicConfig tc = new TopicConfig(topic, 4, 4);
                admin.createAndUpdateTopicConfig(bd.getBrokerAddrs().get(0L), tc);
                brokerNames.add(bd.getBrokerName());
            }
        } finally {
            admin.shutdown();
        }
        assertEquals(2, brokerNames.size(), "brokers in the cluster: " + brokerNames);

        Map<String, String> sent = new TreeMap<>();  // msgId -> body
        Map<String, Integer> perBroker = new TreeMap<>();
        DefaultMQProducer producer = new DefaultMQProducer("failover_producer_" + run);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("failover-producer-" + run);
        producer.setSendMsgTimeout(3_000);
        producer.setRetryTimesWhenSendFailed(2);
        producer.setSendLatencyFaultEnable(true);
        producer.start();
        int third = count / 3;
        try {
            sendSome(producer, topic, run, 0, third, sent, perBroker);
            System.out.printf("failover: before kill %s%n", perBroker);
            for (String b : brokerNames) {
                assertTrue(perBroker.getOrDefault(b, 0) > 0, "sends spread over both brokers: " + perBroker);
            }
            shell(required("killCmd"));
            Map<String, Integer> afterKill = new TreeMap<>();
            sendSome(producer, topic, run, third, 2 * third, sent, afterKill);
            System.out.printf("failover: while one broker is down %s%n", afterKill);
            assertEquals(1, afterKill.size(), "all sends on the surviving broker: " + afterKill);
            shell(required("startCmd"));
            Map<String, Integer> afterStart = new TreeMap<>();
            sendSome(producer, topic, run, 2 * third, count, sent, afterStart);
            System.out.printf("failover: after restart %s%n", afterStart);
        } finally {
            producer.shutdown();
        }
        assertEquals(count, sent.size(), "acknowledged sends");

        Map<String, MessageExt> received = new ConcurrentHashMap<>();
        Set<String> dups = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("failover_consumer_" + run);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("failover-consumer-" + run);
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
        List<String> missing = Delivery.awaitAcknowledged(consumer, sent, received, timeoutSec);
        System.out.printf("failover: received %d of %d (%d redelivered)%n", received.size(), count, dups.size());
        assertTrue(missing.isEmpty(), missing.size() + " acknowledged message(s) lost, first: "
            + missing.subList(0, Math.min(10, missing.size())));
    }

    private static void sendSome(DefaultMQProducer producer, String topic, String run, int from, int to,
        Map<String, String> sent, Map<String, Integer> perBroker) throws Exception {
        for (int i = from; i < to; i++) {
            String body = "failover " + i + " run " + run;
            SendResult r = producer.send(new Message(topic, "TagA", "k" + i, body.getBytes(StandardCharsets.UTF_8)));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                fail("send " + i + " returned " + r);
            }
            sent.put(r.getMsgId(), body);
            perBroker.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
        }
    }
}

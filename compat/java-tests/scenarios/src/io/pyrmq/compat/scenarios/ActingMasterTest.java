package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Slave acting master seen by the official client, in two steps the Python test drives:
 * {@code produce} sends `count` messages (sync, to every group of the topic) and writes
 * "msgId brokerName" lines to the file `ids`; the test then SIGKILLs the master of one group;
 * {@code consume} starts a push consumer (first offset) whose listener answers RECONSUME_LATER
 * once for every message sent to that group ({@code retryBroker}), then CONSUME_SUCCESS. Every
 * message must be consumed, the retried ones a second time with reconsumeTimes 1, within
 * `timeoutSec`. The retries come back from another group ({@code retryFrom} must be the only
 * broker name they are read from): the acting slave refuses the send-back, and the client sends
 * the message to %RETRY% itself, whose only writable queues are the other group's.
 *
 * <p>Properties: namesrv, topic, ids (file), count, timeoutSec, group, retryBroker, retryFrom.
 */
public class ActingMasterTest {

    @Test
    public void produce() throws Exception {
        String topic = Props.str("topic", "ActingT");
        int count = Props.integer("count", 40);
        DefaultMQProducer producer = new DefaultMQProducer("acting_producer");
        producer.setNamesrvAddr(Props.namesrv());
        producer.setInstanceName("acting-producer-" + System.nanoTime());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        List<String> sent = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, "TagA", ("acting " + i).getBytes(StandardCharsets.UTF_8));
                SendResult r = producer.send(msg);
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    fail("send " + i + " returned " + r);
                }
                sent.add(r.getMsgId() + " " + r.getMessageQueue().getBrokerName());
            }
        } finally {
            producer.shutdown();
        }
        Files.write(Paths.get(Props.str("ids", "ids.txt")), sent, StandardCharsets.UTF_8);
        System.out.printf("acting: sent %d messages to %s%n", sent.size(), topic);
    }

    @Test
    public void consume() throws Exception {
        String topic = Props.str("topic", "ActingT");
        String retryBroker = Props.str("retryBroker", "ga");
        String retryFrom = Props.str("retryFrom", "gb");
        int timeoutSec = Props.integer("timeoutSec", 120);
        Map<String, String> want = new TreeMap<>();
        for (String line : Files.readAllLines(Paths.get(Props.str("ids", "ids.txt")))) {
            String[] parts = line.trim().split(" ");
            want.put(parts[0], parts[1]);
        }
        Set<String> toRetry = new TreeSet<>();
        want.forEach((id, broker) -> {
            if (broker.equals(retryBroker)) {
                toRetry.add(id);
            }
        });
        assertTrue(!toRetry.isEmpty(), "no message went to " + retryBroker);
        Set<String> done = ConcurrentHashMap.newKeySet();
        Set<String> retried = ConcurrentHashMap.newKeySet();
        Set<String> retriedFrom = ConcurrentHashMap.newKeySet();
        Set<String> strangers = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(Props.str("group", "acting_consumer"));
        consumer.setNamesrvAddr(Props.namesrv());
        consumer.setInstanceName("acting-consumer-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            MessageExt m = msgs.get(0);
            String id = m.getMsgId();
            if (!want.containsKey(id)) {
                strangers.add(id);
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
            if (toRetry.contains(id) && m.getReconsumeTimes() == 0) {
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            if (m.getReconsumeTimes() > 0) {
                retried.add(id);
                retriedFrom.add(String.valueOf(m.getBrokerName()));
            }
            done.add(id);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long begin = System.nanoTime();
        try {
            long deadline = begin + TimeUnit.SECONDS.toNanos(timeoutSec);
            while ((done.size() < want.size() || !retried.containsAll(toRetry)) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
        } finally {
            consumer.shutdown();
        }
        System.out.printf("acting: consumed %d of %d, %d retried (from %s), %d unknown, %.1f s%n", done.size(),
            want.size(), retried.size(), retriedFrom, strangers.size(), (System.nanoTime() - begin) / 1e9);
        assertEquals(new TreeSet<>(want.keySet()), new TreeSet<>(done), "msgIds consumed");
        assertEquals(toRetry, new TreeSet<>(retried), "msgIds consumed again after RECONSUME_LATER");
        assertEquals(Set.of(retryFrom), retriedFrom, "broker names the retries were read from");
        assertTrue(strangers.isEmpty(), "unexpected messages " + strangers);
    }
}

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
import java.util.Set;
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
 * A master/slave broker group seen by the official client, in two steps the Python test drives:
 * {@code produce} sends `count` messages (sync) and writes their msgIds to the file `ids`; the test
 * then kills the master; {@code consume} starts a push consumer (first offset) that must receive
 * exactly those msgIds, now served by the slave, within `timeoutSec`.
 *
 * <p>Properties: namesrv, topic, ids (file), count (200), timeoutSec (120), group.
 */
public class SlaveReadTest {

    @Test
    public void produce() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.str("topic", "SlaveReadT");
        int count = Props.integer("count", 200);
        Path ids = Paths.get(Props.str("ids", "ids.txt"));
        DefaultMQProducer producer = new DefaultMQProducer("slave_read_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("slave-read-producer-" + System.nanoTime());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        List<String> sent = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, "TagA", ("slave read " + i).getBytes(StandardCharsets.UTF_8));
                SendResult r = producer.send(msg);
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    fail("send " + i + " returned " + r);
                }
                sent.add(r.getMsgId());
            }
        } finally {
            producer.shutdown();
        }
        Files.write(ids, sent, StandardCharsets.UTF_8);
        System.out.printf("slave-read: sent %d messages to %s%n", sent.size(), topic);
    }

    @Test
    public void consume() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.str("topic", "SlaveReadT");
        int timeoutSec = Props.integer("timeoutSec", 120);
        Set<String> want = new TreeSet<>(Files.readAllLines(Paths.get(Props.str("ids", "ids.txt"))));
        assertTrue(!want.isEmpty(), "no msgIds to wait for");
        Set<String> got = ConcurrentHashMap.newKeySet();
        Set<String> strangers = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(Props.str("group", "slave_read_consumer"));
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("slave-read-consumer-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                (want.contains(m.getMsgId()) ? got : strangers).add(m.getMsgId());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSec);
            while (got.size() < want.size() && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
        } finally {
            consumer.shutdown();
        }
        System.out.printf("slave-read: received %d of %d (%d unknown)%n", got.size(), want.size(), strangers.size());
        assertEquals(want, new TreeSet<>(got), "msgIds received from the slave");
        assertTrue(strangers.isEmpty(), "unexpected messages " + strangers);
    }
}

package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Send modes other than plain sync send (issue "Broker core", scenario 2): async with
 * callbacks, oneway (checked by consuming), batch, and a batch over the broker's size limit.
 * Every sent message is consumed back by a push consumer and compared by its `idx` property.
 *
 * <p>Properties: namesrv (required), topic, count (200), queues (4), timeoutSec (40).
 */
public class SendModesTest {

    private static String topic(String namesrv, String prefix) throws Exception {
        String topic = Props.topic(prefix);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, Props.integer("queues", 4), 30_000);
        }
        return topic;
    }

    /** Consume `topic` from the first offset until every idx in `want` arrived; returns idx -> message. */
    static Map<String, MessageExt> consumeAll(String namesrv, String topic, Set<String> want, int timeoutSec)
        throws Exception {
        Map<String, MessageExt> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, "compat_c_" + Clients.RUN, "compat-c-" + Clients.RUN);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String idx = m.getUserProperty("idx");
                if (idx != null) {
                    got.putIfAbsent(idx, m);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            Clients.await(timeoutSec * 1000L, () -> got.keySet().containsAll(want));
        } finally {
            c.shutdown();
        }
        Set<String> missing = new TreeSet<>(want);
        missing.removeAll(got.keySet());
        if (!missing.isEmpty()) {
            fail(missing.size() + " of " + want.size() + " messages not consumed within " + timeoutSec
                + " s, e.g. idx " + Clients.first(missing, 10));
        }
        Set<String> extra = new TreeSet<>(got.keySet());
        extra.removeAll(want);
        assertTrue(extra.isEmpty(), "unexpected messages consumed: " + extra);
        return got;
    }

    private static Message msg(String topic, int i) {
        Message m = Clients.message(topic, "Tag" + (i % 3), "k-" + Clients.RUN + "-" + i, "body " + i + " " + Clients.RUN);
        m.putUserProperty("idx", Integer.toString(i));
        return m;
    }

    private static void checkBodies(Map<String, MessageExt> got, String topic) {
        for (var e : got.entrySet()) {
            int i = Integer.parseInt(e.getKey());
            Message want = msg(topic, i);
            MessageExt m = e.getValue();
            assertEquals(new String(want.getBody(), StandardCharsets.UTF_8), new String(m.getBody(), StandardCharsets.UTF_8), "body of " + i);
            assertEquals(want.getTags(), m.getTags(), "tags of " + i);
            assertEquals(want.getKeys(), m.getKeys(), "keys of " + i);
        }
    }

    @Test
    public void asyncSend() throws Exception {
        String namesrv = Props.namesrv();
        int count = Props.integer("count", 200);
        String topic = topic(namesrv, "Async");
        DefaultMQProducer p = Clients.producer(namesrv, "async");
        Map<String, SendResult> results = new ConcurrentHashMap<>();
        List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(count);
        try {
            for (int i = 0; i < count; i++) {
                final String idx = Integer.toString(i);
                p.send(msg(topic, i), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult r) {
                        results.put(idx, r);
                        done.countDown();
                    }

                    @Override
                    public void onException(Throwable e) {
                        errors.add(idx + ": " + e);
                        done.countDown();
                    }
                });
            }
            assertTrue(done.await(30, TimeUnit.SECONDS), "callbacks after 30 s: " + (count - done.getCount()));
        } finally {
            p.shutdown();
        }
        assertTrue(errors.isEmpty(), "async send errors: " + Clients.first(errors, 10));
        Set<String> want = new TreeSet<>();
        for (var e : results.entrySet()) {
            assertEquals(SendStatus.SEND_OK, e.getValue().getSendStatus(), "status of " + e.getKey());
            assertNotNull(e.getValue().getMsgId());
            want.add(e.getKey());
        }
        assertEquals(count, want.size());
        Map<String, MessageExt> got = consumeAll(namesrv, topic, want, Props.integer("timeoutSec", 40));
        checkBodies(got, topic);
        for (var e : got.entrySet()) {
            assertEquals(results.get(e.getKey()).getMsgId(), e.getValue().getMsgId(), "msgId of " + e.getKey());
        }
    }

    @Test
    public void onewaySend() throws Exception {
        String namesrv = Props.namesrv();
        int count = Props.integer("count", 200);
        String topic = topic(namesrv, "Oneway");
        DefaultMQProducer p = Clients.producer(namesrv, "oneway");
        Set<String> want = new TreeSet<>();
        try {
            for (int i = 0; i < count; i++) {
                p.sendOneway(msg(topic, i));
                want.add(Integer.toString(i));
            }
        } finally {
            p.shutdown();
        }
        checkBodies(consumeAll(namesrv, topic, want, Props.integer("timeoutSec", 40)), topic);
    }

    @Test
    public void batchSend() throws Exception {
        String namesrv = Props.namesrv();
        String topic = topic(namesrv, "Batch");
        DefaultMQProducer p = Clients.producer(namesrv, "batch");
        Set<String> want = new TreeSet<>();
        List<String> msgIds = new ArrayList<>();
        try {
            for (int b = 0; b < 5; b++) {
                List<Message> batch = new ArrayList<>();
                for (int j = 0; j < 32; j++) {
                    int i = b * 32 + j;
                    batch.add(msg(topic, i));
                    want.add(Integer.toString(i));
                }
                SendResult r = p.send(batch);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), "batch " + b);
                String[] ids = r.getMsgId().split(",");
                assertEquals(32, ids.length, "one msgId per batch member: " + r.getMsgId());
                msgIds.addAll(List.of(ids));
            }
        } finally {
            p.shutdown();
        }
        Map<String, MessageExt> got = consumeAll(namesrv, topic, want, Props.integer("timeoutSec", 40));
        checkBodies(got, topic);
        for (int i = 0; i < want.size(); i++) {
            assertEquals(msgIds.get(i), got.get(Integer.toString(i)).getMsgId(), "msgId of batch member " + i);
        }
        // A batch goes to one queue, in order: queue offsets of one batch are consecutive.
        for (int b = 0; b < 5; b++) {
            MessageExt head = got.get(Integer.toString(b * 32));
            for (int j = 1; j < 32; j++) {
                MessageExt m = got.get(Integer.toString(b * 32 + j));
                assertEquals(head.getQueueId(), m.getQueueId(), "queue of batch " + b + " member " + j);
                assertEquals(head.getQueueOffset() + j, m.getQueueOffset(), "queue offset of batch " + b + " member " + j);
            }
        }
    }

    private static MQBrokerException brokerCause(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof MQBrokerException) {
                return (MQBrokerException) t;
            }
        }
        throw new AssertionError("no MQBrokerException in the cause chain of " + e, e);
    }

    /**
     * A batch of 5 x 1 MiB (random, so compression cannot shrink it). With the client's own
     * limit (4 MiB) the client refuses it; with the client limit raised the broker must refuse
     * it (SYSTEM_ERROR 1, "message body size exceeded"). A normal send works afterwards.
     */
    @Test
    public void batchOverLimit() throws Exception {
        String namesrv = Props.namesrv();
        String topic = topic(namesrv, "BatchBig");
        Random rnd = new Random(42);
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            byte[] body = new byte[1024 * 1024];
            rnd.nextBytes(body);
            batch.add(new Message(topic, "Big", body));
        }
        DefaultMQProducer p = Clients.producer(namesrv, "batchbig");
        try {
            try {
                p.send(batch);
                fail("client accepted a 5 MiB batch with its 4 MiB limit");
            } catch (MQClientException e) {
                System.out.println("client-side: code=" + e.getResponseCode() + " " + e.getErrorMessage());
                assertEquals(13, e.getResponseCode(), "client-side MESSAGE_ILLEGAL: " + e);
            }
            p.setMaxMessageSize(64 * 1024 * 1024);
            // The Java broker's batch encoder throws ("message body size exceeded"), which the
            // remoting layer answers with SYSTEM_ERROR (1); the client retries that code
            // (retryTimesWhenSendFailed) and then gives up with MQClientException("Send [3]
            // times, still failed ...") caused by the broker's MQBrokerException.
            try {
                SendResult r = p.send(batch);
                fail("broker accepted a 5 MiB batch: " + r);
            } catch (MQClientException e) {
                MQBrokerException be = brokerCause(e);
                System.out.println("broker: " + e.getErrorMessage() + " / code=" + be.getResponseCode() + " " + be.getErrorMessage());
                assertTrue(e.getErrorMessage().contains("still failed"), "client gave up after retries: " + e);
                assertEquals(1, be.getResponseCode(), "broker SYSTEM_ERROR: " + be);
                assertTrue(be.getErrorMessage() != null && be.getErrorMessage().contains("message body size exceeded"),
                    "readable remark: " + be.getErrorMessage());
            }
            p.setMaxMessageSize(4 * 1024 * 1024);
            Clients.sendOk(p, msg(topic, 0));
        } finally {
            p.shutdown();
        }
    }
}

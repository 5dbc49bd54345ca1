package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.RequestTimeoutException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Request-reply (issue 5, "what must be shown" 6).
 *
 * <p>requestReply: a consumer answers every request with MessageUtil.createReplyMessage sent
 * by its own producer (SEND_REPLY_MESSAGE_V2; the broker pushes it to the requester);
 * DefaultMQProducer#request with a 3 s timeout returns that reply, `count` times.
 * <p>requestTimeout: nobody answers; request() throws RequestTimeoutException after about
 * 3 s and the producer still sends normally afterwards.
 */
public class RequestReplyTest {

    @Test
    public void requestReply() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        int count = Props.integer("count", 3);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 2, 30_000);
        }
        DefaultMQProducer replier = SemA.producer(namesrv, "replier");
        DefaultMQPushConsumer c = SemA.consumer(namesrv, "semA_rr_" + SemA.RUN, "rr");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                try {
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    Message reply = MessageUtil.createReplyMessage(m, ("reply:" + body).getBytes(StandardCharsets.UTF_8));
                    replier.send(reply, 3000);
                } catch (Exception e) {
                    System.out.println("reply failed: " + e);
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer requester = SemA.producer(namesrv, "requester");
        try {
            SemA.awaitAssigned(c, topic, 30_000);
            for (int i = 0; i < count; i++) {
                Message req = new Message(topic, "TagQ", ("ping-" + i).getBytes(StandardCharsets.UTF_8));
                long t0 = System.currentTimeMillis();
                Message reply = requester.request(req, 3000);
                long took = System.currentTimeMillis() - t0;
                assertEquals("reply:ping-" + i, new String(reply.getBody(), StandardCharsets.UTF_8));
                System.out.println("request " + i + " answered in " + took + " ms: " + reply);
            }
        } finally {
            SemA.quietly(requester::shutdown);
            SemA.quietly(c::shutdown);
            SemA.quietly(replier::shutdown);
        }
    }

    @Test
    public void requestTimeout() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 2, 30_000);
        }
        DefaultMQProducer requester = SemA.producer(namesrv, "lonely");
        try {
            Message req = new Message(topic, "TagQ", "nobody".getBytes(StandardCharsets.UTF_8));
            long t0 = System.currentTimeMillis();
            try {
                Message reply = requester.request(req, 3000);
                fail("got a reply nobody sent: " + reply);
            } catch (RequestTimeoutException e) {
                long took = System.currentTimeMillis() - t0;
                System.out.println("timed out after " + took + " ms: " + e);
                assertTrue(took >= 2900 && took < 8000, "timeout after " + took + " ms");
            }
            var r = requester.send(new Message(topic, "TagQ", "after".getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, r.getSendStatus());
        } finally {
            SemA.quietly(requester::shutdown);
        }
    }
}

package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.junit.jupiter.api.Test;

/**
 * Bad input (scenario 9): each request gets the Java broker's response code and a readable
 * remark, and the broker keeps serving: a separate, well-behaved producer sends successfully
 * afterwards. Response codes (ResponseCode): MESSAGE_ILLEGAL 13, INVALID_PARAMETER 29.
 *
 * <p>The official client refuses an illegal topic name and an over-size body itself, so the
 * topic case goes to the broker as a raw SEND_MESSAGE over the client's own remoting
 * connection, and the body case raises the client's maxMessageSize.
 *
 * <p>Properties: namesrv (required), topic, queues (4).
 */
public class BadInputTest {
    static final int MESSAGE_ILLEGAL = 13;
    static final int INVALID_PARAMETER = 29;
    static final int SEND_MESSAGE = 10;

    private static String topic(String namesrv) throws Exception {
        String topic = Props.topic("BadInput");
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, Props.integer("queues", 4), 30_000);
        }
        return topic;
    }

    /** Another client entirely: the broker still accepts a normal message. */
    private static void stillServing(String namesrv, String topic) throws Exception {
        DefaultMQProducer p = Clients.producer(namesrv, "good");
        try {
            SendResult r = Clients.sendOk(p, Clients.message(topic, "ok", "ok", "still serving"));
            System.out.println("after bad input: " + r);
        } finally {
            p.shutdown();
        }
    }

    private static void assertRemark(String remark, String... parts) {
        assertTrue(remark != null && !remark.isBlank(), "remark present");
        for (String part : parts) {
            assertTrue(remark.contains(part), "remark '" + remark + "' mentions '" + part + "'");
        }
    }

    @Test
    public void illegalTopicName() throws Exception {
        String namesrv = Props.namesrv();
        String good = topic(namesrv);
        String bad = "bad topic!" + Clients.RUN;
        DefaultMQProducer p = Clients.producer(namesrv, "badtopic");
        try {
            try {
                p.send(Clients.message(bad, "x", "x", "x"));
                fail("the client sent to an illegal topic name");
            } catch (MQClientException e) {
                System.out.println("client-side: " + e.getErrorMessage());
            }
            String brokerAddr;
            try (Admin admin = new Admin(namesrv)) {
                brokerAddr = admin.masters().get(0);
            }
            RemotingCommand req = RemotingCommand.createRequestCommand(SEND_MESSAGE, (CommandCustomHeader) null);
            req.addExtField("producerGroup", "compat_p_badtopic_" + Clients.RUN);
            req.addExtField("topic", bad);
            req.addExtField("defaultTopic", "TBW102");
            req.addExtField("defaultTopicQueueNums", "4");
            req.addExtField("queueId", "0");
            req.addExtField("sysFlag", "0");
            req.addExtField("bornTimestamp", Long.toString(System.currentTimeMillis()));
            req.addExtField("flag", "0");
            req.addExtField("properties", "");
            req.addExtField("reconsumeTimes", "0");
            req.addExtField("unitMode", "false");
            req.addExtField("batch", "false");
            req.setBody("raw send to an illegal topic".getBytes(StandardCharsets.UTF_8));
            RemotingCommand resp = p.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl()
                .getRemotingClient().invokeSync(brokerAddr, req, 10_000);
            System.out.println("broker: code=" + resp.getCode() + " remark=" + resp.getRemark());
            assertEquals(INVALID_PARAMETER, resp.getCode(), "response code for topic '" + bad + "': " + resp.getRemark());
            assertRemark(resp.getRemark(), bad, "illegal characters");
        } finally {
            p.shutdown();
        }
        stillServing(namesrv, good);
    }

    @Test
    public void oversizeBody() throws Exception {
        String namesrv = Props.namesrv();
        String topic = topic(namesrv);
        byte[] body = new byte[5 * 1024 * 1024];
        new Random(7).nextBytes(body); // incompressible, so the client's zlib cannot shrink it
        DefaultMQProducer p = Clients.producer(namesrv, "bigbody");
        try {
            p.setMaxMessageSize(64 * 1024 * 1024);
            try {
                SendResult r = p.send(new Message(topic, "big", body));
                fail("broker accepted a 5 MiB body: " + r);
            } catch (MQBrokerException e) {
                System.out.println("broker: code=" + e.getResponseCode() + " " + e.getErrorMessage());
                assertEquals(MESSAGE_ILLEGAL, e.getResponseCode(), "response code: " + e);
                assertRemark(e.getErrorMessage(), "illegal");
            }
        } finally {
            p.shutdown();
        }
        stillServing(namesrv, topic);
    }

    @Test
    public void oversizeProperties() throws Exception {
        String namesrv = Props.namesrv();
        String topic = topic(namesrv);
        StringBuilder big = new StringBuilder();
        while (big.length() < 40 * 1024) {
            big.append("0123456789abcdef");
        }
        Message m = Clients.message(topic, "props", "props", "properties over 32 KiB");
        m.putUserProperty("big", big.toString());
        DefaultMQProducer p = Clients.producer(namesrv, "bigprops");
        try {
            try {
                SendResult r = p.send(m);
                fail("broker accepted properties over 32 KiB: " + r);
            } catch (MQBrokerException e) {
                System.out.println("broker: code=" + e.getResponseCode() + " " + e.getErrorMessage());
                assertEquals(MESSAGE_ILLEGAL, e.getResponseCode(), "response code: " + e);
                assertRemark(e.getErrorMessage(), "illegal", "properties");
            }
        } finally {
            p.shutdown();
        }
        stillServing(namesrv, topic);
    }

    @Test
    public void pullMissingQueue() throws Exception {
        String namesrv = Props.namesrv();
        String topic = topic(namesrv);
        DefaultMQPullConsumer c = new DefaultMQPullConsumer("compat_badq_" + Clients.RUN);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("compat-badq-" + Clients.RUN);
        c.start();
        try {
            MessageQueue real = c.fetchSubscribeMessageQueues(topic).iterator().next();
            MessageQueue missing = new MessageQueue(topic, real.getBrokerName(), 99);
            try {
                var r = c.pull(missing, "*", 0, 16);
                fail("pull from queue 99 of a 4-queue topic returned " + r);
            } catch (MQBrokerException e) {
                System.out.println("broker: code=" + e.getResponseCode() + " " + e.getErrorMessage());
                assertEquals(INVALID_PARAMETER, e.getResponseCode(), "response code: " + e);
                assertRemark(e.getErrorMessage(), "queueId[99]", "illegal", topic);
            }
        } finally {
            c.shutdown();
        }
        stillServing(namesrv, topic);
    }
}

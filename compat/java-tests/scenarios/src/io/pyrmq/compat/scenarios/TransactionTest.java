package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Transactions (issue 5, item 4): half messages, commit / rollback / UNKNOW, and the broker's
 * check-back. The broker under test runs with transactionCheckInterval=1000 and
 * transactionTimeOut=1000 so a check comes within a few seconds.
 *
 * <p>Properties: namesrv (required), topic, group (restart phases), timeoutSec (40).
 */
public class TransactionTest {

    /** The local transaction outcome and the check answer, by message key. */
    private static LocalTransactionState local(String key) {
        switch (key) {
            case "commit":
                return LocalTransactionState.COMMIT_MESSAGE;
            case "rollback":
                return LocalTransactionState.ROLLBACK_MESSAGE;
            default:
                return LocalTransactionState.UNKNOW;
        }
    }

    private static LocalTransactionState onCheck(String key) {
        switch (key) {
            case "unknown-commit":
            case "restart":
                return LocalTransactionState.COMMIT_MESSAGE;
            case "unknown-rollback":
                return LocalTransactionState.ROLLBACK_MESSAGE;
            default:
                return LocalTransactionState.UNKNOW;
        }
    }

    static final class Listener implements TransactionListener {
        final Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();
        final Map<String, String> checkedTopic = new ConcurrentHashMap<>();
        final boolean answerChecks;

        Listener(boolean answerChecks) {
            this.answerChecks = answerChecks;
        }

        @Override
        public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            return local(msg.getKeys());
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt msg) {
            checks.computeIfAbsent(msg.getKeys(), k -> new AtomicInteger()).incrementAndGet();
            checkedTopic.put(msg.getKeys(), msg.getTopic() + "/" + msg.getTransactionId());
            System.out.println("check: keys=" + msg.getKeys() + " topic=" + msg.getTopic() + " queue="
                + msg.getQueueId() + " props=" + msg.getProperties());
            return answerChecks ? onCheck(msg.getKeys()) : LocalTransactionState.UNKNOW;
        }

        int checks(String key) {
            AtomicInteger n = checks.get(key);
            return n == null ? 0 : n.get();
        }
    }

    static TransactionMQProducer producer(String namesrv, String group, String instance, Listener l)
        throws Exception {
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(instance);
        p.setSendMsgTimeout(10_000);
        // a broker knows a producer only from its heartbeats (every 30 s by default)
        p.setHeartbeatBrokerInterval(1000);
        p.setTransactionListener(l);
        p.start();
        return p;
    }

    static TransactionSendResult sendTx(TransactionMQProducer p, String topic, String key) throws Exception {
        Message m = new Message(topic, "TagTx", key, ("tx " + key).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("k", key);
        TransactionSendResult r = p.sendMessageInTransaction(m, null);
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            fail("half message send returned " + r);
        }
        assertEquals(local(key), r.getLocalTransactionState(), "local state of " + key);
        return r;
    }

    static DefaultMQPushConsumer consumer(String namesrv, String topic, String name, Map<String, MessageExt> got)
        throws Exception {
        DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, "compat_tx_" + name + "_" + Clients.RUN,
            "compat-tx-" + name + "-" + Clients.RUN);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                System.out.println("consumed: keys=" + m.getKeys() + " props=" + m.getProperties());
                got.put(m.getKeys(), m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        return c;
    }

    @Test
    public void commitRollbackUnknown() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Tx");
        String group = "compat_txp_" + Clients.RUN;
        long timeoutMs = Props.integer("timeoutSec", 40) * 1000L;
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
        }
        Listener l = new Listener(true);
        TransactionMQProducer p = producer(namesrv, group, "compat-txp-" + Clients.RUN, l);
        Map<String, MessageExt> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = null;
        try {
            for (String key : new String[] {"commit", "rollback", "unknown-commit", "unknown-rollback"}) {
                sendTx(p, topic, key);
            }
            c = consumer(namesrv, topic, "crc", got);
            Clients.awaitOrFail(timeoutMs, () -> got.containsKey("commit") && got.containsKey("unknown-commit")
                && l.checks("unknown-rollback") > 0, () -> "consumed " + got.keySet() + ", checks " + l.checks);
            Thread.sleep(3000); // a rolled-back message would show up by now
        } finally {
            if (c != null) {
                Clients.quietly(c::shutdown);
            }
            Clients.quietly(p::shutdown);
        }
        assertEquals(new TreeSet<>(Set.of("commit", "unknown-commit")), new TreeSet<>(got.keySet()), "delivered");
        assertEquals(0, l.checks("commit"), "a committed message is never checked");
        assertEquals(0, l.checks("rollback"), "a rolled-back message is never checked");
        assertTrue(l.checks("unknown-commit") >= 1, "UNKNOW is checked back");
        assertTrue(l.checkedTopic.get("unknown-commit").startsWith(topic + "/"), "check names the real topic: "
            + l.checkedTopic);
        for (MessageExt m : got.values()) {
            assertEquals(topic, m.getTopic());
            assertEquals("tx " + m.getKeys(), new String(m.getBody(), StandardCharsets.UTF_8));
            assertEquals("TagTx", m.getTags());
            assertEquals(m.getKeys(), m.getUserProperty("k"));
            // what the Java broker leaves on a committed message (its properties string is the half message's)
            assertEquals("true", m.getProperty("TRAN_MSG"), "TRAN_MSG of " + m.getKeys());
            assertEquals(group, m.getProperty("PGROUP"), "PGROUP of " + m.getKeys());
        }
    }

    /** Phase 1 of "a producer restarted between send and check": send one UNKNOW half message, exit. */
    @Test
    public void restartPhase1() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("TxRestart");
        String group = Props.str("group", "compat_txr_" + Clients.RUN);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
        }
        Listener l = new Listener(false);
        TransactionMQProducer p = producer(namesrv, group, "compat-txr-a-" + Clients.RUN, l);
        try {
            sendTx(p, topic, "restart");
        } finally {
            p.shutdown();
        }
    }

    /** Phase 2: another producer instance of the same group gets the check, commits; the message arrives. */
    @Test
    public void restartPhase2() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("TxRestart");
        String group = Props.str("group", "compat_txr_" + Clients.RUN);
        long timeoutMs = Props.integer("timeoutSec", 40) * 1000L;
        Listener l = new Listener(true);
        TransactionMQProducer p = producer(namesrv, group, "compat-txr-b-" + Clients.RUN, l);
        Map<String, MessageExt> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = null;
        try {
            // like a restarted application: it sends again, so it knows the topic's broker and heartbeats it
            Message plain = new Message(topic, "TagPlain", "plain", "plain".getBytes(StandardCharsets.UTF_8));
            if (p.send(plain).getSendStatus() != SendStatus.SEND_OK) {
                fail("plain send failed");
            }
            c = consumer(namesrv, topic, "restart", got);
            Clients.awaitOrFail(timeoutMs, () -> got.containsKey("restart"),
                () -> "consumed " + got.keySet() + ", checks " + l.checks);
        } finally {
            if (c != null) {
                Clients.quietly(c::shutdown);
            }
            Clients.quietly(p::shutdown);
        }
        assertTrue(l.checks("restart") >= 1, "the new producer of the group was asked");
        assertEquals("tx restart", new String(got.get("restart").getBody(), StandardCharsets.UTF_8));
    }
}

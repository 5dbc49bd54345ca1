package io.pyrmq.compat.scenarios;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.remoting.RPCHook;
import org.junit.jupiter.api.Test;

/**
 * Producers and consumers with the official AclClientRPCHook against a broker with
 * authentication and authorization on. Every outcome is printed as "ACL case outcome" and the
 * Python side compares pyrmq's lines with the Java broker's (tests/compat/test_acl_java.py).
 *
 * Properties: namesrv, topic (app may Pub|Sub), deniedTopic (app may not Pub), group (app may
 * Sub), deniedGroup, appAk/appSk (a normal user), adminAk/adminSk (a super user).
 */
class AclTest {
    private static RPCHook hook(String ak, String sk) {
        return new AclClientRPCHook(new SessionCredentials(ak, sk));
    }

    private static String send(String name, RPCHook hook, String topic) {
        DefaultMQProducer p = new DefaultMQProducer("acl_p_" + name + "_" + Clients.RUN, hook);
        p.setNamesrvAddr(Props.namesrv());
        p.setInstanceName("acl-" + name + "-" + Clients.RUN);
        p.setSendMsgTimeout(8_000);
        p.setRetryTimesWhenSendFailed(0);
        String outcome;
        try {
            p.start();
            SendResult r = p.send(Clients.message(topic, "t", "k-" + name, "acl " + name));
            outcome = r.getSendStatus().toString();
        } catch (Throwable e) {
            outcome = describe(e);
        } finally {
            Clients.quietly(p::shutdown);
        }
        System.out.println("ACL " + name + " " + outcome);
        return outcome;
    }

    /** The broker's code and remark when a MQBrokerException is in the cause chain. */
    private static String describe(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof MQBrokerException) {
                MQBrokerException b = (MQBrokerException) t;
                return b.getResponseCode() + " " + b.getErrorMessage();
            }
        }
        return "ERROR " + e.getClass().getSimpleName();
    }

    private static int consume(String name, RPCHook hook, String group, String topic, long waitMs) throws Exception {
        AtomicInteger got = new AtomicInteger();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook, new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(Props.namesrv());
        c.setInstanceName("acl-c-" + name + "-" + Clients.RUN);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            got.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        try {
            c.start();
            Clients.await(waitMs, () -> got.get() > 0);
        } finally {
            Clients.quietly(c::shutdown);
        }
        System.out.println("ACL " + name + " CONSUMED " + (got.get() > 0 ? "some" : "none"));
        return got.get();
    }

    @Test
    void outcomes() throws Exception {
        String topic = Props.str("topic", null);
        String denied = Props.str("deniedTopic", null);
        String appAk = Props.str("appAk", null);
        String appSk = Props.str("appSk", null);
        RPCHook admin = hook(Props.str("adminAk", null), Props.str("adminSk", null));
        send("admin_creates_topic", admin, topic);
        send("admin_creates_denied_topic", admin, denied);
        send("app_send", hook(appAk, appSk), topic);
        send("app_wrong_secret", hook(appAk, appSk + "x"), topic);
        send("unknown_access_key", hook("nobody_" + appAk, appSk), topic);
        send("app_send_denied_topic", hook(appAk, appSk), denied);
        send("no_credentials", null, topic);
        consume("app_consume", hook(appAk, appSk), Props.str("group", null), topic, 30_000);
        consume("app_consume_denied_group", hook(appAk, appSk), Props.str("deniedGroup", null), topic, 3_000);
        consume("wrong_secret_consume", hook(appAk, appSk + "x"), Props.str("group", null), topic, 3_000);
    }
}

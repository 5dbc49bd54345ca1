package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * SQL92 property filters (issue 5, item 5); the broker runs with enablePropertyFilter=true.
 *
 * <p>Properties: namesrv (required), topic, count (180), timeoutSec (30), sql.
 */
public class Sql92FilterTest {
    static final String SQL = "a BETWEEN 3 AND 5 AND b = 'x'";

    /** A mixed stream: a = i % 9 (missing every 7th, "abc" every 11th), b alternates x / y. */
    @Test
    public void sqlBetween() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Sql92");
        int count = Props.integer("count", 180);
        long timeoutMs = Props.integer("timeoutSec", 30) * 1000L;
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
        }
        Set<Integer> want = new TreeSet<>();
        DefaultMQProducer p = Clients.producer(namesrv, "sql");
        try {
            for (int i = 0; i < count; i++) {
                Message m = Clients.message(topic, "T" + (i % 3), "s-" + i, "sql " + i);
                m.putUserProperty("idx", Integer.toString(i));
                String b = i % 2 == 0 ? "x" : "y";
                m.putUserProperty("b", b);
                String a = null;
                if (i % 11 == 0) {
                    a = "abc";
                } else if (i % 7 != 0) {
                    a = Integer.toString(i % 9);
                }
                if (a != null) {
                    m.putUserProperty("a", a);
                }
                if (a != null && !a.equals("abc") && Integer.parseInt(a) >= 3 && Integer.parseInt(a) <= 5
                    && b.equals("x")) {
                    want.add(i);
                }
                Clients.sendOk(p, m);
            }
        } finally {
            p.shutdown();
        }
        Set<Integer> got = ConcurrentHashMap.newKeySet();
        Set<Integer> all = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer sql = Clients.pushConsumer(namesrv, "compat_sql_" + Clients.RUN,
            "compat-sql-" + Clients.RUN);
        sql.subscribe(topic, MessageSelector.bySql(Props.str("sql", SQL)));
        sql.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.add(Integer.parseInt(m.getUserProperty("idx")));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        DefaultMQPushConsumer every = Clients.pushConsumer(namesrv, "compat_sqlall_" + Clients.RUN,
            "compat-sqlall-" + Clients.RUN);
        every.subscribe(topic, MessageSelector.bySql("TRUE"));
        every.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                all.add(Integer.parseInt(m.getUserProperty("idx")));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        try {
            sql.start();
            every.start();
            Clients.awaitOrFail(timeoutMs, () -> got.containsAll(want) && all.size() >= count,
                () -> "got " + got.size() + "/" + want.size() + ", TRUE got " + all.size() + "/" + count);
            Thread.sleep(1500); // anything the filter wrongly lets through has time to show up
        } finally {
            Clients.quietly(sql::shutdown);
            Clients.quietly(every::shutdown);
        }
        System.out.println("matching " + want.size() + " of " + count + ": " + want);
        assertEquals(want, new TreeSet<>(got), "idx received with " + SQL);
        assertEquals(count, all.size(), "idx received with TRUE");
    }

    /** A selector that does not compile: the consumer's start fails with SUBSCRIPTION_PARSE_FAILED (23). */
    @Test
    public void invalidExpression() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Sql92Bad");
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 2, 30_000);
        }
        DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, "compat_sqlbad_" + Clients.RUN,
            "compat-sqlbad-" + Clients.RUN);
        c.subscribe(topic, MessageSelector.bySql(Props.str("sql", "a BETWEEN 5 AND 3")));
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        try {
            c.start();
            fail("start() accepted an invalid selector");
        } catch (MQClientException e) {
            Throwable t = e;
            MQClientException withCode = null;
            while (t != null) {
                if (t instanceof MQClientException && ((MQClientException) t).getResponseCode() > 0) {
                    withCode = (MQClientException) t;
                    break;
                }
                t = t.getCause();
            }
            System.out.println("start failed: " + e);
            if (withCode == null) {
                fail("no response code in " + e);
            }
            assertEquals(23, withCode.getResponseCode(), "SUBSCRIPTION_PARSE_FAILED; " + withCode.getErrorMessage());
            System.out.println("remark: " + withCode.getErrorMessage());
        } finally {
            Clients.quietly(c::shutdown);
        }
    }
}

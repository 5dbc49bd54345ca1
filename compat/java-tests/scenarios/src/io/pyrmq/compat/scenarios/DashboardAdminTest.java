package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * The admin calls the dashboard 2.0.0 makes, made the way it makes them: a DefaultMQAdminExt with
 * {@code setVipChannelEnabled(true)}, so every broker call that Java wraps in
 * {@code MixAll.brokerVIPChannel} goes to listenPort - 2 (spec admin-and-dashboard §6.3-§6.7).
 * Needs -Dnamesrv. Compiles against both client modules (only methods 4.9.8 also has).
 */
class DashboardAdminTest {
    /** SubscriptionGroupConfig moved package in 5.x: build and send it by reflection. */
    static void createGroup(DefaultMQAdminExt admin, String addr, String group) throws Exception {
        Class<?> cls;
        try {
            cls = Class.forName("org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig");
        } catch (ClassNotFoundException e) {
            cls = Class.forName("org.apache.rocketmq.common.subscription.SubscriptionGroupConfig");
        }
        Object sg = cls.getConstructor().newInstance();
        cls.getMethod("setGroupName", String.class).invoke(sg, group);
        DefaultMQAdminExt.class.getMethod("createAndUpdateSubscriptionGroupConfig", String.class, cls)
            .invoke(admin, addr, sg);
    }

    /**
     * {@code examineConsumeStats(addr, group, topic, timeout)} (B 208 to one address): 5.x only, and ConsumeStats
     * moved package between the lines, so everything by reflection (this class compiles against 4.9.8 too).
     * Returns {brokerOffset, consumerOffset} of {@code mq}.
     */
    static long[] consumeStatsAt(DefaultMQAdminExt admin, String addr, String group, String topic, Object mq)
        throws Exception {
        var m = DefaultMQAdminExt.class.getMethod("examineConsumeStats", String.class, String.class, String.class,
            long.class);
        Object cs;
        try {
            cs = m.invoke(admin, addr, group, topic, 5000L);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
        Object ow = ((java.util.Map<?, ?>) cs.getClass().getMethod("getOffsetTable").invoke(cs)).get(mq);
        assertNotNull(ow, String.valueOf(cs));
        return new long[] {(Long) ow.getClass().getMethod("getBrokerOffset").invoke(ow),
            (Long) ow.getClass().getMethod("getConsumerOffset").invoke(ow)};
    }

    @Test
    void dashboardAdminCallsOverTheVipPort() throws Exception {
        String ns = Props.namesrv();
        String topic = Props.topic("DashT");
        String group = "DashGroup_" + Long.toHexString(System.nanoTime());
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10_000);
        admin.setNamesrvAddr(ns);
        admin.setVipChannelEnabled(true);
        admin.setInstanceName("dash-" + System.nanoTime());
        admin.start();
        DefaultMQProducer producer = new DefaultMQProducer("DashProducer");
        producer.setNamesrvAddr(ns);
        producer.setInstanceName("dash-p-" + System.nanoTime());
        try {
            // cluster page: 106 + 28 (v) to every address; keys the page and the collector parse
            var cluster = admin.examineBrokerClusterInfo();
            assertFalse(cluster.getBrokerAddrTable().isEmpty());
            // the broker under test by name when given (other tests of the module register more brokers)
            String name = Props.str("broker", null);
            var brokerData = name != null ? cluster.getBrokerAddrTable().get(name)
                : cluster.getBrokerAddrTable().values().iterator().next();
            assertNotNull(brokerData, "broker " + name + " not in " + cluster.getBrokerAddrTable().keySet());
            String addr = brokerData.getBrokerAddrs().get(MixAll.MASTER_ID);
            assertNotNull(addr);
            var kv = admin.fetchBrokerRuntimeStats(addr).getTable();
            assertNotNull(kv.get("brokerVersionDesc"));
            String[] total = kv.get("getTotalTps").split(" ");
            assertEquals(3, total.length, kv.get("getTotalTps"));
            for (String t : total) {
                new BigDecimal(t); // the collector's parse; throws on an empty token
            }
            String[] putTps = kv.get("putTps").split(" ");
            assertTrue(putTps.length > 0, "putTps of " + addr + ": [" + kv.get("putTps") + "] runtime " + kv.get("runtime"));
            Double.parseDouble(putTps[0]);
            Long.parseLong(kv.get("msgPutTotalTodayNow"));
            Long.parseLong(kv.get("msgGetTotalYesterdayMorning"));
            Properties conf = admin.getBrokerConfig(addr); // 26, never VIP
            assertNotNull(conf.getProperty("brokerName"));

            // topic page: create (17 v), list configs (21), stats (202 v), route (105)
            var tc = new org.apache.rocketmq.common.TopicConfig(topic, 2, 2, 6);
            admin.createAndUpdateTopicConfig(addr, tc);
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                try {
                    admin.examineTopicRouteInfo(topic);
                    break;
                } catch (Exception e) {
                    Thread.sleep(300);
                }
            }
            assertTrue(admin.getAllTopicConfig(addr, 5000).getTopicConfigTable().containsKey(topic));
            producer.start();
            SendResult sent = producer.send(new Message(topic, "T", "dash-key", "dash".getBytes(StandardCharsets.UTF_8)));
            var stats = admin.examineTopicStats(topic);
            long max = stats.getOffsetTable().values().stream().mapToLong(o -> o.getMaxOffset()).sum();
            assertEquals(1, max);

            // consumer page: group create (200 v), all groups (201 v), consume stats (208 v), who consumes (300 v)
            createGroup(admin, addr, group);
            assertTrue(admin.getAllSubscriptionGroup(addr, 5000).getSubscriptionGroupTable().containsKey(group));
            var mq = new org.apache.rocketmq.common.message.MessageQueue(topic, sent.getMessageQueue().getBrokerName(),
                sent.getMessageQueue().getQueueId());
            admin.updateConsumeOffset(addr, group, mq, 1);
            // a group that never heartbeated has no %RETRY% route: ask the broker address directly (B 208 v)
            long[] cs = consumeStatsAt(admin, addr, group, topic, mq);
            assertEquals(1, cs[0], "brokerOffset");
            assertEquals(1, cs[1], "consumerOffset");
            assertTrue(admin.queryTopicConsumeByWho(topic).getGroupList().contains(group));

            // reset dialog (222 v): SUCCESS must carry the ResetOffsetBody
            var reset = admin.resetOffsetByTimestamp(topic, group, 0, true);
            assertEquals(0L, reset.get(mq));

            // stats collector (315 v): counters exist after a put; unknown counters are an error
            var put = admin.viewBrokerStatsData(addr, "TOPIC_PUT_NUMS", topic);
            assertNotNull(put.getStatsMinute());

            // message page: view by offset id (33 v to the id's address) and by key (12 v)
            var viewed = admin.viewMessage(topic, sent.getOffsetMsgId());
            assertEquals("dash-key", viewed.getKeys());
            var byKey = admin.queryMessage(topic, "dash-key", 64, 0, System.currentTimeMillis() + 60_000);
            assertFalse(byKey.getMessageList().isEmpty());

            // delete (215 v + 216)
            admin.deleteTopicInBroker(java.util.Collections.singleton(addr), topic);
            assertFalse(admin.getAllTopicConfig(addr, 5000).getTopicConfigTable().containsKey(topic));
            admin.deleteSubscriptionGroup(addr, group);
        } finally {
            producer.shutdown();
            admin.shutdown();
        }
    }
}

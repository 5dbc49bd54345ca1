package io.pyrmq.compat.scenarios;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Topic set-up through the official admin API (rocketmq-tools of the same version as the
 * client): every master listed in the name server's cluster info gets the topic, then we
 * wait until the name server serves a route for it. Only the given name server is used.
 */
final class Admin implements AutoCloseable {
    final DefaultMQAdminExt admin;

    Admin(String namesrv) throws Exception {
        admin = new DefaultMQAdminExt(10_000);
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("compat-admin-" + System.nanoTime());
        admin.start();
    }

    /** Master broker addresses from the name server's GET_BROKER_CLUSTER_INFO. */
    List<String> masters() throws Exception {
        var info = admin.examineBrokerClusterInfo();
        List<String> out = new ArrayList<>();
        for (var bd : info.getBrokerAddrTable().values()) {
            String addr = bd.getBrokerAddrs().get(MixAll.MASTER_ID);
            if (addr != null) {
                out.add(addr);
            }
        }
        return out;
    }

    String describeCluster() throws Exception {
        var info = admin.examineBrokerClusterInfo();
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, ?> e : info.getBrokerAddrTable().entrySet()) {
            sb.append(e.getKey()).append("=").append(e.getValue()).append("; ");
        }
        return sb.toString();
    }

    /** Create the topic with `queues` read/write queues on every master; wait for its route. */
    void createTopic(String topic, int queues, long timeoutMs) throws Exception {
        List<String> masters = masters();
        if (masters.isEmpty()) {
            throw new AssertionError("name server lists no master broker: " + describeCluster());
        }
        TopicConfig tc = new TopicConfig(topic, queues, queues, 6);
        for (String addr : masters) {
            admin.createAndUpdateTopicConfig(addr, tc);
        }
        long deadline = System.currentTimeMillis() + timeoutMs;
        Exception last = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                var route = admin.examineTopicRouteInfo(topic);
                if (route != null && !route.getQueueDatas().isEmpty()) {
                    return;
                }
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("no route for " + topic + " after " + timeoutMs + " ms; last error: " + last);
    }

    @Override
    public void close() {
        admin.shutdown();
    }
}

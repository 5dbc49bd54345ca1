package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * Routing only, no messages: the client reads the topic route from the name server under
 * test (GET_ROUTEINFO_BY_TOPIC) and turns it into publish queues.
 *
 * <p>Properties: namesrv (required), topic, queues (4), expectBroker (a broker name that must
 * serve the topic), expectBrokerAddr (its master address).
 */
public class RouteOnlyTest {

    @Test
    public void route() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("RouteOnly");
        int queues = Props.integer("queues", 4);
        String expectBroker = Props.str("expectBroker", null);
        String expectAddr = Props.str("expectBrokerAddr", null);
        String run = Long.toHexString(System.nanoTime());

        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, queues, 30_000);
            var route = admin.admin.examineTopicRouteInfo(topic);
            System.out.println("route: " + route);
            assertFalse(route.getBrokerDatas().isEmpty(), "route has broker datas");
            if (expectBroker != null) {
                boolean found = false;
                for (var bd : route.getBrokerDatas()) {
                    if (bd.getBrokerName().equals(expectBroker)) {
                        found = true;
                        if (expectAddr != null) {
                            assertEquals(expectAddr, bd.getBrokerAddrs().get(0L), "master address of " + expectBroker);
                        }
                    }
                }
                assertTrue(found, expectBroker + " in " + route.getBrokerDatas());
            }
        }

        DefaultMQProducer producer = new DefaultMQProducer("compat_route_" + run);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("compat-route-" + run);
        producer.start();
        try {
            List<MessageQueue> mqs = producer.fetchPublishMessageQueues(topic);
            System.out.println("publish queues: " + mqs);
            Set<String> brokers = new TreeSet<>();
            Set<Integer> ids = new TreeSet<>();
            for (MessageQueue mq : mqs) {
                assertEquals(topic, mq.getTopic());
                brokers.add(mq.getBrokerName());
                if (expectBroker == null || mq.getBrokerName().equals(expectBroker)) {
                    ids.add(mq.getQueueId());
                }
            }
            if (expectBroker != null) {
                assertTrue(brokers.contains(expectBroker), expectBroker + " in " + brokers);
                Set<Integer> want = new TreeSet<>();
                for (int i = 0; i < queues; i++) {
                    want.add(i);
                }
                assertEquals(want, ids, "queue ids on " + expectBroker);
            } else {
                assertFalse(mqs.isEmpty(), "publish queues");
            }
        } finally {
            producer.shutdown();
        }
    }
}

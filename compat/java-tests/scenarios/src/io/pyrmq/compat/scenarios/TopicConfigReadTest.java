package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Method;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * The topic config as the official admin API reads it from one broker (GET_TOPIC_CONFIG, what the
 * dashboard's Topic Config page shows): name, queue counts and the attribute map. 5.x only: the
 * 4.9.8 tools have no examineTopicConfig, so it is called by reflection to keep this source shared.
 *
 * <p>Properties: namesrv, broker (address), topic, queues, attributes (e.g. "message.type=FIFO").
 */
public class TopicConfigReadTest {

    @Test
    public void read() throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10_000);
        admin.setNamesrvAddr(Props.namesrv());
        admin.setInstanceName("topic-config-read-" + System.nanoTime());
        admin.start();
        try {
            String topic = Props.str("topic", "");
            Method examine = DefaultMQAdminExt.class.getMethod("examineTopicConfig", String.class, String.class);
            Object tc = examine.invoke(admin, Props.str("broker", ""), topic);
            assertEquals(topic, tc.getClass().getMethod("getTopicName").invoke(tc), "topicName");
            assertEquals(Props.integer("queues", 8), tc.getClass().getMethod("getReadQueueNums").invoke(tc), "readQueueNums");
            Object attrs = tc.getClass().getMethod("getAttributes").invoke(tc);
            assertEquals(Props.str("attributes", ""), attrs == null ? "" : attrs.toString().replaceAll("[{}]", ""),
                "attributes");
            System.out.printf("topic-config: %s%n", tc);
        } finally {
            admin.shutdown();
        }
    }
}

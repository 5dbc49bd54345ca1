package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Tag filter (scenario 7): messages tagged TagA..TagD; a group subscribed with
 * "TagA || TagC" receives exactly the TagA and TagC ones, a group with "*" receives all.
 *
 * <p>Properties: namesrv (required), topic, count (120), queues (4), timeoutSec (30).
 */
public class TagFilterTest {

    @Test
    public void tagFilter() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("TagFilter");
        int count = Props.integer("count", 120);
        int timeoutSec = Props.integer("timeoutSec", 30);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, Props.integer("queues", 4), 30_000);
        }
        String[] tags = {"TagA", "TagB", "TagC", "TagD"};
        Map<Integer, String> sentTags = new TreeMap<>();
        DefaultMQProducer p = Clients.producer(namesrv, "tags");
        try {
            for (int i = 0; i < count; i++) {
                Message m = Clients.message(topic, tags[i % 4], "t-" + i, "tag " + i);
                m.putUserProperty("idx", Integer.toString(i));
                Clients.sendOk(p, m);
                sentTags.put(i, tags[i % 4]);
            }
        } finally {
            p.shutdown();
        }
        Set<Integer> wantAC = new TreeSet<>();
        sentTags.forEach((i, t) -> {
            if (t.equals("TagA") || t.equals("TagC")) {
                wantAC.add(i);
            }
        });

        Map<Integer, String> gotAC = new ConcurrentHashMap<>();
        Map<Integer, String> gotAll = new ConcurrentHashMap<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            consumers.add(consumer(namesrv, topic, "ac", "TagA || TagC", gotAC));
            consumers.add(consumer(namesrv, topic, "all", "*", gotAll));
            Clients.await(timeoutSec * 1000L, () -> gotAC.keySet().containsAll(wantAC) && gotAll.size() >= count);
            Thread.sleep(1000); // anything the filter wrongly lets through has time to show up
        } finally {
            for (DefaultMQPushConsumer c : consumers) {
                Clients.quietly(c::shutdown);
            }
        }
        assertEquals(wantAC, new TreeSet<>(gotAC.keySet()), "idx received with 'TagA || TagC'");
        gotAC.forEach((i, t) -> assertEquals(sentTags.get(i), t, "tag of " + i));
        assertEquals(sentTags.keySet(), new TreeSet<>(gotAll.keySet()), "idx received with '*'");
        gotAll.forEach((i, t) -> assertEquals(sentTags.get(i), t, "tag of " + i));
    }

    private static DefaultMQPushConsumer consumer(String namesrv, String topic, String name, String expr,
        Map<Integer, String> got) throws Exception {
        DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, "compat_tag_" + name + "_" + Clients.RUN,
            "compat-tag-" + name + "-" + Clients.RUN);
        c.subscribe(topic, expr);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.put(Integer.parseInt(m.getUserProperty("idx")), m.getTags());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        return c;
    }
}

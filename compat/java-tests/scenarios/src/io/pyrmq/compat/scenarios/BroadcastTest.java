package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * Broadcasting (scenario 5): two consumers of one group in BROADCASTING mode each own every
 * queue and each receive every message.
 *
 * <p>Properties: namesrv (required), topic, count (100), queues (4), timeoutSec (30).
 */
public class BroadcastTest {

    @Test
    public void broadcasting() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Broadcast");
        int count = Props.integer("count", 100);
        int queues = Props.integer("queues", 4);
        int timeoutSec = Props.integer("timeoutSec", 30);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, queues, 30_000);
        }
        String group = "compat_bcast_" + Clients.RUN;
        List<Set<String>> got = new ArrayList<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (int n = 0; n < 2; n++) {
                Set<String> mine = ConcurrentHashMap.newKeySet();
                got.add(mine);
                DefaultMQPushConsumer c = Clients.pushConsumer(namesrv, group, "compat-bc" + n + "-" + Clients.RUN);
                Clients.setMessageModel(c, "BROADCASTING");
                c.subscribe(topic, "*");
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        mine.add(m.getUserProperty("idx"));
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                c.start();
                consumers.add(c);
            }
            Clients.awaitOrFail(30_000, () -> consumers.stream().allMatch(c -> Clients.owned(c, topic, false).size() == queues),
                () -> "broadcasting consumers do not each own all " + queues + " queues: "
                    + consumers.stream().map(c -> Clients.owned(c, topic, false).toString()).reduce("", String::concat));
            DefaultMQProducer p = Clients.producer(namesrv, "bcast");
            try {
                for (int i = 0; i < count; i++) {
                    Message m = Clients.message(topic, "B", "b-" + i, "broadcast " + i);
                    m.putUserProperty("idx", Integer.toString(i));
                    Clients.sendOk(p, m);
                }
            } finally {
                p.shutdown();
            }
            Clients.await(timeoutSec * 1000L, () -> got.stream().allMatch(s -> s.size() >= count));
        } finally {
            for (DefaultMQPushConsumer c : consumers) {
                Clients.quietly(c::shutdown);
            }
        }
        Set<String> want = new TreeSet<>();
        for (int i = 0; i < count; i++) {
            want.add(Integer.toString(i));
        }
        List<String> problems = new ArrayList<>();
        for (int n = 0; n < got.size(); n++) {
            Set<String> missing = new TreeSet<>(want);
            missing.removeAll(got.get(n));
            if (!missing.isEmpty()) {
                problems.add("consumer " + n + " missed " + missing.size() + ": " + Clients.first(missing, 10));
            }
            if (!want.containsAll(got.get(n))) {
                problems.add("consumer " + n + " got foreign messages");
            }
        }
        if (!problems.isEmpty()) {
            fail(String.join("\n", problems));
        }
    }
}

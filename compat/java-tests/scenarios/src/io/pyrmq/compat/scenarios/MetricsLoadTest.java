package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * A fixed load for comparing broker metrics (tests/compat/test_metrics_compat.py): the same
 * counts on any broker, so the scraped counters can be compared.
 *
 * <p>{@code normal} messages (TagM) and {@code dlq} messages (TagD) of 100 bytes, {@code delayed}
 * messages with delay level 1, all synchronous sends to {@code topic}. Group {@code group} consumes
 * everything ("*"); group {@code group}_dlq subscribes to TagD with maxReconsumeTimes 0 and always
 * fails, so each TagD message goes to %DLQ%{@code group}_dlq once. Ends when both groups saw
 * their messages and the consumers shut down (offsets persisted). With {@code holdFile}, the
 * clients stay connected after the load until {@code holdFile}.done exists (the test scrapes then).
 */
public class MetricsLoadTest {

    @Test
    public void load() throws Exception {
        String namesrv = Props.namesrv();
        String topic = SemA.required("topic");
        String group = SemA.required("group");
        int normal = Props.integer("normal", 20);
        int dlq = Props.integer("dlq", 3);
        int delayed = Props.integer("delayed", 2);
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, 4, 30_000);
        }
        AtomicInteger all = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        DefaultMQPushConsumer c = SemA.consumer(namesrv, group, "metrics");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            all.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        DefaultMQPushConsumer d = SemA.consumer(namesrv, group + "_dlq", "metricsdlq");
        d.setMaxReconsumeTimes(0);
        d.subscribe(topic, "TagD");
        d.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            failed.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        c.start();
        d.start();
        DefaultMQProducer p = SemA.producer(namesrv, "metrics");
        try {
            SemA.awaitAssigned(c, topic, 30_000);
            SemA.awaitAssigned(d, topic, 30_000);
            byte[] body = new byte[100];
            Arrays.fill(body, (byte) 'm');
            for (int i = 0; i < normal + dlq + delayed; i++) {
                Message m = new Message(topic, i < normal ? "TagM" : i < normal + dlq ? "TagD" : "TagL", body);
                if (i >= normal + dlq) {
                    m.setDelayTimeLevel(1);
                }
                SendResult r = p.send(m);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
            }
            int total = normal + dlq + delayed;
            SemA.awaitOrFail(60_000, () -> all.get() >= total && failed.get() >= dlq,
                () -> "consumed " + all.get() + "/" + total + ", failed " + failed.get() + "/" + dlq);
            Thread.sleep(Props.integer("quietMs", 2000)); // the send-backs of the last failures
            System.out.println("metrics load: consumed " + all.get() + ", failed " + failed.get());
            String hold = Props.str("holdFile", null);
            if (hold != null) { // the test scrapes while the clients are still connected
                Files.writeString(Path.of(hold), "consumed " + all.get());
                SemA.awaitOrFail(60_000, () -> Files.exists(Path.of(hold + ".done")), () -> "no " + hold + ".done");
            }
        } finally {
            SemA.quietly(p::shutdown);
            SemA.quietly(c::shutdown);
            SemA.quietly(d::shutdown);
        }
        assertEquals(normal + dlq + delayed, all.get(), "each message consumed once by " + group);
        assertEquals(dlq, failed.get(), "each TagD message delivered once to " + group + "_dlq");
    }
}

package io.pyrmq.compat.container;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.message.MessageExt;

/** What the failover scenarios check at the end: every acknowledged message arrived, intact. */
final class Delivery {
    private Delivery() {
    }

    /**
     * Waits up to {@code timeoutSec} until {@code received} (msgId -> message, filled by the running
     * {@code consumer}) holds every key of {@code sent} (msgId -> body), then shuts the consumer down.
     * A received body must be the one sent; returns the msgIds that never arrived.
     */
    static List<String> awaitAcknowledged(DefaultMQPushConsumer consumer, Map<String, String> sent,
        Map<String, MessageExt> received, int timeoutSec) throws InterruptedException {
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSec);
            while (!received.keySet().containsAll(sent.keySet()) && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
        } finally {
            consumer.shutdown();
        }
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, String> e : sent.entrySet()) {
            MessageExt m = received.get(e.getKey());
            if (m == null) {
                missing.add(e.getKey());
            } else {
                assertEquals(e.getValue(), new String(m.getBody(), StandardCharsets.UTF_8), "body of " + e.getKey());
            }
        }
        return missing;
    }
}

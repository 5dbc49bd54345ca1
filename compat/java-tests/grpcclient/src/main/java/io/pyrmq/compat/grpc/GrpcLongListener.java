package io.pyrmq.compat.grpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * A PushConsumer whose listener takes longer than the invisible time the endpoint gives a push
 * consumer's messages (the Java proxy's defaultInvisibleTimeMills, 60 s): the endpoint must renew
 * the message while the listener runs, so it is delivered once, acked once, and never again.
 *
 * <p>Usage: {@code GrpcLongListener <endpoint> <topic> <group>}; -DlistenMs (75000) is how long the
 * listener takes, -DafterMs (30000) how long the consumer stays after the ack to see a redelivery.
 * Observations are {@code @@ <json>} lines as in {@link GrpcScenarios} (step "long"): sent,
 * received (with its attempt), consumed, then done.
 */
public final class GrpcLongListener {
    public static void main(String[] args) throws Exception {
        String step = "long";
        long listenMs = Long.getLong("listenMs", 75000);
        long afterMs = Long.getLong("afterMs", 30000);
        String endpoint = args[0];
        String topic = args[1];
        String group = args[2];
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration config = ClientConfiguration.newBuilder().setEndpoints(endpoint)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
        AtomicInteger deliveries = new AtomicInteger();
        String error = null;
        PushConsumer consumer = null;
        try {
            consumer = provider.newPushConsumerBuilder()
                .setClientConfiguration(config)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
                .setMessageListener(v -> {
                    deliveries.incrementAndGet();
                    GrpcScenarios.emit(step, "received", "id", v.getMessageId().toString(),
                        "attempt", v.getDeliveryAttempt(), "now", System.currentTimeMillis());
                    try {
                        Thread.sleep(listenMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return ConsumeResult.FAILURE;
                    }
                    GrpcScenarios.emit(step, "consumed", "id", v.getMessageId().toString(),
                        "now", System.currentTimeMillis());
                    return ConsumeResult.SUCCESS;
                })
                .build();
            try (Producer p = provider.newProducerBuilder().setClientConfiguration(config).setTopics(topic).build()) {
                String body = step + "-0";
                SendReceipt r = p.send(provider.newMessageBuilder().setTopic(topic)
                    .setBody(body.getBytes(StandardCharsets.UTF_8)).build());
                GrpcScenarios.emit(step, "sent", "id", r.getMessageId().toString(), "body", body,
                    "now", System.currentTimeMillis());
            }
            long end = System.currentTimeMillis() + listenMs + 60000;
            while (System.currentTimeMillis() < end && deliveries.get() == 0) {
                Thread.sleep(100);
            }
            Thread.sleep(listenMs + afterMs); // the listener's time, then a window for a redelivery
        } catch (Throwable t) {
            error = t.toString();
            t.printStackTrace();
        } finally {
            if (consumer != null) {
                consumer.close();
            }
        }
        GrpcScenarios.emit(step, "done", "ok", error == null, "error", error, "deliveries", deliveries.get());
        System.out.flush();
        System.exit(0); // the SDK's non-daemon threads would keep the JVM alive
    }
}

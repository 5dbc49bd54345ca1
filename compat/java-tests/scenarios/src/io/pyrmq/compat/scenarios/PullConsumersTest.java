package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * Pull-style consumers (scenario 6): DefaultLitePullConsumer in subscribe mode and in assign
 * mode with seek, and the deprecated DefaultMQPullConsumer (fetchSubscribeMessageQueues,
 * min/max offset, pull by offset).
 *
 * <p>Properties: namesrv (required), topic, count (120), queues (4), timeoutSec (30).
 */
public class PullConsumersTest {

    /** Fresh topic with `count` messages; returns idx -> send result. */
    private static Map<Integer, SendResult> fill(String namesrv, String topic, int count) throws Exception {
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, Props.integer("queues", 4), 30_000);
        }
        Map<Integer, SendResult> sent = new TreeMap<>();
        DefaultMQProducer p = Clients.producer(namesrv, "pull");
        try {
            for (int i = 0; i < count; i++) {
                Message m = Clients.message(topic, i % 2 == 0 ? "TagA" : "TagB", "pull-" + i, "pull " + i);
                m.putUserProperty("idx", Integer.toString(i));
                sent.put(i, Clients.sendOk(p, m));
            }
        } finally {
            p.shutdown();
        }
        return sent;
    }

    private static DefaultLitePullConsumer lite(String namesrv, String tag) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer("compat_lite_" + tag + "_" + Clients.RUN);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("compat-lite-" + tag + "-" + Clients.RUN);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        return c;
    }

    @Test
    public void litePullSubscribe() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("LiteSub");
        int count = Props.integer("count", 120);
        Map<Integer, SendResult> sent = fill(namesrv, topic, count);
        DefaultLitePullConsumer c = lite(namesrv, "sub");
        c.subscribe(topic, "*");
        c.setAutoCommit(true);
        c.start();
        Map<Integer, MessageExt> got = new TreeMap<>();
        try {
            long deadline = System.currentTimeMillis() + Props.integer("timeoutSec", 30) * 1000L;
            while (got.size() < count && System.currentTimeMillis() < deadline) {
                for (MessageExt m : c.poll(1000)) {
                    got.putIfAbsent(Integer.parseInt(m.getUserProperty("idx")), m);
                }
            }
        } finally {
            c.shutdown();
        }
        assertEquals(sent.keySet(), got.keySet(), "idx received by the subscribing lite pull consumer");
        for (var e : got.entrySet()) {
            assertEquals(sent.get(e.getKey()).getMsgId(), e.getValue().getMsgId(), "msgId of " + e.getKey());
        }
    }

    @Test
    public void litePullAssignSeek() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("LiteAssign");
        int count = Props.integer("count", 120);
        Map<Integer, SendResult> sent = fill(namesrv, topic, count);
        // Per queue: seek to the offset of the 15th message sent there (past one pull batch of 10).
        Map<Integer, Long> seekTo = new TreeMap<>();
        Map<Integer, Integer> perQueue = new TreeMap<>();
        for (SendResult r : sent.values()) {
            int q = r.getMessageQueue().getQueueId();
            int n = perQueue.merge(q, 1, Integer::sum);
            if (n == 15) {
                seekTo.put(q, r.getQueueOffset());
            }
        }
        Set<Integer> want = new TreeSet<>();
        for (var e : sent.entrySet()) {
            Long from = seekTo.get(e.getValue().getMessageQueue().getQueueId());
            if (from != null && e.getValue().getQueueOffset() >= from) {
                want.add(e.getKey());
            }
        }
        DefaultLitePullConsumer c = lite(namesrv, "assign");
        c.setAutoCommit(false);
        c.start();
        Map<Integer, MessageExt> got = new TreeMap<>();
        List<String> problems = new ArrayList<>();
        try {
            List<MessageQueue> mqs = Clients.sortedQueues(c.fetchMessageQueues(topic));
            assertEquals(Props.integer("queues", 4), mqs.size(), "queues: " + mqs);
            c.assign(mqs);
            for (MessageQueue mq : mqs) {
                Long off = seekTo.get(mq.getQueueId());
                if (off != null) {
                    c.seek(mq, off);
                } else {
                    c.seekToEnd(mq);
                }
            }
            // The pull task assign() starts may already hold its first batch when seek() replaces it, and
            // the client can still hand that batch out (DefaultLitePullConsumerImpl#seek clears the cache
            // while PullTaskImpl delivers what it pulled once the seek offset is consumed): at most one
            // batch per queue, before anything past the seek point. A broker that ignored the seek would
            // deliver more than one batch before the seek point, which is still a problem.
            Map<Integer, Integer> early = new TreeMap<>();
            Set<Integer> pastSeek = new TreeSet<>();
            long deadline = System.currentTimeMillis() + Props.integer("timeoutSec", 30) * 1000L;
            while (!got.keySet().containsAll(want) && System.currentTimeMillis() < deadline) {
                for (MessageExt m : c.poll(1000)) {
                    int idx = Integer.parseInt(m.getUserProperty("idx"));
                    int q = m.getQueueId();
                    Long from = seekTo.get(q);
                    if (from != null && m.getQueueOffset() < from && !pastSeek.contains(q)
                        && early.merge(q, 1, Integer::sum) <= c.getPullBatchSize()) {
                        continue;
                    }
                    if (from == null || m.getQueueOffset() < from) {
                        problems.add("idx " + idx + " at queue " + q + " offset " + m.getQueueOffset()
                            + " is before the seek point " + from);
                    } else {
                        pastSeek.add(q);
                    }
                    got.putIfAbsent(idx, m);
                }
            }
        } finally {
            c.shutdown();
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
        assertEquals(want, got.keySet(), "idx received after seek " + seekTo);
    }

    @Test
    public void pullConsumer() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("PullOld");
        int count = Props.integer("count", 120);
        Map<Integer, SendResult> sent = fill(namesrv, topic, count);
        Map<Integer, Long> maxOffsets = new TreeMap<>();
        for (SendResult r : sent.values()) {
            maxOffsets.merge(r.getMessageQueue().getQueueId(), r.getQueueOffset() + 1, Math::max);
        }
        DefaultMQPullConsumer c = new DefaultMQPullConsumer("compat_pull_" + Clients.RUN);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("compat-pull-" + Clients.RUN);
        c.start();
        Map<Integer, MessageExt> got = new TreeMap<>();
        Set<Integer> tagA = new TreeSet<>();
        try {
            Set<MessageQueue> mqs = c.fetchSubscribeMessageQueues(topic);
            assertEquals(Props.integer("queues", 4), mqs.size(), "fetchSubscribeMessageQueues: " + mqs);
            for (MessageQueue mq : mqs) {
                long max = c.maxOffset(mq);
                assertEquals(0L, c.minOffset(mq), "minOffset of " + mq);
                assertEquals((long) maxOffsets.getOrDefault(mq.getQueueId(), 0L), max, "maxOffset of " + mq);
                long offset = 0;
                while (offset < max) {
                    PullResult r = c.pull(mq, "*", offset, 16);
                    assertEquals(PullStatus.FOUND, r.getPullStatus(), "pull " + mq + " at " + offset + ": " + r);
                    long expect = offset;
                    for (MessageExt m : r.getMsgFoundList()) {
                        assertEquals(expect++, m.getQueueOffset(), "queue offset in " + mq);
                        got.put(Integer.parseInt(m.getUserProperty("idx")), m);
                    }
                    assertEquals(expect, r.getNextBeginOffset(), "nextBeginOffset of " + mq);
                    assertEquals(max, r.getMaxOffset(), "maxOffset in pull result of " + mq);
                    offset = r.getNextBeginOffset();
                }
                PullResult end = c.pull(mq, "*", max, 16);
                assertEquals(PullStatus.NO_NEW_MSG, end.getPullStatus(), "pull at maxOffset of " + mq + ": " + end);
                // Tag filtering on the broker side: only TagA comes back (skipped offsets still advance).
                long o = 0;
                while (o < max) {
                    PullResult r = c.pull(mq, "TagA", o, 32);
                    if (r.getPullStatus() == PullStatus.FOUND) {
                        for (MessageExt m : r.getMsgFoundList()) {
                            assertEquals("TagA", m.getTags(), "tag filter in " + mq);
                            tagA.add(Integer.parseInt(m.getUserProperty("idx")));
                        }
                    } else if (r.getPullStatus() != PullStatus.NO_MATCHED_MSG && r.getPullStatus() != PullStatus.NO_NEW_MSG) {
                        fail("pull TagA " + mq + " at " + o + ": " + r);
                    }
                    if (r.getNextBeginOffset() <= o) {
                        fail("pull TagA " + mq + " at " + o + " did not advance: " + r);
                    }
                    o = r.getNextBeginOffset();
                }
            }
        } finally {
            c.shutdown();
        }
        assertEquals(sent.keySet(), got.keySet(), "idx pulled by offset");
        for (var e : got.entrySet()) {
            assertEquals(sent.get(e.getKey()).getMsgId(), e.getValue().getMsgId(), "msgId of " + e.getKey());
        }
        Set<Integer> evens = new TreeSet<>();
        for (int i = 0; i < count; i += 2) {
            evens.add(i);
        }
        assertEquals(evens, tagA, "TagA pulls");
    }
}

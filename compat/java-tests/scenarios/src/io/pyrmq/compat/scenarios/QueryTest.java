package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Message query (scenario 8, first half) through the official admin API
 * (DefaultMQAdminExt of rocketmq-tools): viewMessage by the client msgId (UNIQ_KEY, found
 * through the index) and by the broker's offsetMsgId (VIEW_MESSAGE_BY_ID), and
 * queryMessage(topic, key, maxNum, begin, end) by a unique key and by a key shared by all.
 *
 * <p>Properties: namesrv (required), topic, count (20), queues (4), timeoutSec (20).
 */
public class QueryTest {

    @Test
    public void viewAndQuery() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.topic("Query");
        int count = Props.integer("count", 20);
        long timeoutMs = Props.integer("timeoutSec", 20) * 1000L;
        String shared = "qall-" + Clients.RUN;
        long begin = System.currentTimeMillis() - 60_000;
        Map<Integer, SendResult> sent = new TreeMap<>();
        try (Admin admin = new Admin(namesrv)) {
            admin.createTopic(topic, Props.integer("queues", 4), 30_000);
            DefaultMQProducer p = Clients.producer(namesrv, "query");
            try {
                for (int i = 0; i < count; i++) {
                    Message m = Clients.message(topic, "Q", "q-" + Clients.RUN + "-" + i + " " + shared, "query " + i);
                    m.putUserProperty("idx", Integer.toString(i));
                    sent.put(i, Clients.sendOk(p, m));
                }
            } finally {
                p.shutdown();
            }
            long end = System.currentTimeMillis() + 60_000;

            for (var e : sent.entrySet()) {
                int i = e.getKey();
                SendResult r = e.getValue();
                MessageExt byOffsetId = admin.admin.viewMessage(topic, r.getOffsetMsgId());
                check(byOffsetId, i, topic, "viewMessage(offsetMsgId " + r.getOffsetMsgId() + ")");
                assertEquals(r.getMsgId(), byOffsetId.getMsgId(), "msgId of view by offsetMsgId " + i);
                assertEquals(r.getQueueOffset(), byOffsetId.getQueueOffset(), "queue offset of " + i);
            }
            // The unique-key index is written after the commit log; give it a moment.
            int i0 = 0;
            String uniq = sent.get(i0).getMsgId();
            MessageExt[] holder = new MessageExt[1];
            Clients.awaitOrFail(timeoutMs, () -> {
                try {
                    holder[0] = admin.admin.viewMessage(topic, uniq);
                    return holder[0] != null;
                } catch (Exception e) {
                    System.out.println("viewMessage(" + uniq + "): " + e);
                    return false;
                }
            }, () -> "viewMessage(topic, msgId " + uniq + ") never found it");
            check(holder[0], i0, topic, "viewMessage(msgId " + uniq + ")");
            assertEquals(uniq, holder[0].getMsgId());

            for (int i = 0; i < count; i += 7) {
                String key = "q-" + Clients.RUN + "-" + i;
                QueryResult qr = query(admin, topic, key, 32, begin, end, 1, timeoutMs);
                assertEquals(1, qr.getMessageList().size(), "messages with key " + key + ": " + qr.getMessageList());
                check(qr.getMessageList().get(0), i, topic, "queryMessage(" + key + ")");
            }
            QueryResult all = query(admin, topic, shared, 64, begin, end, count, timeoutMs);
            Set<Integer> idx = new TreeSet<>();
            for (MessageExt m : all.getMessageList()) {
                idx.add(Integer.parseInt(m.getUserProperty("idx")));
            }
            assertEquals(sent.keySet(), idx, "idx of queryMessage(shared key)");
        }
    }

    private static QueryResult query(Admin admin, String topic, String key, int max, long begin, long end, int want,
        long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        QueryResult qr = null;
        Exception last = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                qr = admin.admin.queryMessage(topic, key, max, begin, end);
                if (qr.getMessageList().size() >= want) {
                    return qr;
                }
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(300);
        }
        fail("queryMessage(" + topic + ", " + key + ") found " + (qr == null ? "nothing" : qr.getMessageList().size())
            + " of " + want + "; last error " + last);
        return qr;
    }

    private static void check(MessageExt m, int i, String topic, String what) {
        assertNotNull(m, what);
        assertEquals(topic, m.getTopic(), what + " topic");
        assertEquals(Integer.toString(i), m.getUserProperty("idx"), what + " idx");
        assertEquals("query " + i, new String(m.getBody(), StandardCharsets.UTF_8), what + " body");
        assertEquals("Q", m.getTags(), what + " tags");
    }
}

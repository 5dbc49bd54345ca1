package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * Store cross-checks (tests/compat/test_store_*.py): the official client sends what a JSON spec
 * describes and writes what it reports, or consumes and writes every message it receives, one JSON
 * object per line into -Dout. Self-contained (uses only Props): -Dnamesrv, -Dspec and -Dout.
 *
 * <p>send spec: {"group": g, "sends": [{"messages": [m, ...], "batch": bool, "queueId": n,
 * "broker": name}], "pauseMs": ms} with m = {"topic", "tags", "keys": [..], "props": {..}, "bodyHex" |
 * "bodyRepeat": n, "delayLevel", "flag"}; bodyRepeat n is n bytes (i * 7 + 3) & 0xff; pauseMs (optional)
 * is a sleep after each send, so the sends span a while (a reader tails the store meanwhile).
 *
 * <p>consume spec: {"group": g, "topics": [..], "expect": n, "timeoutSec": s, "lingerMs": ms}.
 */
class StoreScenarioTest {
    private static final String RUN = Long.toHexString(System.nanoTime());

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.toString();
    }

    private static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    private static Message build(JSONObject m) {
        byte[] body = m.containsKey("bodyHex") ? unhex(m.getString("bodyHex")) : new byte[0];
        if (m.containsKey("bodyRepeat")) {
            body = new byte[m.getIntValue("bodyRepeat")];
            for (int i = 0; i < body.length; i++) {
                body[i] = (byte) (i * 7 + 3);
            }
        }
        Message msg = new Message(m.getString("topic"), body);
        if (m.containsKey("tags")) {
            msg.setTags(m.getString("tags"));
        }
        if (m.containsKey("keys")) {
            msg.setKeys(m.getJSONArray("keys").toJavaList(String.class));
        }
        if (m.containsKey("props")) {
            for (Map.Entry<String, Object> e : m.getJSONObject("props").entrySet()) {
                msg.putUserProperty(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        if (m.containsKey("delayLevel")) {
            msg.setDelayTimeLevel(m.getIntValue("delayLevel"));
        }
        if (m.containsKey("flag")) {
            msg.setFlag(m.getIntValue("flag"));
        }
        return msg;
    }

    private static JSONObject result(SendResult r) {
        JSONObject o = new JSONObject(true);
        o.put("status", r.getSendStatus().name());
        o.put("msgId", r.getMsgId());
        o.put("offsetMsgId", r.getOffsetMsgId());
        o.put("topic", r.getMessageQueue().getTopic());
        o.put("brokerName", r.getMessageQueue().getBrokerName());
        o.put("queueId", r.getMessageQueue().getQueueId());
        o.put("queueOffset", r.getQueueOffset());
        return o;
    }

    private static JSONObject spec() throws Exception {
        return JSON.parseObject(new String(Files.readAllBytes(Paths.get(Props.str("spec", ""))), StandardCharsets.UTF_8));
    }

    @Test
    void send() throws Exception {
        JSONObject spec = spec();
        DefaultMQProducer p = new DefaultMQProducer(spec.getString("group"));
        p.setNamesrvAddr(Props.namesrv());
        p.setInstanceName("store-scenario-" + RUN);
        p.setSendMsgTimeout(15_000);
        p.setMaxMessageSize(4 * 1024 * 1024);
        p.start();
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(Props.str("out", ""))))) {
            for (Object o : spec.getJSONArray("sends")) {
                JSONObject s = (JSONObject) o;
                JSONArray msgs = s.getJSONArray("messages");
                MessageQueue mq = null;
                if (s.containsKey("queueId")) {
                    mq = new MessageQueue(msgs.getJSONObject(0).getString("topic"), s.getString("broker"), s.getIntValue("queueId"));
                }
                if (!s.getBooleanValue("batch")) {
                    Message m = build(msgs.getJSONObject(0));
                    SendResult r = mq == null ? p.send(m) : p.send(m, mq);
                    JSONObject line = result(r);
                    line.put("properties", new TreeMap<>(m.getProperties()));
                    out.println(line.toJSONString());
                } else {
                    List<Message> list = new ArrayList<>();
                    for (Object mo : msgs) {
                        list.add(build((JSONObject) mo));
                    }
                    SendResult r = mq == null ? p.send(list) : p.send(list, mq);
                    JSONObject line = result(r);
                    line.put("batchSize", list.size());
                    JSONArray props = new JSONArray();
                    for (Message m : list) {
                        props.add(new TreeMap<>(m.getProperties()));
                    }
                    line.put("properties", props);
                    out.println(line.toJSONString());
                }
                out.flush();
                if (spec.getIntValue("pauseMs") > 0) {
                    Thread.sleep(spec.getIntValue("pauseMs"));
                }
            }
        } finally {
            p.shutdown();
        }
    }

    @Test
    void consume() throws Exception {
        JSONObject spec = spec();
        int expect = spec.getIntValue("expect");
        ConcurrentLinkedQueue<JSONObject> got = new ConcurrentLinkedQueue<>();
        CountDownLatch latch = new CountDownLatch(expect);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(spec.getString("group"));
        c.setNamesrvAddr(Props.namesrv());
        c.setInstanceName("store-scenario-c-" + RUN);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        for (Object t : spec.getJSONArray("topics")) {
            c.subscribe((String) t, "*");
        }
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                JSONObject o = new JSONObject(true);
                o.put("topic", m.getTopic());
                o.put("queueId", m.getQueueId());
                o.put("queueOffset", m.getQueueOffset());
                o.put("msgId", m.getMsgId());
                o.put("offsetMsgId", m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : null);
                o.put("commitLogOffset", m.getCommitLogOffset());
                o.put("storeSize", m.getStoreSize());
                o.put("tags", m.getTags());
                o.put("keys", m.getKeys());
                o.put("properties", new TreeMap<>(m.getProperties()));
                // an empty body decodes to null on the Java side (MessageDecoder reads only bodyLen > 0)
                o.put("bodyHex", m.getBody() == null ? "" : hex(m.getBody()));
                o.put("bornTimestamp", m.getBornTimestamp());
                o.put("storeTimestamp", m.getStoreTimestamp());
                o.put("flag", m.getFlag());
                o.put("sysFlag", m.getSysFlag());
                o.put("reconsumeTimes", m.getReconsumeTimes());
                got.add(o);
                latch.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        boolean all;
        try {
            all = latch.await(spec.getIntValue("timeoutSec"), TimeUnit.SECONDS);
            // let the consumer commit its offsets (persistConsumerOffsetInterval) before leaving
            Thread.sleep(spec.containsKey("lingerMs") ? spec.getIntValue("lingerMs") : 0);
        } finally {
            c.shutdown();
        }
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(Props.str("out", ""))))) {
            for (JSONObject o : got) {
                out.println(o.toJSONString());
            }
        }
        if (!all) {
            fail("received " + got.size() + " of " + expect + " messages");
        }
        assertEquals(expect, got.size(), "more messages than expected (redelivery?)");
    }
}

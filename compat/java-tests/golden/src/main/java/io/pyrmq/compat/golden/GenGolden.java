package io.pyrmq.compat.golden;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.remoting.protocol.header.namesrv.GetRouteInfoRequestHeader;

/**
 * Writes golden RemotingCommand frames with the official rocketmq-remoting encoder.
 *
 * <p>Each case is encoded twice, once per serialize type (JSON and ROCKETMQ), exactly as
 * NettyEncoder puts it on the wire: {@code fastEncodeHeader} followed by the body. Output:
 * {@code <out>/remoting/<case>.<json|rocketmq>.<request|response>.hex} (annotated hex, one
 * field per line, '#' comments) and the remoting entries of {@code <out>/MANIFEST.json}
 * (entries for other directories are kept as they are).
 *
 * <p>Usage: {@code java -cp golden.jar:<classpath> io.pyrmq.compat.golden.GenGolden tests/golden}
 */
public final class GenGolden {

    static final String SOURCE = "rocketmq-remoting 5.5.0 via compat/java-tests golden";
    static final int VERSION = 479;

    /** One golden command: a name and a builder that gives a fresh command each time. */
    static final class Case {
        final String name;
        final String note;
        final Supplier<RemotingCommand> build;

        Case(String name, String note, Supplier<RemotingCommand> build) {
            this.name = name;
            this.note = note;
            this.build = build;
        }
    }

    static RemotingCommand base(int code, int opaque, int flag) {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(code, null);
        // createResponseCommand marks the response bit; start from a clean flag word.
        cmd.setFlag(flag);
        cmd.setCode(code);
        cmd.setOpaque(opaque);
        cmd.setVersion(VERSION);
        cmd.setLanguage(LanguageCode.JAVA);
        cmd.setRemark(null);
        cmd.setExtFields(null);
        return cmd;
    }

    static byte[] range0to255() {
        byte[] b = new byte[256];
        for (int i = 0; i < 256; i++) {
            b[i] = (byte) i;
        }
        return b;
    }

    static List<Case> cases() {
        List<Case> cases = new ArrayList<>();

        cases.add(new Case("get_routeinfo_by_topic", "GET_ROUTEINFO_BY_TOPIC (105) built from the real "
            + "GetRouteInfoRequestHeader, plus ext fields added out of order; no remark, no body",
            () -> {
                GetRouteInfoRequestHeader h = new GetRouteInfoRequestHeader();
                h.setTopic("TopicTest");
                h.setAcceptStandardJsonOnly(true);
                RemotingCommand cmd = RemotingCommand.createRequestCommand(105, h);
                cmd.setOpaque(0x01020304);
                cmd.setVersion(VERSION);
                cmd.setLanguage(LanguageCode.JAVA);
                cmd.makeCustomHeaderToNet();
                cmd.addExtField("zone", "z1");
                cmd.addExtField("brokerName", "broker-a");
                cmd.addExtField("lo", "false");
                return cmd;
            }));

        cases.add(new Case("send_message_v2", "SEND_MESSAGE_V2 (310) from the real SendMessageRequestHeaderV2 "
            + "(single-letter keys; ROCKETMQ writes them a..n via FastCodesHeader), text body",
            () -> {
                SendMessageRequestHeader v1 = new SendMessageRequestHeader();
                v1.setProducerGroup("please_rename_unique_group_name");
                v1.setTopic("TopicTest");
                v1.setDefaultTopic("TBW102");
                v1.setDefaultTopicQueueNums(4);
                v1.setQueueId(3);
                v1.setSysFlag(0);
                v1.setBornTimestamp(0x0102030405060708L);
                v1.setFlag(0);
                v1.setProperties("KEYS\u0001key-1\u0002UNIQ_KEY\u00017F0000010001000000000000000001\u0002"
                    + "WAIT\u0001true\u0002TAGS\u0001TagA\u0002");
                v1.setReconsumeTimes(0);
                v1.setUnitMode(false);
                v1.setBatch(false);
                v1.setBrokerName("broker-a");
                SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(v1);
                RemotingCommand cmd = RemotingCommand.createRequestCommand(310, v2);
                cmd.setOpaque(0x0A0B0C0D);
                cmd.setVersion(VERSION);
                cmd.setLanguage(LanguageCode.JAVA);
                cmd.setBody("Hello RocketMQ 0".getBytes(StandardCharsets.UTF_8));
                return cmd;
            }));

        cases.add(new Case("send_message_v2_binary_body", "SEND_MESSAGE_V2 (310) with hand-set single-letter "
            + "ext fields inserted out of order (n, b, a, e, i, g, k) and body bytes 0x00..0xFF",
            () -> {
                RemotingCommand cmd = base(310, 0x11223344, 0);
                cmd.addExtField("n", "broker-a");
                cmd.addExtField("b", "TopicTest");
                cmd.addExtField("a", "group-binary");
                cmd.addExtField("e", "0");
                cmd.addExtField("i", "TAGS\u0001bin\u0002");
                cmd.addExtField("g", "1700000000000");
                cmd.addExtField("k", "false");
                cmd.setBody(range0to255());
                return cmd;
            }));

        cases.add(new Case("get_routeinfo_by_topic_not_exist", "response (flag 1) TOPIC_NOT_EXIST (17), "
            + "opaque 0x01020304, unicode remark, null extFields, empty body",
            () -> {
                RemotingCommand cmd = base(17, 0x01020304, 1);
                cmd.setRemark("路由 no route ✓");
                cmd.setBody(new byte[0]);
                return cmd;
            }));

        cases.add(new Case("notify_consumer_ids_changed", "one-way request (flag 2) "
            + "NOTIFY_CONSUMER_IDS_CHANGED (40), one ext field",
            () -> {
                RemotingCommand cmd = base(40, 0x00000102, 0);
                cmd.markOnewayRPC();
                cmd.addExtField("consumerGroup", "please_rename_unique_group_name_4");
                return cmd;
            }));

        cases.add(new Case("get_all_topic_list_from_nameserver", "request GET_ALL_TOPIC_LIST_FROM_NAMESERVER "
            + "(206) with null remark, null extFields, no body and the most negative opaque",
            () -> base(206, Integer.MIN_VALUE, 0)));

        cases.add(new Case("heart_beat", "response (flag 1) SUCCESS (0) to HEART_BEAT with negative opaque "
            + "-123456789, null remark, null extFields, no body",
            () -> base(0, -123456789, 1)));

        cases.add(new Case("put_kv_config", "PUT_KV_CONFIG (100) with an empty remark and an empty ext value "
            + "(ROCKETMQ writes length 0, which Java decodes back as null), unicode value",
            () -> {
                RemotingCommand cmd = base(100, 7, 0);
                cmd.setRemark("");
                cmd.addExtField("namespace", "ORDER_TOPIC_CONFIG");
                cmd.addExtField("key", "TopicTest");
                cmd.addExtField("value", "broker-a:4;ä✓");
                cmd.addExtField("empty", "");
                return cmd;
            }));

        cases.add(new Case("get_routeinfo_by_topic_success", "response (flag 1) SUCCESS with a JSON body "
            + "(route data text, as fastjson would send it) and a remark",
            () -> {
                RemotingCommand cmd = base(0, 0x01020304, 1);
                cmd.setRemark("ok");
                cmd.setBody(("{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},\"brokerName\":"
                    + "\"broker-a\",\"cluster\":\"DefaultCluster\"}],\"queueDatas\":[]}")
                    .getBytes(StandardCharsets.UTF_8));
                return cmd;
            }));
        return cases;
    }

    /** Exactly what NettyEncoder writes: fastEncodeHeader, then the body. */
    static byte[] wire(RemotingCommand cmd) {
        ByteBuf out = Unpooled.buffer();
        cmd.fastEncodeHeader(out);
        if (cmd.getBody() != null) {
            out.writeBytes(cmd.getBody());
        }
        byte[] bytes = new byte[out.readableBytes()];
        out.readBytes(bytes);
        return bytes;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: GenGolden <tests/golden dir>");
            System.exit(2);
        }
        Path root = Paths.get(args[0]);
        Path dir = root.resolve("remoting");
        Files.createDirectories(dir);
        Map<String, Object> entries = new TreeMap<>();
        for (Case c : cases()) {
            for (SerializeType type : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
                RemotingCommand cmd = c.build.get();
                cmd.setSerializeTypeCurrentRPC(type);
                byte[] frame = wire(cmd);
                RemotingCommand back = selfCheck(c.name, frame, cmd);
                String kind = cmd.isResponseType() ? "response" : "request";
                String file = c.name + "." + type.name().toLowerCase() + "." + kind + ".hex";
                String text = Annotate.annotate(file, c.note, frame);
                Files.write(dir.resolve(file), text.getBytes(StandardCharsets.UTF_8));
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("source", SOURCE);
                entry.put("sha256", sha256(frame));
                entry.put("length", frame.length);
                entry.put("note", c.note);
                entry.put("fields", fields(back, type));
                entries.put("remoting/" + file, entry);
                System.out.println("wrote " + dir.resolve(file) + " (" + frame.length + " bytes)");
            }
        }
        Manifest.merge(root.resolve("MANIFEST.json"), "remoting/", entries);
    }

    /** Decode our own frame with Java's decoder: it must give back what we encoded. */
    static RemotingCommand selfCheck(String name, byte[] frame, RemotingCommand sent) throws Exception {
        java.nio.ByteBuffer bb = java.nio.ByteBuffer.wrap(frame);
        int len = bb.getInt();
        if (len != frame.length - 4) {
            throw new IllegalStateException(name + ": frame length " + len + " != " + (frame.length - 4));
        }
        byte[] rest = new byte[len];
        bb.get(rest);
        RemotingCommand back = RemotingCommand.decode(rest);
        if (back.getCode() != sent.getCode() || back.getOpaque() != sent.getOpaque()
            || back.getFlag() != sent.getFlag() || back.getVersion() != sent.getVersion()) {
            throw new IllegalStateException(name + ": decode mismatch " + back + " vs " + sent);
        }
        return back;
    }

    /** The decoded view of the frame (what Java's decoder sees), for the Python tests. */
    static Map<String, Object> fields(RemotingCommand c, SerializeType type) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("serializeType", type.name());
        f.put("code", c.getCode());
        f.put("language", c.getLanguage() == null ? null : c.getLanguage().name());
        f.put("version", c.getVersion());
        f.put("opaque", c.getOpaque());
        f.put("flag", c.getFlag());
        f.put("remark", c.getRemark());
        HashMap<String, String> ext = c.getExtFields();
        f.put("extFields", ext == null ? null : new TreeMap<>(ext));
        byte[] body = c.getBody();
        f.put("bodyLength", body == null ? 0 : body.length);
        f.put("bodySha256", body == null ? null : sha256(body));
        return f;
    }

    static String sha256(byte[] b) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            StringBuilder sb = new StringBuilder();
            for (byte x : md.digest(b)) {
                sb.append(String.format("%02x", x & 0xff));
            }
            return sb.toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private GenGolden() {
    }
}

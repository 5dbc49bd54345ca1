package io.pyrmq.compat.scenarios;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Golden ACL signatures: requests signed by the official AclClientRPCHook (rocketmq-client 5.x,
 * rocketmq-acl 4.9.x), printed one per line as tab-separated hex so pyrmq's signer and verifier
 * are checked byte for byte (tests/unit/auth/test_signature.py). Run by
 * compat/java-tests/gen-acl-golden.sh.
 *
 * Line: secretKey, securityToken ("-" when none), body ("-" when none), then key=value pairs of
 * the ext fields the hook sent (Signature included), every string hex-encoded UTF-8.
 */
public final class AclGolden {
    private AclGolden() {
    }

    private static String hex(String s) {
        return hex(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    private static void emit(String ak, String sk, String token, Map<String, String> fields, byte[] body) {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(310, null);
        for (Map.Entry<String, String> e : fields.entrySet()) {
            cmd.addExtField(e.getKey(), e.getValue());
        }
        if (body != null) {
            cmd.setBody(body);
        }
        SessionCredentials creds = token == null ? new SessionCredentials(ak, sk) : new SessionCredentials(ak, sk, token);
        new AclClientRPCHook(creds).doBeforeRequest("127.0.0.1:10911", cmd);
        StringBuilder line = new StringBuilder();
        line.append(hex(sk)).append('\t').append(token == null ? "-" : hex(token)).append('\t');
        line.append(body == null ? "-" : hex(body));
        for (Map.Entry<String, String> e : cmd.getExtFields().entrySet()) {
            line.append('\t').append(hex(e.getKey())).append('=').append(hex(e.getValue()));
        }
        System.out.println(line);
    }

    private static Map<String, String> fields(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    public static void main(String[] args) {
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        emit("rocketmq2", "12345678", null, fields("a", "pg", "b", "TopicTest", "c", "TBW102", "d", "4", "e", "0",
            "f", "0", "g", "1700000000000", "h", "0", "i", "UNIQ_KEY\u00011\u0002TAGS\u0001t", "j", "0", "k", "false"),
            "hello".getBytes(StandardCharsets.UTF_8));
        emit("admin", "s3cr3t", null, fields(), null);
        emit("ak", "sk", "tok-en", fields("topic", "T", "consumerGroup", "G", "queueId", "3"), new byte[0]);
        emit("AK", "sk", null, fields("Zeta", "1", "alpha", "2", "_u", "3", "Beta", "4", "zz", "5", "a\u00e9", "6"), binary);
        emit("\u7528\u6237", "\u5bc6\u94a5-\u00fc", null, fields("topic", "\u4e3b\u9898", "empty", ""), "\u00e9\u00e8".getBytes(StandardCharsets.UTF_8));
        emit("rocketmq2", "12345678", null, fields("topic", "TopicTest", "_UNIQUE_KEY_QUERY", "true", "key", "k1"), null);
    }
}

package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * The producer's view of a broker whose disk is full (issue "Reliability", part Disk): sync sends
 * without retries until the broker answers SERVICE_NOT_AVAILABLE (14); then it writes the file
 * `refusedFile` and waits for `freedFile` (the test deletes its filler file and creates it), and
 * sends until one succeeds.
 *
 * <p>Prints "REFUSED code=<code> remark=<remark>", "OTHER <code or exception>" for any other
 * failure, "RESUMED ms=<ms after freedFile appeared>". Properties: namesrv, topic (required),
 * refusedFile, freedFile (required), bodySize (4096), timeoutSec (30), strict (true: any failure
 * other than 14 fails the case; the Java broker's reference run allows them).
 */
public class DiskFullTest {

    /** The broker's answer inside what the client threw (a failed send wraps it after its retries). */
    private static MQBrokerException brokerAnswer(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof MQBrokerException) {
                return (MQBrokerException) t;
            }
        }
        return null;
    }

    private static int code(Exception e) {
        MQBrokerException b = brokerAnswer(e);
        if (b != null) {
            return b.getResponseCode();
        }
        if (e instanceof MQClientException) {
            return ((MQClientException) e).getResponseCode();
        }
        return -1;
    }

    private static String remark(Exception e) {
        MQBrokerException b = brokerAnswer(e);
        return b != null ? b.getErrorMessage() : e.getMessage();
    }

    @Test
    public void refusedThenResumed() throws Exception {
        String topic = Props.str("topic", "");
        Path refusedFile = Paths.get(Props.str("refusedFile", ""));
        Path freedFile = Paths.get(Props.str("freedFile", ""));
        int bodySize = Props.integer("bodySize", 4096);
        long deadline = System.currentTimeMillis() + Props.integer("timeoutSec", 30) * 1000L;
        boolean strict = Boolean.parseBoolean(Props.str("strict", "true"));
        assertTrue(!topic.isEmpty(), "-Dtopic is required");

        byte[] body = new byte[bodySize];
        java.util.Arrays.fill(body, (byte) 'd');
        DefaultMQProducer p = Clients.producer(Props.namesrv(), "diskfull");
        p.setRetryTimesWhenSendFailed(0);
        Map<String, Integer> other = new TreeMap<>();
        try {
            int n = 0;
            String refused = null;
            while (refused == null) {
                if (System.currentTimeMillis() > deadline) {
                    fail("no SERVICE_NOT_AVAILABLE after " + n + " sends; other failures: " + other);
                }
                Message m = new Message(topic, "TagA", "k" + n, body);
                n++;
                try {
                    p.send(m);
                } catch (Exception e) {
                    int c = code(e);
                    if (c == 14) {
                        refused = remark(e);
                        System.out.println("REFUSED code=" + c + " remark=" + refused);
                    } else {
                        String what = c >= 0 ? "code " + c + " " + remark(e) : e.getClass().getSimpleName() + ": " + e.getMessage();
                        System.out.println("OTHER " + what);
                        other.merge(c >= 0 ? "code " + c : e.getClass().getSimpleName(), 1, Integer::sum);
                        Thread.sleep(50);
                    }
                }
            }
            if (strict) {
                assertEquals(Map.of(), other, "failures other than SERVICE_NOT_AVAILABLE");
            }
            Files.write(refusedFile, "refused".getBytes(StandardCharsets.UTF_8));
            while (!Files.exists(freedFile)) {
                if (System.currentTimeMillis() > deadline) {
                    fail("the test did not free the disk");
                }
                Thread.sleep(20);
            }
            long freed = System.currentTimeMillis();
            while (true) {
                if (System.currentTimeMillis() > deadline) {
                    fail("no send accepted after the disk was freed");
                }
                try {
                    SendResult r = p.send(new Message(topic, "TagA", "after", body));
                    assertEquals(SendStatus.SEND_OK, r.getSendStatus());
                    break;
                } catch (MQBrokerException | MQClientException e) {
                    Thread.sleep(50);
                }
            }
            System.out.println("RESUMED ms=" + (System.currentTimeMillis() - freed));
        } finally {
            p.shutdown();
        }
    }
}

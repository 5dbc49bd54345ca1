package io.pyrmq.compat.scenarios;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.remoting.netty.TlsSystemConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.command.MQAdminStartup;
import org.junit.jupiter.api.Test;

/**
 * TLS from the official client side, in one JVM started with -Dtls.enable=true and
 * -Dtls.config.file naming the right client certificates:
 * the quickstart round trip (producer and push consumer, QuickstartTest's checks), mqadmin
 * brokerStatus through MQAdminStartup, then one admin connection per refusal case, each with
 * its own tls.config.file (TlsHelper reads it again for every new client) or without TLS.
 * Prints "OUTCOME name=true|false" lines for the Python side to compare between servers.
 *
 * <p>Properties: namesrv, broker (host:port), tlsCases ("name=/path/file,..."), plus
 * QuickstartTest's.
 */
public class TlsTest {

    @Test
    public void tls() throws Exception {
        new QuickstartTest().quickstart();
        System.out.println("OUTCOME java client, right certificates=true");
        String broker = Props.str("broker", "");
        System.out.println("OUTCOME mqadmin, right certificates=" + mqadminBrokerStatus(broker));
        String rightFile = TlsSystemConfig.tlsConfigFile;
        for (String item : Props.str("tlsCases", "").split(",")) {
            if (item.isEmpty()) {
                continue;
            }
            String[] kv = item.split("=", 2);
            System.out.println("OUTCOME mqadmin, " + kv[0] + "=" + adminReaches(broker, kv[1], true));
        }
        System.out.println("OUTCOME mqadmin, plain=" + adminReaches(broker, rightFile, false));
    }

    /** The official mqadmin's brokerStatus, run in this JVM; true when it printed the status. */
    static boolean mqadminBrokerStatus(String broker) {
        PrintStream out = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            MQAdminStartup.main(new String[] {"brokerStatus", "-b", broker});
        } finally {
            System.setOut(out);
        }
        String text = buf.toString(StandardCharsets.UTF_8);
        System.out.println("mqadmin brokerStatus: " + text.lines().limit(3).reduce("", (a, b) -> a + b + " | "));
        return text.contains("brokerVersionDesc");
    }

    static boolean adminReaches(String broker, String tlsConfigFile, boolean useTls) {
        TlsSystemConfig.tlsConfigFile = tlsConfigFile;
        DefaultMQAdminExt admin = new DefaultMQAdminExt(5_000);
        admin.setNamesrvAddr(Props.namesrv());
        admin.setInstanceName("tls-case-" + System.nanoTime());
        admin.setUseTLS(useTls);
        try {
            admin.start();
            admin.fetchBrokerRuntimeStats(broker);
            return true;
        } catch (Exception e) {
            System.out.println("refused: " + e);
            return false;
        } finally {
            admin.shutdown();
        }
    }
}

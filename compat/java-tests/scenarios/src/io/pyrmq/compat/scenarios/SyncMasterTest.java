package io.pyrmq.compat.scenarios;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * The official producer against a SYNC_MASTER that needs a slave's ack (inSyncReplicas=2): every
 * send of `count` must come back with the SendStatus `expect` (SEND_OK while the slave replicates,
 * FLUSH_SLAVE_TIMEOUT while it is stopped). The msgIds go to the file `ids`.
 *
 * <p>Properties: namesrv, topic, count (20), expect (SEND_OK), ids (file), prefix (body prefix).
 */
public class SyncMasterTest {

    @Test
    public void send() throws Exception {
        String namesrv = Props.namesrv();
        String topic = Props.str("topic", "SyncMasterT");
        int count = Props.integer("count", 20);
        SendStatus expect = SendStatus.valueOf(Props.str("expect", "SEND_OK"));
        String prefix = Props.str("prefix", "sync");
        DefaultMQProducer producer = new DefaultMQProducer("sync_master_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("sync-master-" + System.nanoTime());
        producer.setSendMsgTimeout(15_000);
        producer.start();
        List<String> ids = new ArrayList<>();
        List<String> statuses = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, (prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
                SendResult r = producer.send(msg);
                statuses.add(r.getSendStatus().name());
                ids.add(r.getMsgId());
            }
        } finally {
            producer.shutdown();
        }
        Files.write(Paths.get(Props.str("ids", "ids.txt")), ids, StandardCharsets.UTF_8);
        System.out.printf("sync-master: statuses %s%n", statuses);
        for (String s : statuses) {
            assertEquals(expect.name(), s, "send statuses " + statuses);
        }
    }
}

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashSet;
import org.apache.rocketmq.controller.impl.event.AlterSyncStateSetEvent;
import org.apache.rocketmq.controller.impl.event.ApplyBrokerIdEvent;
import org.apache.rocketmq.controller.impl.event.CleanBrokerDataEvent;
import org.apache.rocketmq.controller.impl.event.ElectMasterEvent;
import org.apache.rocketmq.controller.impl.event.EventMessage;
import org.apache.rocketmq.controller.impl.event.EventSerializer;
import org.apache.rocketmq.controller.impl.event.UpdateBrokerAddressEvent;

/**
 * Writes one DLedger entry body per controller event, as RocketMQ 5.5.0's DLedgerController
 * appends it (EventSerializer), into the directory given as the only argument; pyrmq's
 * controller/event_serializer.py must write and read the same bytes.
 */
public class ControllerEventGolden {
    private static void write(Path dir, String name, EventMessage event) throws Exception {
        byte[] bytes = new EventSerializer().serialize(event);
        Files.write(dir.resolve(name + ".bin"), bytes);
        // read back by Java too: the golden must be something Java itself accepts
        EventMessage back = new EventSerializer().deserialize(bytes);
        System.out.println(name + " -> " + back);
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        Files.createDirectories(dir);
        write(dir, "alter-sync-state-set", new AlterSyncStateSetEvent("broker-a", new HashSet<>(Arrays.asList(2L, 1L, 10L))));
        write(dir, "apply-broker-id", new ApplyBrokerIdEvent("DefaultCluster", "broker-a", "127.0.0.1:30911", 2L, "127.0.0.1:30911;1764200000000"));
        write(dir, "elect-master", new ElectMasterEvent("broker-a", 2L));
        write(dir, "elect-master-none", new ElectMasterEvent(false, "broker-a"));
        write(dir, "clean-broker-data-ids", new CleanBrokerDataEvent("broker-a", new HashSet<>(Arrays.asList(1L, 3L))));
        write(dir, "clean-broker-data-all", new CleanBrokerDataEvent("broker-a", null));
        write(dir, "update-broker-address", new UpdateBrokerAddressEvent("DefaultCluster", "broker-a", "127.0.0.1:30915", 1L));
        write(dir, "non-ascii-name", new ElectMasterEvent("brökér<a>", 1L));
    }
}

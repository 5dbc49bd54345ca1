// Recovers a DLedger store directory with the official dledger 0.3.2 classes and prints what they
// see, one line per entry, so a store written by pyrmq can be checked against Java's reading.
// Usage: java -cp <servers classpath>:<dir of this class> DLedgerReadBack <storeBaseDir> <selfId> <dataFileSize> <indexFileSize>
import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.MemberState;
import io.openmessaging.storage.dledger.entry.DLedgerEntry;
import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;
import java.util.Base64;

public class DLedgerReadBack {
    public static void main(String[] args) throws Exception {
        DLedgerConfig config = new DLedgerConfig();
        config.setStoreBaseDir(args[0]);
        config.setSelfId(args[1]);
        config.setPeers(args[1] + "-127.0.0.1:40911");
        config.setMappedFileSizeForEntryData(Integer.parseInt(args[2]));
        config.setMappedFileSizeForEntryIndex(Integer.parseInt(args[3]));
        MemberState state = new MemberState(config);
        DLedgerMmapFileStore store = new DLedgerMmapFileStore(config, state);
        store.load();
        store.recover();
        System.out.println("term=" + state.currTerm() + " vote=" + state.currVoteFor() + " begin=" + store.getLedgerBeginIndex()
            + " end=" + store.getLedgerEndIndex() + " endTerm=" + store.getLedgerEndTerm() + " committed=" + store.getCommittedIndex());
        for (long i = store.getLedgerBeginIndex(); i >= 0 && i <= store.getLedgerEndIndex(); i++) {
            DLedgerEntry e = store.get(i);
            System.out.println(e.getIndex() + " " + e.getTerm() + " " + e.getPos() + " " + e.getSize() + " "
                + Base64.getEncoder().encodeToString(e.getBody()));
        }
        System.exit(0);
    }
}

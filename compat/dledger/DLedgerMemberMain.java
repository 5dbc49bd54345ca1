// One official DLedger 0.3.2 member (io.openmessaging.storage.dledger.DLedgerServer) for mixed
// Java/pyrmq groups in tests. Prints "STARTED" once it listens and one line per role change:
// "ROLE <term> <LEADER|FOLLOWER|CANDIDATE> <leaderId>". Runs until killed (SIGTERM shuts it down).
// Usage: java -cp <servers classpath>:<dir of this class> DLedgerMemberMain <group> <selfId> <peers>
//        <storeBaseDir> <dataFileSize> <indexFileSize> <heartBeatIntervalMs> <minVoteMs> <maxVoteMs>
//        [<preferredLeaderIds>]
import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.DLedgerLeaderElector;
import io.openmessaging.storage.dledger.DLedgerServer;
import io.openmessaging.storage.dledger.MemberState;

public class DLedgerMemberMain {
    public static void main(String[] args) throws Exception {
        DLedgerConfig config = new DLedgerConfig();
        config.setGroup(args[0]);
        config.setSelfId(args[1]);
        config.setPeers(args[2]);
        config.setStoreBaseDir(args[3]);
        config.setMappedFileSizeForEntryData(Integer.parseInt(args[4]));
        config.setMappedFileSizeForEntryIndex(Integer.parseInt(args[5]));
        config.setHeartBeatTimeIntervalMs(Integer.parseInt(args[6]));
        config.setMinVoteIntervalMs(Integer.parseInt(args[7]));
        config.setMaxVoteIntervalMs(Integer.parseInt(args[8]));
        if (args.length > 9) {
            config.setPreferredLeaderIds(args[9]);
        }
        final DLedgerServer server = new DLedgerServer(config);
        final MemberState state = server.getMemberState();
        server.getdLedgerLeaderElector().addRoleChangeHandler(new DLedgerLeaderElector.RoleChangeHandler() {
            @Override
            public void handle(long term, MemberState.Role role) {
                System.out.println("ROLE " + term + " " + role + " " + state.getLeaderId());
                System.out.flush();
            }

            @Override
            public void startup() {
            }

            @Override
            public void shutdown() {
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdown));
        server.startup();
        System.out.println("STARTED");
        System.out.flush();
        Thread.currentThread().join();
    }
}

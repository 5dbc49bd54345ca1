// Writes DLedger golden data with the official io.openmessaging.storage:dledger 0.3.2 classes and the
// fastjson 1.2.83 that a RocketMQ 5.5.0 broker puts on its classpath (compat/java-tests/servers).
// Usage: java -cp <servers classpath>:<dir of this class> DLedgerGolden <out dir>
// Writes <out>/store/dledger-n0/{data,index,checkpoint,currterm} and <out>/rpc/<name>.json.
import com.alibaba.fastjson.JSON;
import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.MemberState;
import io.openmessaging.storage.dledger.entry.DLedgerEntry;
import io.openmessaging.storage.dledger.protocol.*;
import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

public class DLedgerGolden {
    static void write(File out, String name, Object bean) throws Exception {
        Files.write(new File(out, name + ".json").toPath(), JSON.toJSONBytes(bean));
    }

    static <T extends RequestOrResponse> T base(T r) {
        r.setGroup("g1");
        r.setIds("n0", "n1", "n0");
        r.setTerm(0x0102030405L);
        return r;
    }

    static DLedgerEntry entry(long index, String body) {
        DLedgerEntry e = new DLedgerEntry();
        e.setMagic(1);
        e.setIndex(index);
        e.setTerm(3);
        e.setPos(0x0A0B0C);
        e.setChannel(7);
        e.setChainCrc(0x11223344);
        e.setBodyCrc(0x55667788);
        e.setBody(body.getBytes(StandardCharsets.UTF_8));
        e.computeSizeInBytes();
        return e;
    }

    public static void main(String[] args) throws Exception {
        File out = new File(args[0]);
        File rpc = new File(out, "rpc");
        rpc.mkdirs();

        // ---- the store: 1 KiB data files, 4-entry index files, term 3, voted for n0
        DLedgerConfig config = new DLedgerConfig();
        config.setStoreBaseDir(new File(out, "store").getAbsolutePath());
        config.setGroup("g1");
        config.setSelfId("n0");
        config.setPeers("n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913");
        config.setMappedFileSizeForEntryData(1024);
        config.setMappedFileSizeForEntryIndex(DLedgerMmapFileStore.INDEX_UNIT_SIZE * 4);
        MemberState state = new MemberState(config);
        state.changeToCandidate(3);
        state.nextTerm();  // knownMaxTermInGroup 3 -> currTerm 3
        state.setCurrVoteFor("n0");
        state.changeToLeader(3);
        DLedgerMmapFileStore store = new DLedgerMmapFileStore(config, state);
        store.startup();
        for (int i = 0; i < 10; i++) {
            DLedgerEntry e = new DLedgerEntry();
            byte[] body = new byte[100 + i * 10];
            Arrays.fill(body, (byte) ('a' + i));
            e.setBody(body);
            store.appendAsLeader(e);
        }
        store.updateCommittedIndex(3, 7);
        store.shutdown();

        // ---- the RPC bodies, one per class, values you can spot
        VoteRequest vote = base(new VoteRequest());
        vote.setLedgerEndIndex(0x0607080910L);
        vote.setLedgerEndTerm(2);
        write(rpc, "vote.request", vote);
        VoteResponse voteResp = base(new VoteResponse(vote));
        voteResp.voteResult(VoteResponse.RESULT.REJECT_ALREADY_VOTED);
        write(rpc, "vote.response", voteResp);
        write(rpc, "vote.response.default", new VoteResponse());
        write(rpc, "heartbeat.request", base(new HeartBeatRequest()));
        write(rpc, "heartbeat.response", base(new HeartBeatResponse()).code(DLedgerResponseCode.EXPIRED_TERM.getCode()));
        write(rpc, "heartbeat.request.default", new HeartBeatRequest());

        PushEntryRequest append = base(new PushEntryRequest());
        append.setCommitIndex(41);
        append.setType(PushEntryRequest.Type.APPEND);
        append.setEntry(entry(42, "hello"));
        write(rpc, "push.append.request", append);
        PushEntryRequest batch = base(new PushEntryRequest());
        batch.setCommitIndex(41);
        batch.addEntry(entry(42, "one"));
        batch.addEntry(entry(43, "two"));
        write(rpc, "push.batch_append.request", batch);
        PushEntryRequest commit = base(new PushEntryRequest());
        commit.setCommitIndex(43);
        commit.setType(PushEntryRequest.Type.COMMIT);
        write(rpc, "push.commit.request", commit);
        PushEntryRequest compare = base(new PushEntryRequest());
        compare.setType(PushEntryRequest.Type.COMPARE);
        compare.setEntry(entry(40, ""));
        write(rpc, "push.compare.request", compare);
        PushEntryRequest truncate = base(new PushEntryRequest());
        truncate.setCommitIndex(39);
        truncate.setType(PushEntryRequest.Type.TRUNCATE);
        truncate.setEntry(entry(40, "x"));
        write(rpc, "push.truncate.request", truncate);
        PushEntryResponse pushResp = base(new PushEntryResponse());
        pushResp.setIndex(42L);
        pushResp.setBeginIndex(5);
        pushResp.setEndIndex(44);
        pushResp.setCount(2);
        pushResp.setCode(DLedgerResponseCode.INCONSISTENT_STATE.getCode());
        write(rpc, "push.response", pushResp);
        write(rpc, "push.response.default", new PushEntryResponse());

        AppendEntryRequest appendReq = base(new AppendEntryRequest());
        appendReq.setBody("payload".getBytes(StandardCharsets.UTF_8));
        write(rpc, "append.request", appendReq);
        AppendEntryResponse appendResp = base(new AppendEntryResponse());
        appendResp.setIndex(42);
        appendResp.setPos(0x0A0B0C);
        write(rpc, "append.response", appendResp);

        PullEntriesRequest pull = base(new PullEntriesRequest());
        pull.setNodeId("n2");
        pull.setBeginIndex(17L);
        write(rpc, "pull.request", pull);
        PullEntriesResponse pullResp = base(new PullEntriesResponse());
        pullResp.getEntries().add(entry(17, "p"));
        write(rpc, "pull.response", pullResp);

        GetEntriesRequest get = base(new GetEntriesRequest());
        get.setBeginIndex(17L);
        get.setMaxSize(3);
        get.setIndexList(Arrays.asList(17L, 18L));
        write(rpc, "get.request", get);
        GetEntriesResponse getResp = base(new GetEntriesResponse());
        getResp.getEntries().add(entry(17, "g"));
        write(rpc, "get.response", getResp);

        write(rpc, "metadata.request", base(new MetadataRequest()));
        MetadataResponse meta = base(new MetadataResponse());
        Map<String, String> peers = new LinkedHashMap<>();
        peers.put("n0", "127.0.0.1:40911");
        peers.put("n1", "127.0.0.1:40912");
        meta.setPeers(peers);
        write(rpc, "metadata.response", meta);

        LeadershipTransferRequest transfer = base(new LeadershipTransferRequest());
        transfer.setTransferId("n0");
        transfer.setTransfereeId("n2");
        transfer.setTakeLeadershipLedgerIndex(99);
        write(rpc, "leadership_transfer.request", transfer);
        write(rpc, "leadership_transfer.response", base(new LeadershipTransferResponse()).code(DLedgerResponseCode.TAKE_LEADERSHIP_FAILED.getCode()));
        System.exit(0);
    }
}

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONWriter.Feature;

import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.body.*;
import org.apache.rocketmq.remoting.protocol.route.*;

/** Prints NameServer bodies as written by the official rocketmq-remoting jar: "<name> <hex>" per line. */
public class CaptureNamesrvBodies {
    static void out(String name, byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        System.out.println(name + " " + sb);
    }
    static DataVersion dv(long counter, long ts) {
        DataVersion v = new DataVersion();
        v.setCounter(new AtomicLong(counter));
        v.setTimestamp(ts);
        v.setStateVersion(0L);
        return v;
    }
    public static void main(String[] a) throws Exception {
        QueueData qd = new QueueData();
        qd.setBrokerName("broker-a"); qd.setReadQueueNums(4); qd.setWriteQueueNums(4); qd.setPerm(6); qd.setTopicSysFlag(0);
        HashMap<Long, String> addrs = new HashMap<>();
        addrs.put(0L, "192.168.1.10:10911"); addrs.put(1L, "192.168.1.11:10911");
        BrokerData bd = new BrokerData("DefaultCluster", "broker-a", addrs);
        TopicRouteData trd = new TopicRouteData();
        trd.setQueueDatas(new ArrayList<>(List.of(qd)));
        trd.setBrokerDatas(new ArrayList<>(List.of(bd)));
        trd.setFilterServerTable(new HashMap<>());
        out("topic_route_data.plain", trd.encode());
        out("topic_route_data.standard", trd.encode(Feature.BrowserCompatible, Feature.MapSortField));
        trd.setOrderTopicConf("broker-a:4;broker-b:4");
        BrokerData bz = new BrokerData("DefaultCluster", "broker-a", addrs);
        bz.setZoneName("zone-1"); bz.setEnableActingMaster(true);
        trd.setBrokerDatas(new ArrayList<>(List.of(bz)));
        out("topic_route_data_order_zone.plain", trd.encode());
        out("topic_route_data_order_zone.standard", trd.encode(Feature.BrowserCompatible, Feature.MapSortField));

        ClusterInfo ci = new ClusterInfo();
        Map<String, BrokerData> bat = new HashMap<>();
        bat.put("broker-a", bd);
        HashMap<Long, String> addrsB = new HashMap<>(); addrsB.put(0L, "192.168.1.20:10911");
        bat.put("broker-b", new BrokerData("DefaultCluster", "broker-b", addrsB));
        ci.setBrokerAddrTable(bat);
        Map<String, Set<String>> cat = new HashMap<>();
        cat.put("DefaultCluster", new HashSet<>(List.of("broker-a", "broker-b")));
        ci.setClusterAddrTable(cat);
        out("cluster_info", ci.encode());

        TopicList tl = new TopicList();
        tl.getTopicList().add("TopicTest");
        out("topic_list", tl.encode());
        TopicList st = new TopicList();
        st.getTopicList().add("DefaultCluster"); st.setBrokerAddr("192.168.1.10:10911");
        out("topic_list_broker_addr", st.encode());

        KVTable kv = new KVTable();
        kv.getTable().put("TopicOrder", "broker-a:4;broker-b:4");
        out("kv_table", kv.encode());
        out("data_version", dv(3, 1700000000000L).encode());

        TopicConfig t1 = new TopicConfig("TopicTest", 4, 4, 6);
        TopicConfig t2 = new TopicConfig("TBW102", 8, 8, 7);
        TopicConfig t3 = new TopicConfig("TopicAttr", 2, 2, 6, 0);
        t3.getAttributes().put("+message.type", "FIFO");
        t3.setOrder(true);
        RegisterBrokerBody rbb = new RegisterBrokerBody();
        rbb.getTopicConfigSerializeWrapper().setDataVersion(dv(1, 1700000000000L));
        rbb.getTopicConfigSerializeWrapper().setMappingDataVersion(dv(1, 1700000000000L));
        rbb.getTopicConfigSerializeWrapper().getTopicConfigTable().put("TopicTest", t1);
        rbb.getTopicConfigSerializeWrapper().getTopicConfigTable().put("TBW102", t2);
        rbb.getTopicConfigSerializeWrapper().getTopicConfigTable().put("TopicAttr", t3);
        out("register_broker_body", rbb.encode());
        out("register_broker_body.compressed", rbb.encode(true));
        out("topic_config.encode", t3.encode().getBytes(StandardCharsets.UTF_8));

        TopicConfigSerializeWrapper w = new TopicConfigSerializeWrapper();
        w.setDataVersion(dv(2, 1700000000001L));
        w.getTopicConfigTable().put("TopicTest", t1);
        out("topic_config_serialize_wrapper", w.encode());

        BrokerMemberGroup g = new BrokerMemberGroup("DefaultCluster", "broker-a");
        g.getBrokerAddrs().putAll(addrs);
        GetBrokerMemberGroupResponseBody gb = new GetBrokerMemberGroupResponseBody();
        gb.setBrokerMemberGroup(g);
        out("get_broker_member_group", gb.encode());

        // escaping experiments (not golden for the NS, used to learn the dialect)
        Map<String, String> esc = new TreeMap<>();
        esc.put("s", "a/b\"c\\d\u0001\b\t\n\f\r\u007f\u00e9\u4e2d\u2028");
        out("escape.plain", JSON.toJSONString(esc).getBytes(StandardCharsets.UTF_8));
        out("escape.browser", JSON.toJSONString(esc, Feature.BrowserCompatible, Feature.MapSortField).getBytes(StandardCharsets.UTF_8));
        Map<String, Object> big = new TreeMap<>();
        big.put("big", 9007199254740993L); big.put("ok", 9007199254740991L); big.put("neg", -9007199254740992L);
        out("big.browser", JSON.toJSONString(big, Feature.BrowserCompatible).getBytes(StandardCharsets.UTF_8));
    }
}

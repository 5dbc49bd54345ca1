package gotests

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

var uniqKeyPattern = regexp.MustCompile(`^[0-9A-Fa-f]{32}$`)

// TestRouteAndSend: the Go client reads the route of an existing topic from
// the name server and sync-sends MESSAGE_COUNT messages through it.
//
// Environment: NAMESRV_ADDR, TOPIC (must exist on a registered broker);
// optional MESSAGE_COUNT (16), EXPECT_BROKER_NAME, EXPECT_BROKER_ADDR (the
// address the client must resolve from brokerAddrs, and the store host in
// every offsetMsgId), EXPECT_WRITE_QUEUES, PRODUCER_GROUP, RUN_ID.
func TestRouteAndSend(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()

	topic := requireEnv(t, "TOPIC")
	count := envInt(t, "MESSAGE_COUNT", 16)
	run := runID()
	wantBroker := envStr("EXPECT_BROKER_NAME", "")
	wantAddr := envStr("EXPECT_BROKER_ADDR", "")
	wantQueues := envInt(t, "EXPECT_WRITE_QUEUES", -1)

	// 1. The route as the client parses it.
	queues := publishQueues(ctx, t, topic)
	routeQueues := map[primitive.MessageQueue]bool{}
	for _, q := range queues {
		if q.Topic != topic {
			t.Errorf("route queue %s has topic %q, want %q", q, q.Topic, topic)
		}
		if wantBroker != "" && q.BrokerName != wantBroker {
			t.Errorf("route queue %s is on broker %q, want %q", q, q.BrokerName, wantBroker)
		}
		if routeQueues[*q] {
			t.Errorf("route lists queue %s twice", q)
		}
		routeQueues[*q] = true
	}
	if wantQueues >= 0 && len(queues) != wantQueues {
		t.Errorf("route has %d writable queues (%s), want %d", len(queues), describeQueues(queues), wantQueues)
	}
	perBroker := map[string]int{}
	for _, q := range queues {
		perBroker[q.BrokerName]++
	}
	for _, q := range queues {
		if q.QueueId < 0 || q.QueueId >= perBroker[q.BrokerName] {
			t.Errorf("route queue %s: id outside 0..%d", q, perBroker[q.BrokerName]-1)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// 2. Sync sends through that route.
	rec := &sendRecorder{}
	p := startProducer(t, envStr("PRODUCER_GROUP", "pyrmq_go_compat_producer"), rec)

	used := map[primitive.MessageQueue]int{}
	lastOffset := map[primitive.MessageQueue]int64{}
	seenIDs := map[string]bool{}
	for i := 0; i < count; i++ {
		msg := testMessage(topic, run, i)
		res, err := p.SendSync(ctx, msg)
		if err != nil {
			t.Fatalf("send %d/%d: %v", i+1, count, err)
		}
		where := fmt.Sprintf("send %d/%d (%s)", i+1, count, res)
		if res.Status != primitive.SendOK {
			t.Errorf("%s: status %d, want SEND_OK", where, res.Status)
		}
		if !uniqKeyPattern.MatchString(res.MsgID) {
			t.Errorf("%s: msgId %q is not a 32-digit client id", where, res.MsgID)
		}
		if res.MsgID != msg.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex) {
			t.Errorf("%s: msgId %q differs from the message's UNIQ_KEY %q", where, res.MsgID,
				msg.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex))
		}
		if seenIDs[res.MsgID] {
			t.Errorf("%s: msgId %s repeated", where, res.MsgID)
		}
		seenIDs[res.MsgID] = true
		if res.MessageQueue == nil {
			t.Fatalf("%s: no message queue in result", where)
		}
		mq := *res.MessageQueue
		if !routeQueues[mq] {
			t.Errorf("%s: queue %s is not in the route (%s)", where, mq.String(), describeQueues(queues))
		}
		if res.QueueOffset < 0 {
			t.Errorf("%s: negative queue offset %d", where, res.QueueOffset)
		}
		if prev, ok := lastOffset[mq]; ok && res.QueueOffset <= prev {
			t.Errorf("%s: queue offset %d not after the previous one on that queue (%d)", where, res.QueueOffset, prev)
		}
		lastOffset[mq] = res.QueueOffset
		used[mq]++

		storeHost, _, err := decodeOffsetMsgID(res.OffsetMsgID)
		if err != nil {
			t.Errorf("%s: %v", where, err)
		}
		trace, ok := rec.last()
		if !ok {
			t.Fatalf("%s: producer interceptor saw nothing", where)
		}
		if trace.Queue != mq {
			t.Errorf("%s: interceptor saw queue %s, result says %s", where, trace.Queue.String(), mq.String())
		}
		if trace.BrokerAddr == "" {
			t.Errorf("%s: client resolved no broker address for %s", where, mq.BrokerName)
		}
		if wantAddr != "" && trace.BrokerAddr != wantAddr {
			t.Errorf("%s: client sent to %q, want %q (route brokerAddrs)", where, trace.BrokerAddr, wantAddr)
		}
		if wantAddr != "" && err == nil && storeHost != wantAddr {
			t.Errorf("%s: offsetMsgId store host %s, want %s", where, storeHost, wantAddr)
		}
		if i == 0 {
			t.Logf("first send: %s via %s, offsetMsgId store host %s", res, trace.BrokerAddr, storeHost)
		}
	}

	// The stock selector is round robin, so with at least one message per
	// queue every queue of the route must have accepted a send.
	if count >= len(queues) {
		for _, q := range queues {
			if used[*q] == 0 {
				t.Errorf("no send landed on route queue %s (used: %v)", q, usedSummary(used))
			}
		}
	}
	t.Logf("sent %d messages (run %s) over %d queues: %s", count, run, len(used), usedSummary(used))
}

func usedSummary(used map[primitive.MessageQueue]int) string {
	s := ""
	for q, n := range used {
		s += q.BrokerName + "/" + strconv.Itoa(q.QueueId) + "=" + strconv.Itoa(n) + " "
	}
	return s
}

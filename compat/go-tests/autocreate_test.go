package gotests

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestSendAutoCreateTopic: sending to a topic the name server does not know.
// The Go producer then borrows the route of TBW102 (createTopicKey, 4 queues
// by default), the broker creates the topic on the first send
// (autoCreateTopicEnable) and registers it, and the name server must then
// serve the new topic's own route.
//
// Environment: NAMESRV_ADDR, TOPIC (must NOT exist yet); optional
// MESSAGE_COUNT (8), EXPECT_BROKER_NAME, EXPECT_WRITE_QUEUES (queues of the
// registered route), ROUTE_WAIT_SECONDS, PRODUCER_GROUP, RUN_ID.
func TestSendAutoCreateTopic(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()

	topic := requireEnv(t, "TOPIC")
	count := envInt(t, "MESSAGE_COUNT", 8)
	run := runID()
	wantBroker := envStr("EXPECT_BROKER_NAME", "")
	wantQueues := envInt(t, "EXPECT_WRITE_QUEUES", -1)

	// The topic must be unknown to the name server, or this case tests nothing.
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(nameServers(t))))
	if err != nil {
		t.Fatalf("NewAdmin: %v", err)
	}
	queues, err := adm.FetchPublishMessageQueues(ctx, topic)
	within(t, "admin Close", 5*time.Second, adm.Close)
	if !errors.Is(err, rmqerrors.ErrTopicNotExist) {
		t.Fatalf("before the first send the name server must answer TOPIC_NOT_EXIST for %s; got err=%v queues=%s",
			topic, err, describeQueues(queues))
	}

	rec := &sendRecorder{}
	p := startProducer(t, envStr("PRODUCER_GROUP", "pyrmq_go_compat_producer"), rec)
	for i := 0; i < count; i++ {
		res, err := p.SendSync(ctx, testMessage(topic, run, i))
		if err != nil {
			t.Fatalf("send %d/%d to the not yet existing topic %s (via the TBW102 route): %v", i+1, count, topic, err)
		}
		if res.Status != primitive.SendOK || res.MessageQueue == nil {
			t.Fatalf("send %d/%d: %s", i+1, count, res)
		}
		if wantBroker != "" && res.MessageQueue.BrokerName != wantBroker {
			t.Errorf("send %d/%d went to broker %q, want %q", i+1, count, res.MessageQueue.BrokerName, wantBroker)
		}
		if i == 0 {
			trace, _ := rec.last()
			t.Logf("first send: %s via %s", res, trace.BrokerAddr)
		}
	}

	// Now the broker has registered the topic; its own route must be served.
	routed := publishQueues(ctx, t, topic)
	for _, q := range routed {
		if wantBroker != "" && q.BrokerName != wantBroker {
			t.Errorf("registered route queue %s is on broker %q, want %q", q, q.BrokerName, wantBroker)
		}
	}
	if wantQueues >= 0 && len(routed) != wantQueues {
		t.Errorf("registered route has %d writable queues (%s), want %d", len(routed), describeQueues(routed), wantQueues)
	}
}

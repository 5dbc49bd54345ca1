package gotests

import (
	"bytes"
	"context"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestPushConsume: the Go client sends MESSAGE_COUNT messages, then a push
// consumer in a fresh group (CONSUME_FROM_FIRST_OFFSET) must receive every
// one of them with body, tag, keys and user properties intact.
//
// Environment: NAMESRV_ADDR, TOPIC; optional MESSAGE_COUNT (16),
// CONSUMER_GROUP (default: a new group per run), PRODUCER_GROUP, RUN_ID,
// CASE_TIMEOUT_SECONDS (90).
func TestPushConsume(t *testing.T) {
	ctx, cancel := caseContext(t, 90*time.Second)
	defer cancel()

	topic := requireEnv(t, "TOPIC")
	count := envInt(t, "MESSAGE_COUNT", 16)
	run := runID()
	group := envStr("CONSUMER_GROUP", "pyrmq_go_compat_consumer_"+run)

	publishQueues(ctx, t, topic)

	// Send first: a new group starting from the first offset must still see them.
	rec := &sendRecorder{}
	p := startProducer(t, envStr("PRODUCER_GROUP", "pyrmq_go_compat_producer"), rec)
	sent := map[string]*primitive.Message{}
	for i := 0; i < count; i++ {
		msg := testMessage(topic, run, i)
		res, err := p.SendSync(ctx, msg)
		if err != nil {
			t.Fatalf("send %d/%d: %v", i+1, count, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("send %d/%d: %s", i+1, count, res)
		}
		sent[strconv.Itoa(i)] = msg
	}
	t.Logf("sent %d messages, run %s; consuming with group %s", count, run, group)

	var (
		mu       sync.Mutex
		received = map[string]*primitive.MessageExt{}
		dups     int
		foreign  int
		allIn    = make(chan struct{})
		closed   bool
	)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer(nameServers(t)),
		consumer.WithGroupName(group),
		consumer.WithInstance("pyrmq-compat-"+group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering),
	)
	if err != nil {
		t.Fatalf("NewPushConsumer: %v", err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.GetProperty("pyrmq_run") != run {
					foreign++ // older messages in the topic (other runs)
					continue
				}
				seq := m.GetProperty("pyrmq_seq")
				if _, ok := received[seq]; ok {
					dups++
					continue
				}
				received[seq] = m
			}
			if len(received) >= count && !closed {
				closed = true
				close(allIn)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("consumer Start: %v", err)
	}
	defer within(t, "consumer Shutdown", 15*time.Second, c.Shutdown)

	select {
	case <-allIn:
	case <-ctx.Done():
	}

	mu.Lock()
	defer mu.Unlock()
	t.Logf("received %d/%d of this run, %d duplicates, %d messages of other runs", len(received), count, dups, foreign)
	var missing []int
	for i := 0; i < count; i++ {
		if _, ok := received[strconv.Itoa(i)]; !ok {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		sort.Ints(missing)
		t.Fatalf("push consumer did not receive seq %v within the deadline", missing)
	}
	for seq, want := range sent {
		got := received[seq]
		if !bytes.Equal(got.Body, want.Body) {
			t.Errorf("seq %s: body %q, want %q", seq, got.Body, want.Body)
		}
		if got.Topic != topic {
			t.Errorf("seq %s: topic %q, want %q", seq, got.Topic, topic)
		}
		if got.GetTags() != want.GetTags() {
			t.Errorf("seq %s: tags %q, want %q", seq, got.GetTags(), want.GetTags())
		}
		if got.GetKeys() != want.GetKeys() {
			t.Errorf("seq %s: keys %q, want %q", seq, got.GetKeys(), want.GetKeys())
		}
		wantID := want.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
		if got.MsgId != wantID {
			t.Errorf("seq %s: msgId %q, want the producer's UNIQ_KEY %q", seq, got.MsgId, wantID)
		}
		if got.OffsetMsgId == "" || got.QueueOffset < 0 || got.StoreHost == "" || got.BornHost == "" {
			t.Errorf("seq %s: incomplete MessageExt: offsetMsgId=%q queueOffset=%d storeHost=%q bornHost=%q",
				seq, got.OffsetMsgId, got.QueueOffset, got.StoreHost, got.BornHost)
		}
	}
}

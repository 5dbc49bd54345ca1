package gotests

// Broker-core cases for the Go client: tag filtering on subscription and
// ordered (sharding-key) consumption with three orderly consumers in one group.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// startPushConsumer starts a clustering push consumer (from the first offset)
// whose callback is cb; it is shut down when the test ends.
func startPushConsumer(t *testing.T, group, instance, topic, expr string, orderly bool,
	cb func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error),
	extra ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	opts := append([]consumer.Option{
		consumer.WithNameServer(nameServers(t)),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumerOrder(orderly),
	}, extra...)
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		t.Fatalf("NewPushConsumer %s: %v", instance, err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr}, cb); err != nil {
		t.Fatalf("Subscribe %s %q: %v", instance, expr, err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("consumer Start %s: %v", instance, err)
	}
	t.Cleanup(func() { within(t, "consumer Shutdown "+instance, 15*time.Second, c.Shutdown) })
	return c
}

func sortedKeys(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// TestTagFilter: MESSAGE_COUNT (40) messages tagged TagA..TagD; a group
// subscribed with "TagA || TagC" receives exactly the TagA and TagC ones,
// a group subscribed with "*" receives all of them.
func TestTagFilter(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	count := envInt(t, "MESSAGE_COUNT", 40)
	run := runID()
	publishQueues(ctx, t, topic)

	tags := []string{"TagA", "TagB", "TagC", "TagD"}
	p := startProducer(t, "pyrmq_go_tags_"+run, &sendRecorder{})
	sentTag := map[int]string{}
	wantAC := map[int]string{}
	for i := 0; i < count; i++ {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("tag filter run=%s seq=%d", run, i)))
		msg.WithTag(tags[i%4])
		msg.WithKeys([]string{fmt.Sprintf("tag-%s-%d", run, i)})
		msg.WithProperty("pyrmq_run", run)
		msg.WithProperty("pyrmq_seq", strconv.Itoa(i))
		res, err := p.SendSync(ctx, msg)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
		sentTag[i] = tags[i%4]
		if i%4 == 0 || i%4 == 2 {
			wantAC[i] = tags[i%4]
		}
	}

	var mu sync.Mutex
	got := map[string]map[int]string{"ac": {}, "all": {}}
	collect := func(name string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.GetProperty("pyrmq_run") != run {
					continue
				}
				seq, _ := strconv.Atoi(m.GetProperty("pyrmq_seq"))
				got[name][seq] = m.GetTags()
			}
			return consumer.ConsumeSuccess, nil
		}
	}
	startPushConsumer(t, "pyrmq_go_tag_ac_"+run, "pyrmq-go-tag-ac-"+run, topic, "TagA || TagC", false, collect("ac"))
	startPushConsumer(t, "pyrmq_go_tag_all_"+run, "pyrmq-go-tag-all-"+run, topic, "*", false, collect("all"))

	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["ac"]) >= len(wantAC) && len(got["all"]) >= count
	}
	for !done() && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // anything the filter wrongly lets through has time to arrive
	mu.Lock()
	defer mu.Unlock()
	check := func(name string, want map[int]string) {
		for seq, tag := range want {
			if g, ok := got[name][seq]; !ok {
				t.Errorf("%s: seq %d (%s) not received", name, seq, tag)
			} else if g != tag {
				t.Errorf("%s: seq %d tag %q, want %q", name, seq, g, tag)
			}
		}
		for seq, tag := range got[name] {
			if _, ok := want[seq]; !ok {
				t.Errorf("%s: seq %d (%s) should have been filtered out", name, seq, tag)
			}
		}
		t.Logf("%s: received %d, want %d: %v", name, len(got[name]), len(want), sortedKeys(got[name]))
	}
	check("ac", wantAC)
	check("all", sentTag)
}

// fixedSplit gives consumer `index` of `n` the queues whose id is index mod n,
// whoever else is in the group, so no queue ever changes hands. Client v2.1.2
// never unlocks an orderly queue it gives up (pushConsumer.
// removeUnnecessaryMessageQueue: "TODO orderly"), so a queue that moves while
// consumers join stalls until the broker's lock expires (60 s).
func fixedSplit(index, n int) consumer.AllocateStrategy {
	return func(_ string, _ string, mqAll []*primitive.MessageQueue, _ []string) []*primitive.MessageQueue {
		var mine []*primitive.MessageQueue
		for _, mq := range mqAll {
			if mq.QueueId%n == index {
				mine = append(mine, mq)
			}
		}
		return mine
	}
}

// TestOrderlyConsume: ORDERS (10) order ids x STEPS (10) steps sent with a
// hash queue selector on the sharding key; three orderly consumers in one
// group, each locking (LOCK_BATCH_MQ) a fixed share of the queues. Every
// order's messages go to one queue, every step arrives, and no step is ever
// delivered before its predecessor (a redelivery of an earlier step is
// tolerated; a first delivery out of sequence is not).
func TestOrderlyConsume(t *testing.T) {
	ctx, cancel := caseContext(t, 90*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	orders := envInt(t, "ORDERS", 10)
	steps := envInt(t, "STEPS", 10)
	run := runID()
	publishQueues(ctx, t, topic)
	group := "pyrmq_go_orderly_" + run

	var mu sync.Mutex
	maxSeen := map[int]int{}
	seen := map[[2]int]bool{}
	consumerOf := map[int]map[string]bool{}
	var violations []string
	cb := func(name string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.GetProperty("pyrmq_run") != run {
					continue
				}
				order, _ := strconv.Atoi(m.GetProperty("order"))
				step, _ := strconv.Atoi(m.GetProperty("step"))
				if consumerOf[order] == nil {
					consumerOf[order] = map[string]bool{}
				}
				consumerOf[order][name] = true
				key := [2]int{order, step}
				if seen[key] {
					continue // redelivery
				}
				last, ok := maxSeen[order]
				if !ok {
					last = -1
				}
				if step != last+1 {
					violations = append(violations, fmt.Sprintf("order %d: step %d first delivered after step %d (%s)", order, step, last, name))
				}
				seen[key] = true
				if step > last {
					maxSeen[order] = step
				}
			}
			return consumer.ConsumeSuccess, nil
		}
	}
	for n := 0; n < 3; n++ {
		name := fmt.Sprintf("c%d", n)
		startPushConsumer(t, group, "pyrmq-go-ord-"+name+"-"+run, topic, "*", true, cb(name),
			consumer.WithStrategy(fixedSplit(n, 3)))
	}
	// Let the three lock their queues before anything flows.
	time.Sleep(time.Duration(envInt(t, "SETTLE_SECONDS", 3)) * time.Second)

	p, err := rocketmq.NewProducer(
		producer.WithNameServer(nameServers(t)),
		producer.WithGroupName("pyrmq_go_ordp_"+run),
		producer.WithInstanceName("pyrmq-go-ordp-"+run),
		producer.WithRetry(1),
		producer.WithSendMsgTimeout(5*time.Second),
		producer.WithQueueSelector(producer.NewHashQueueSelector()),
	)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer Start: %v", err)
	}
	defer within(t, "producer Shutdown", 10*time.Second, p.Shutdown)
	queueOf := map[int]int{}
	for step := 0; step < steps; step++ {
		for order := 0; order < orders; order++ {
			msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("order %d step %d", order, step)))
			msg.WithTag("Ord")
			msg.WithShardingKey(fmt.Sprintf("order-%s-%d", run, order))
			msg.WithProperty("pyrmq_run", run)
			msg.WithProperty("order", strconv.Itoa(order))
			msg.WithProperty("step", strconv.Itoa(step))
			res, err := p.SendSync(ctx, msg)
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("send order %d step %d: %v %v", order, step, res, err)
			}
			if q, ok := queueOf[order]; ok && q != res.MessageQueue.QueueId {
				t.Fatalf("order %d went to queue %d and %d", order, q, res.MessageQueue.QueueId)
			}
			queueOf[order] = res.MessageQueue.QueueId
		}
	}
	complete := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= orders*steps
	}
	for !complete() && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	for order := 0; order < orders; order++ {
		if got := maxSeen[order]; got != steps-1 || len(consumerOf[order]) == 0 {
			t.Errorf("order %d: last step seen %d of %d", order, got, steps-1)
		}
		owner := fmt.Sprintf("c%d", queueOf[order]%3)
		if len(consumerOf[order]) != 1 || !consumerOf[order][owner] {
			t.Errorf("order %d on queue %d: consumed by %v, want only %s (the queue's owner)",
				order, queueOf[order], consumerOf[order], owner)
		}
	}
	t.Logf("orders -> queue %v; %d distinct messages; consumers per order %v", queueOf, len(seen), consumerOf)
}

package gotests

// Message semantics A with the Go client v2.1.2: delay levels and consumer
// retry (the two of issue 5's features this client version supports).

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func semAPushConsumer(t *testing.T, group, topic string,
	fn func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error), opts ...consumer.Option) {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNameServer(nameServers(t)),
		consumer.WithGroupName(group),
		consumer.WithInstance("pyrmq-compat-" + group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering),
	}, opts...)
	c, err := rocketmq.NewPushConsumer(all...)
	if err != nil {
		t.Fatalf("NewPushConsumer: %v", err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, fn); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("consumer Start: %v", err)
	}
	t.Cleanup(func() { within(t, "consumer Shutdown", 10*time.Second, c.Shutdown) })
}

// TestDelayLevel: messages sent with WithDelayTimeLevel(1..3) arrive no
// earlier than born + the level's delay and at most LATE_MS (1000) after the
// send returned + the delay. DELAYS_MS lists the broker's levels in ms.
func TestDelayLevel(t *testing.T) {
	ctx, cancel := caseContext(t, 90*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	var delays []int64
	for _, s := range strings.Split(requireEnv(t, "DELAYS_MS"), ",") {
		v, _ := strconv.ParseInt(s, 10, 64)
		delays = append(delays, v)
	}
	late := int64(envInt(t, "LATE_MS", 1000))
	run := runID()
	publishQueues(ctx, t, topic)

	var mu sync.Mutex
	arrived := map[string]int64{}
	born := map[string]int64{}
	semAPushConsumer(t, "pyrmq_go_delay_"+run, topic,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			now := time.Now().UnixMilli()
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.GetProperty("pyrmq_run") != run {
					continue
				}
				seq := m.GetProperty("pyrmq_seq")
				if _, ok := arrived[seq]; !ok {
					arrived[seq] = now
					born[seq] = m.BornTimestamp
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	time.Sleep(4 * time.Second) // rebalance: the consumer owns the queues before the sends

	p := startProducer(t, "pyrmq_go_delay_p", &sendRecorder{})
	sentDone := map[string]int64{}
	levelOf := map[string]int{}
	for i := 0; i < 6; i++ {
		level := i%3 + 1
		msg := testMessage(topic, run, i)
		msg.WithDelayTimeLevel(level)
		res, err := p.SendSync(ctx, msg)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
		seq := strconv.Itoa(i)
		sentDone[seq] = time.Now().UnixMilli()
		levelOf[seq] = level
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d of 6 delayed messages", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for seq, at := range arrived {
		d := delays[levelOf[seq]-1]
		if at < born[seq]+d {
			t.Errorf("message %s (level %d) arrived %d ms before its delay", seq, levelOf[seq], born[seq]+d-at)
		}
		if at > sentDone[seq]+d+late {
			t.Errorf("message %s (level %d) arrived %d ms after its delay", seq, levelOf[seq], at-sentDone[seq]-d)
		}
		t.Logf("message %s level %d: %d ms after born", seq, levelOf[seq], at-born[seq])
	}
}

// TestRetryLater: ConsumeRetryLater twice, then ConsumeSuccess: the message
// is delivered 3 times with reconsumeTimes 0, 1, 2 and never again.
func TestRetryLater(t *testing.T) {
	ctx, cancel := caseContext(t, 90*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	run := runID()
	publishQueues(ctx, t, topic)

	var mu sync.Mutex
	var times []int32
	semAPushConsumer(t, "pyrmq_go_retry_"+run, topic,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.GetProperty("pyrmq_run") != run {
					return consumer.ConsumeSuccess, nil
				}
				times = append(times, m.ReconsumeTimes)
			}
			if len(times) <= 2 {
				return consumer.ConsumeRetryLater, nil
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithConsumeMessageBatchMaxSize(1), consumer.WithRebalanceLockInterval(time.Second))
	time.Sleep(3 * time.Second)
	p := startProducer(t, "pyrmq_go_retry_p", &sendRecorder{})
	if res, err := p.SendSync(ctx, testMessage(topic, run, 0)); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send: %v %v", res, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(times)
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("deliveries so far (reconsumeTimes): %v", times)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(4 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(times) != 3 || times[0] != 0 || times[1] != 1 || times[2] != 2 {
		t.Fatalf("reconsumeTimes of the deliveries: %v, want [0 1 2]", times)
	}
	t.Logf("deliveries (reconsumeTimes): %v", times)
}

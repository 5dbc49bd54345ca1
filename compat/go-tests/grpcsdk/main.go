// Command grpcsdk drives the official RocketMQ 5.x gRPC SDK for Go
// (github.com/apache/rocketmq-clients/golang/v5) against one gRPC endpoint.
//
// Usage: grpcsdk [flags] ENDPOINT PREFIX STEP...
//
// Each step (simple, fifo, delay) uses the topic PREFIX-STEP and the group
// PREFIX-STEP-g, which must exist with the right message.type. The steps run
// concurrently; every observation is one line "@@ {json}" on stdout with the
// step name, the event kind and the wall clock in ms ("now"), so a test can
// tell exactly which steps a server passes. The exit code is 0 only when every
// step finished without an error.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

var (
	count       = flag.Int("count", 3, "messages per step (fifo sends twice as many)")
	invisible   = flag.Duration("invisible", 10*time.Second, "invisible duration of received messages")
	await       = flag.Duration("await", 3*time.Second, "long-polling await duration of Receive")
	stepTimeout = flag.Duration("step-timeout", 60*time.Second, "time limit of one step")
	delay       = flag.Duration("delay", 3*time.Second, "how far ahead the delay step's delivery timestamp is")
	ssl         = flag.Bool("ssl", false, "dial the endpoint with TLS (pyrmq serves plaintext gRPC by default)")
)

var outMu sync.Mutex

func nowMs() int64 { return time.Now().UnixMilli() }

// emit prints one event line; fields beyond step, ev and now come from kv.
func emit(step, ev string, kv map[string]any) {
	m := map[string]any{"step": step, "ev": ev, "now": nowMs()}
	for k, v := range kv {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("@@ %s\n", b)
}

func config(endpoint, group string) *rmq.Config {
	return &rmq.Config{
		Endpoint:      endpoint,
		ConsumerGroup: group,
		Credentials:   &credentials.SessionCredentials{},
	}
}

func describe(mv *rmq.MessageView) map[string]any {
	m := map[string]any{
		"id":      mv.GetMessageId(),
		"body":    string(mv.GetBody()),
		"keys":    strings.Join(mv.GetKeys(), ","),
		"props":   mv.GetProperties(),
		"attempt": mv.GetDeliveryAttempt(),
	}
	if t := mv.GetTag(); t != nil {
		m["tag"] = *t
	}
	if g := mv.GetMessageGroup(); g != nil {
		m["group"] = *g
	}
	if ts := mv.GetDeliveryTimestamp(); ts != nil {
		m["deliveryTs"] = ts.UnixMilli()
	}
	return m
}

type stepCtx struct {
	name     string
	topic    string
	group    string
	endpoint string
	producer rmq.Producer
	deadline time.Time
}

// consumer starts a SimpleConsumer of the step's group on its topic (all tags).
func (s *stepCtx) consumer() (rmq.SimpleConsumer, error) {
	c, err := rmq.NewSimpleConsumer(config(s.endpoint, s.group),
		rmq.WithSimpleAwaitDuration(*await),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{s.topic: rmq.SUB_ALL}),
	)
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// receive polls until handle says it is done or the step's time runs out.
// Empty polls come back as errors from the SDK (MESSAGE_NOT_FOUND); they are
// retried, and the last one is reported on a time-out.
func (s *stepCtx) receive(c rmq.SimpleConsumer, handle func(*rmq.MessageView) (bool, error)) error {
	var last error
	for time.Now().Before(s.deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), *await+10*time.Second)
		mvs, err := c.Receive(ctx, 16, *invisible)
		cancel()
		if err != nil {
			last = err
			if !strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
				emit(s.name, "receiveError", map[string]any{"err": err.Error()})
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		for _, mv := range mvs {
			done, err := handle(mv)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
	}
	return fmt.Errorf("step timed out (last receive error: %v)", last)
}

func (s *stepCtx) ack(c rmq.SimpleConsumer, mv *rmq.MessageView) error {
	if err := c.Ack(context.Background(), mv); err != nil {
		return fmt.Errorf("ack %s: %w", mv.GetMessageId(), err)
	}
	emit(s.name, "acked", map[string]any{"id": mv.GetMessageId()})
	return nil
}

func (s *stepCtx) send(msg *rmq.Message, extra map[string]any) (string, error) {
	receipts, err := s.producer.Send(context.Background(), msg)
	if err != nil {
		return "", err
	}
	if len(receipts) != 1 {
		return "", fmt.Errorf("send: %d receipts", len(receipts))
	}
	kv := map[string]any{"id": receipts[0].MessageID, "body": string(msg.Body), "offset": receipts[0].Offset}
	for k, v := range extra {
		kv[k] = v
	}
	emit(s.name, "sent", kv)
	return receipts[0].MessageID, nil
}

// stepSimple: tag, keys and a user property; all acked but the last sent,
// which must come back (deliveryAttempt 2) after its invisible duration.
func stepSimple(s *stepCtx) error {
	c, err := s.consumer()
	if err != nil {
		return err
	}
	defer c.GracefulStop()
	var ids []string
	for i := 0; i < *count; i++ {
		msg := &rmq.Message{Topic: s.topic, Body: []byte(fmt.Sprintf("simple-%d", i))}
		msg.SetTag("TagA")
		msg.SetKeys(fmt.Sprintf("key-%d", i), fmt.Sprintf("k2-%d", i))
		msg.AddProperty("color", fmt.Sprintf("c%d", i))
		id, err := s.send(msg, nil)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	withheld := ids[len(ids)-1]
	acked := map[string]bool{}
	held := false
	return s.receive(c, func(mv *rmq.MessageView) (bool, error) {
		emit(s.name, "received", describe(mv))
		if mv.GetMessageId() == withheld && !held {
			held = true
			emit(s.name, "withheld", map[string]any{"id": withheld})
			return false, nil
		}
		if err := s.ack(c, mv); err != nil {
			return false, err
		}
		acked[mv.GetMessageId()] = true
		return len(acked) == len(ids), nil
	})
}

// stepFifo: one message group; received (one at a time) in send order.
func stepFifo(s *stepCtx) error {
	c, err := s.consumer()
	if err != nil {
		return err
	}
	defer c.GracefulStop()
	n := 2 * *count
	for i := 0; i < n; i++ {
		msg := &rmq.Message{Topic: s.topic, Body: []byte(fmt.Sprintf("fifo-%d", i))}
		msg.SetMessageGroup("mg-1")
		if _, err := s.send(msg, nil); err != nil {
			return err
		}
	}
	got := 0
	return s.receive(c, func(mv *rmq.MessageView) (bool, error) {
		emit(s.name, "received", describe(mv))
		if err := s.ack(c, mv); err != nil {
			return false, err
		}
		got++
		return got == n, nil
	})
}

// stepDelay: one message with a delivery timestamp ahead.
func stepDelay(s *stepCtx) error {
	c, err := s.consumer()
	if err != nil {
		return err
	}
	defer c.GracefulStop()
	at := time.UnixMilli(nowMs() + delay.Milliseconds())
	msg := &rmq.Message{Topic: s.topic, Body: []byte("delay-0")}
	msg.SetDelayTimestamp(at)
	if _, err := s.send(msg, map[string]any{"deliverAt": at.UnixMilli()}); err != nil {
		return err
	}
	return s.receive(c, func(mv *rmq.MessageView) (bool, error) {
		emit(s.name, "received", describe(mv))
		return true, s.ack(c, mv)
	})
}

var steps = map[string]func(*stepCtx) error{"simple": stepSimple, "fifo": stepFifo, "delay": stepDelay}

func main() {
	flag.Parse()
	if flag.NArg() < 3 {
		fmt.Fprintln(os.Stderr, "usage: grpcsdk [flags] ENDPOINT PREFIX STEP...")
		os.Exit(2)
	}
	rmq.EnableSsl = *ssl
	endpoint, prefix, names := flag.Arg(0), flag.Arg(1), flag.Args()[2:]
	var topics []string
	for _, name := range names {
		if steps[name] == nil {
			known := make([]string, 0, len(steps))
			for k := range steps {
				known = append(known, k)
			}
			sort.Strings(known)
			fmt.Fprintf(os.Stderr, "unknown step %q (known: %s)\n", name, strings.Join(known, ", "))
			os.Exit(2)
		}
		topics = append(topics, prefix+"-"+name)
	}
	producer, err := rmq.NewProducer(config(endpoint, ""), rmq.WithTopics(topics...))
	if err == nil {
		err = producer.Start()
	}
	if err != nil {
		emit("_", "done", map[string]any{"ok": false, "err": "producer: " + err.Error()})
		os.Exit(1)
	}
	deadline := time.Now().Add(*stepTimeout)
	var wg sync.WaitGroup
	failed := make(chan string, len(names))
	for _, name := range names {
		s := &stepCtx{
			name: name, topic: prefix + "-" + name, group: prefix + "-" + name + "-g",
			endpoint: endpoint, producer: producer, deadline: deadline,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := steps[s.name](s); err != nil {
				emit(s.name, "done", map[string]any{"ok": false, "err": err.Error()})
				failed <- s.name
				return
			}
			emit(s.name, "done", map[string]any{"ok": true})
		}()
	}
	wg.Wait()
	_ = producer.GracefulStop()
	if len(failed) > 0 {
		os.Exit(1)
	}
}

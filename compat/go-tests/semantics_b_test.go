package gotests

// Message semantics B with the Go client v2.1.2: transactions with the
// broker's check-back, and SQL92 property filters (issue 5, items 4 and 5).
//
// Go v2.1.2 has no heartbeat-interval option: a client heartbeats 1 s after
// its start (only to brokers whose route it knows by then) and every 30 s
// after that, and a broker checks a half message back only with a producer
// channel it learnt from a heartbeat. The transaction cases therefore start
// their push consumer with the producer's instance name: both share one
// client, and the consumer's start heartbeat carries the producer group too.
// The request-reply case does the same for its requester.

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

// txLocal is the local transaction outcome of a message, by its key.
func txLocal(key string) primitive.LocalTransactionState {
	switch key {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnknowState
}

// txOnCheck is the answer to the broker's check-back, by key.
func txOnCheck(key string) primitive.LocalTransactionState {
	switch key {
	case "unknown-commit", "restart":
		return primitive.CommitMessageState
	case "unknown-rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnknowState
}

// txListener records every check-back (count and the topic it named).
type txListener struct {
	answerChecks bool
	mu           sync.Mutex
	checks       map[string]int
	checkedTopic map[string]string
}

func newTxListener(answerChecks bool) *txListener {
	return &txListener{answerChecks: answerChecks, checks: map[string]int{}, checkedTopic: map[string]string{}}
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return txLocal(m.GetKeys())
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := m.GetKeys()
	l.checks[key]++
	l.checkedTopic[key] = m.Topic
	if !l.answerChecks {
		return primitive.UnknowState
	}
	return txOnCheck(key)
}

func (l *txListener) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[key]
}

func (l *txListener) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.checks)
}

func startTxProducer(t *testing.T, group, instance string, l *txListener) rocketmq.TransactionProducer {
	t.Helper()
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNameServer(nameServers(t)),
		producer.WithGroupName(group),
		producer.WithInstanceName(instance),
		producer.WithRetry(1),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatalf("NewTransactionProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("transaction producer Start: %v", err)
	}
	return p
}

func sendTx(ctx context.Context, t *testing.T, p rocketmq.TransactionProducer, topic, key string) {
	t.Helper()
	msg := primitive.NewMessage(topic, []byte("tx "+key))
	msg.WithTag("TagTx")
	msg.WithKeys([]string{key})
	msg.WithProperty("k", key)
	res, err := p.SendMessageInTransaction(ctx, msg)
	if err != nil {
		t.Fatalf("half message %s: %v", key, err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("half message %s: send status %v", key, res.Status)
	}
	if res.State != txLocal(key) {
		t.Fatalf("half message %s: local state %v, want %v", key, res.State, txLocal(key))
	}
}

// keyedMessages collects delivered messages by key.
type keyedMessages struct {
	mu  sync.Mutex
	got map[string]*primitive.MessageExt
}

func (k *keyedMessages) listener(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range msgs {
		k.got[m.GetKeys()] = m
	}
	return consumer.ConsumeSuccess, nil
}

func (k *keyedMessages) has(keys ...string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range keys {
		if _, ok := k.got[key]; !ok {
			return false
		}
	}
	return true
}

func (k *keyedMessages) keys() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for key := range k.got {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

// semBPushConsumer starts a clustering push consumer from the first offset
// with the given selector; cleanup shuts it down.
func semBPushConsumer(t *testing.T, group, instance, topic string, sel consumer.MessageSelector,
	fn func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) {
	t.Helper()
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer(nameServers(t)),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering),
	)
	if err != nil {
		t.Fatalf("NewPushConsumer: %v", err)
	}
	if err := c.Subscribe(topic, sel, fn); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("consumer Start: %v", err)
	}
	t.Cleanup(func() { within(t, "consumer Shutdown", 10*time.Second, c.Shutdown) })
}

func waitFor(t *testing.T, d time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTransaction: commit -> delivered; rollback -> never delivered; UNKNOW
// -> the broker checks back and the listener's answer (commit or rollback)
// is applied. Committed messages keep body, tag, keys, user properties and
// the half message's TRAN_MSG / PGROUP, as the Java broker leaves them.
func TestTransaction(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	run := runID()
	wait := time.Duration(envInt(t, "TX_WAIT_SECONDS", 40)) * time.Second
	publishQueues(ctx, t, topic)

	group := "pyrmq_go_txp_" + run
	instance := "pyrmq-go-tx-" + run
	l := newTxListener(true)
	p := startTxProducer(t, group, instance, l)
	defer within(t, "producer Shutdown", 10*time.Second, p.Shutdown)
	for _, key := range []string{"commit", "rollback", "unknown-commit", "unknown-rollback"} {
		sendTx(ctx, t, p, topic, key)
	}
	got := &keyedMessages{got: map[string]*primitive.MessageExt{}}
	semBPushConsumer(t, "pyrmq_go_txc_"+run, instance, topic,
		consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, got.listener)
	waitFor(t, wait, func() bool { return got.has("commit", "unknown-commit") && l.count("unknown-rollback") > 0 },
		func() string { return fmt.Sprintf("consumed %v, checks %v", got.keys(), l) })
	time.Sleep(3 * time.Second) // a rolled-back message would show up by now

	if keys := fmt.Sprint(got.keys()); keys != "[commit unknown-commit]" {
		t.Errorf("delivered %s, want [commit unknown-commit]", keys)
	}
	if n := l.count("commit"); n != 0 {
		t.Errorf("a committed message was checked %d time(s)", n)
	}
	if n := l.count("rollback"); n != 0 {
		t.Errorf("a rolled-back message was checked %d time(s)", n)
	}
	if n := l.count("unknown-commit"); n < 1 {
		t.Errorf("UNKNOW (unknown-commit) was never checked back")
	}
	l.mu.Lock()
	if tp := l.checkedTopic["unknown-commit"]; tp != topic {
		t.Errorf("the check named topic %q, want the real topic %q", tp, topic)
	}
	l.mu.Unlock()
	got.mu.Lock()
	defer got.mu.Unlock()
	for key, m := range got.got {
		if m.Topic != topic || string(m.Body) != "tx "+key || m.GetTags() != "TagTx" || m.GetProperty("k") != key {
			t.Errorf("%s delivered as topic=%q body=%q tag=%q k=%q", key, m.Topic, m.Body, m.GetTags(), m.GetProperty("k"))
		}
		if v := m.GetProperty("TRAN_MSG"); v != "true" {
			t.Errorf("%s: TRAN_MSG=%q, want true", key, v)
		}
		if v := m.GetProperty("PGROUP"); v != group {
			t.Errorf("%s: PGROUP=%q, want %q", key, v, group)
		}
	}
	t.Logf("delivered %v; checks %v", fmt.Sprint(mapKeys(got.got)), l)
}

func mapKeys(m map[string]*primitive.MessageExt) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestTransactionProducerRestart: the producer that sent an UNKNOW half
// message shuts down; another producer instance of the same group gets the
// check-back, commits, and the message is delivered.
func TestTransactionProducerRestart(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	run := runID()
	wait := time.Duration(envInt(t, "TX_WAIT_SECONDS", 40)) * time.Second
	publishQueues(ctx, t, topic)

	group := "pyrmq_go_txr_" + run
	first := newTxListener(false)
	p1 := startTxProducer(t, group, "pyrmq-go-txr-a-"+run, first)
	sendTx(ctx, t, p1, topic, "restart")
	within(t, "first producer Shutdown", 10*time.Second, p1.Shutdown)

	instance := "pyrmq-go-txr-b-" + run
	second := newTxListener(true)
	p2 := startTxProducer(t, group, instance, second)
	defer within(t, "second producer Shutdown", 10*time.Second, p2.Shutdown)
	got := &keyedMessages{got: map[string]*primitive.MessageExt{}}
	semBPushConsumer(t, "pyrmq_go_txr_c_"+run, instance, topic,
		consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, got.listener)
	waitFor(t, wait, func() bool { return got.has("restart") },
		func() string { return fmt.Sprintf("consumed %v, checks first %v second %v", got.keys(), first, second) })
	if second.count("restart") < 1 {
		t.Errorf("the new producer of the group was never asked (checks: first %v second %v)", first, second)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if b := string(got.got["restart"].Body); b != "tx restart" {
		t.Errorf("body %q, want %q", b, "tx restart")
	}
	t.Logf("checks: first producer %v, second producer %v", first, second)
}

// TestSQL92Filter: a mixed stream (a = i%9, missing every 7th, "abc" every
// 11th; b alternates x/y); a consumer with `a BETWEEN 3 AND 5 AND b = 'x'`
// receives exactly the matching messages, one with `TRUE` receives all.
func TestSQL92Filter(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	run := runID()
	count := envInt(t, "MESSAGE_COUNT", 180)
	sql := envStr("SQL", "a BETWEEN 3 AND 5 AND b = 'x'")
	wait := time.Duration(envInt(t, "SQL_WAIT_SECONDS", 40)) * time.Second
	publishQueues(ctx, t, topic)

	want := map[int]bool{}
	p := startProducer(t, "pyrmq_go_sql_p", &sendRecorder{})
	for i := 0; i < count; i++ {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("sql %d", i)))
		msg.WithTag(fmt.Sprintf("T%d", i%3))
		msg.WithKeys([]string{fmt.Sprintf("s-%d", i)})
		msg.WithProperty("idx", strconv.Itoa(i))
		b := "y"
		if i%2 == 0 {
			b = "x"
		}
		msg.WithProperty("b", b)
		switch {
		case i%11 == 0:
			msg.WithProperty("a", "abc")
		case i%7 != 0:
			a := i % 9
			msg.WithProperty("a", strconv.Itoa(a))
			if a >= 3 && a <= 5 && b == "x" {
				want[i] = true
			}
		}
		if res, err := p.SendSync(ctx, msg); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
	}

	collect := func(mu *sync.Mutex, into map[int]bool) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				i, err := strconv.Atoi(m.GetProperty("idx"))
				if err != nil {
					t.Errorf("message without idx: %v", m)
					continue
				}
				into[i] = true
			}
			return consumer.ConsumeSuccess, nil
		}
	}
	var mu sync.Mutex
	got, all := map[int]bool{}, map[int]bool{}
	semBPushConsumer(t, "pyrmq_go_sql_"+run, "pyrmq-go-sql-"+run, topic,
		consumer.MessageSelector{Type: consumer.SQL92, Expression: sql}, collect(&mu, got))
	semBPushConsumer(t, "pyrmq_go_sqlall_"+run, "pyrmq-go-sqlall-"+run, topic,
		consumer.MessageSelector{Type: consumer.SQL92, Expression: "TRUE"}, collect(&mu, all))
	waitFor(t, wait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range want {
			if !got[i] {
				return false
			}
		}
		return len(all) >= count
	}, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("%q got %d/%d, TRUE got %d/%d", sql, len(got), len(want), len(all), count)
	})
	time.Sleep(1500 * time.Millisecond) // anything the filter wrongly lets through has time to show up

	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(sortedInts(got)) != fmt.Sprint(sortedInts(want)) {
		t.Errorf("%q received %v, want %v", sql, sortedInts(got), sortedInts(want))
	}
	if len(all) != count {
		t.Errorf("TRUE received %d of %d", len(all), count)
	}
	t.Logf("matching %d of %d: %v", len(want), count, sortedInts(want))
}

func sortedInts(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// TestRequestReply: Producer.Request with a 3 s timeout gets the reply a
// push consumer sends with CreateReplyMessage (SEND_REPLY_MESSAGE, then the
// broker's PUSH_REPLY_MESSAGE_TO_CLIENT to the requester); a request nobody
// answers fails with the client's timeout after 3 s, and the producer keeps
// working. v2.1.2 quirks worked around as an application would:
// CreateReplyMessage parses the body as properties and leaves the reply's
// body empty (set again here); Request through an interceptor returns
// before the reply (so the requester has none); Request heartbeats only for
// a topic the name server does not know, so the broker would not know the
// requester's channel ("channel of <client id> not found" on both brokers):
// the requester shares its client with the consumer, whose start heartbeat
// names it.
func TestRequestReply(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	run := runID()
	timeout := time.Duration(envInt(t, "REQUEST_TIMEOUT_MS", 3000)) * time.Millisecond
	publishQueues(ctx, t, topic)

	// the requester first: the consumer below shares its client (see the file comment)
	instance := "pyrmq-go-rr-" + run
	requester, err := rocketmq.NewProducer(
		producer.WithNameServer(nameServers(t)),
		producer.WithGroupName("pyrmq_go_rr_requester"),
		producer.WithInstanceName(instance),
		producer.WithRetry(1),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	if err := requester.Start(); err != nil {
		t.Fatalf("requester Start: %v", err)
	}
	defer within(t, "requester Shutdown", 10*time.Second, requester.Shutdown)
	replier := startProducer(t, "pyrmq_go_rr_replier", &sendRecorder{})
	var mu sync.Mutex
	var replyErrs []string
	semBPushConsumer(t, "pyrmq_go_rr_"+run, instance, topic,
		consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if m.GetProperty("noreply") == "true" {
					continue
				}
				reply, err := consumer.CreateReplyMessage(m, nil)
				if err == nil {
					reply.Body = []byte("reply to " + string(m.Body))
					reply.WithProperty("seq", m.GetProperty("seq"))
					var res *primitive.SendResult
					res, err = replier.SendSync(context.Background(), reply)
					if err == nil && res.Status != primitive.SendOK {
						err = fmt.Errorf("reply send status %v", res.Status)
					}
				}
				if err != nil {
					mu.Lock()
					replyErrs = append(replyErrs, fmt.Sprintf("%s: %v", m.GetProperty("seq"), err))
					mu.Unlock()
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	time.Sleep(3 * time.Second) // rebalance: the consumer owns the queues before the requests

	request := func(seq string, noReply bool) (*primitive.Message, *primitive.Message, time.Duration, error) {
		msg := primitive.NewMessage(topic, []byte("request "+seq))
		msg.WithProperty("seq", seq)
		if noReply {
			msg.WithProperty("noreply", "true")
		}
		start := time.Now()
		reply, err := requester.Request(ctx, timeout, msg)
		return msg, reply, time.Since(start), err
	}
	for i := 0; i < 3; i++ {
		seq := strconv.Itoa(i)
		msg, reply, took, err := request(seq, false)
		if err != nil || reply == nil {
			mu.Lock()
			t.Fatalf("request %s: reply %v, error %v after %s (replier errors %v)", seq, reply, err, took, replyErrs)
		}
		if string(reply.Body) != "reply to request "+seq || reply.GetProperty("seq") != seq {
			t.Errorf("request %s: reply body %q seq %q", seq, reply.Body, reply.GetProperty("seq"))
		}
		if c := reply.GetProperty("CORRELATION_ID"); c == "" || c != msg.GetProperty("CORRELATION_ID") {
			t.Errorf("request %s: reply CORRELATION_ID %q, request's %q", seq, c, msg.GetProperty("CORRELATION_ID"))
		}
		if took >= timeout {
			t.Errorf("request %s took %s", seq, took)
		}
		t.Logf("request %s answered in %s", seq, took)
	}
	_, reply, took, err := request("silent", true)
	if err == nil || reply != nil {
		t.Fatalf("unanswered request: reply %v, error %v", reply, err)
	}
	if took < timeout || took > timeout+2*time.Second {
		t.Errorf("unanswered request failed after %s, want its %s timeout", took, timeout)
	}
	t.Logf("unanswered request: %v after %s", err, took)
	if _, reply, _, err := request("after", false); err != nil || reply == nil || string(reply.Body) != "reply to request after" {
		t.Errorf("request after the timeout: reply %v, error %v", reply, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(replyErrs) > 0 {
		t.Errorf("replier errors: %v", replyErrs)
	}
}

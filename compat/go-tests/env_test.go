package gotests

// Shared plumbing for the compat cases: settings from the environment,
// bounded contexts, a producer that records where each send really went, and
// shutdowns that cannot hang the binary.

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func TestMain(m *testing.M) {
	// The client logs every heartbeat and rebalance at info level; keep the
	// output readable unless the caller asked for a level explicitly.
	if os.Getenv("ROCKETMQ_GO_LOG_LEVEL") == "" {
		rlog.SetLogLevel("warn")
	}
	os.Exit(m.Run())
}

// requireEnv returns a mandatory setting or stops the test with a clear reason.
func requireEnv(t *testing.T, name string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		t.Fatalf("environment variable %s is required (see compat/go-tests/README.md)", name)
	}
	return v
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("environment variable %s=%q is not an integer", name, v)
	}
	return n
}

func envStr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

// runID tells this run's messages apart from anything already in the topic.
func runID() string {
	return envStr("RUN_ID", strconv.FormatInt(time.Now().UnixNano(), 36))
}

// caseContext bounds a whole case: CASE_TIMEOUT_SECONDS, default def.
func caseContext(t *testing.T, def time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	d := time.Duration(envInt(t, "CASE_TIMEOUT_SECONDS", int(def/time.Second))) * time.Second
	return context.WithTimeout(context.Background(), d)
}

func nameServers(t *testing.T) primitive.NamesrvAddr {
	t.Helper()
	raw := requireEnv(t, "NAMESRV_ADDR")
	addrs := primitive.NamesrvAddr(strings.Split(raw, ";"))
	if err := addrs.Check(); err != nil {
		t.Fatalf("NAMESRV_ADDR=%q rejected by the Go client: %v", raw, err)
	}
	return addrs
}

// within runs fn and gives up after d, so a client shutdown that blocks on a
// dead connection only costs a log line.
func within(t *testing.T, what string, d time.Duration, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Logf("%s: still running after %s, abandoned", what, d)
	}
}

// sendTrace is what the producer interceptor saw for one send: the broker
// address the client resolved from the route's brokerAddrs and the queue it
// picked.
type sendTrace struct {
	BrokerAddr string
	Queue      primitive.MessageQueue
}

type sendRecorder struct {
	mu     sync.Mutex
	traces []sendTrace
}

func (r *sendRecorder) interceptor(ctx context.Context, req, reply interface{}, next primitive.Invoker) error {
	err := next(ctx, req, reply)
	if pc, ok := primitive.GetProducerCtx(ctx); ok {
		r.mu.Lock()
		r.traces = append(r.traces, sendTrace{BrokerAddr: pc.BrokerAddr, Queue: pc.MQ})
		r.mu.Unlock()
	}
	return err
}

func (r *sendRecorder) last() (sendTrace, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.traces) == 0 {
		return sendTrace{}, false
	}
	return r.traces[len(r.traces)-1], true
}

func startProducer(t *testing.T, group string, rec *sendRecorder) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer(nameServers(t)),
		producer.WithGroupName(group),
		producer.WithInstanceName("pyrmq-compat-"+group),
		producer.WithRetry(1),
		producer.WithSendMsgTimeout(5*time.Second),
		producer.WithInterceptor(rec.interceptor),
	)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer Start: %v", err)
	}
	t.Cleanup(func() { within(t, "producer Shutdown", 10*time.Second, p.Shutdown) })
	return p
}

// publishQueues (after creating the topic when CREATE_TOPIC_BROKER_ADDR is
// set) asks the name server for the topic's route through the
// client's admin API (GET_ROUTEINFO_BY_TOPIC, decoded by the client's own
// route parser). It retries while the topic is unknown, up to ROUTE_WAIT_SECONDS,
// because a broker's registration can trail the fixture by a heartbeat.
func publishQueues(ctx context.Context, t *testing.T, topic string) []*primitive.MessageQueue {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(nameServers(t))))
	if err != nil {
		t.Fatalf("NewAdmin: %v", err)
	}
	defer within(t, "admin Close", 5*time.Second, adm.Close)

	// Optional setup through the Go admin API (UPDATE_AND_CREATE_TOPIC sent
	// to the broker, which then registers the topic with its name servers).
	// The client ignores the response code, so the route check below is what
	// tells whether it worked.
	if brokerAddr := envStr("CREATE_TOPIC_BROKER_ADDR", ""); brokerAddr != "" {
		n := envInt(t, "CREATE_TOPIC_QUEUES", 4)
		err := adm.CreateTopic(ctx,
			admin.WithTopicCreate(topic),
			admin.WithBrokerAddrCreate(brokerAddr),
			admin.WithReadQueueNums(n),
			admin.WithWriteQueueNums(n),
		)
		if err != nil {
			t.Fatalf("create topic %s on %s with %d queues: %v", topic, brokerAddr, n, err)
		}
		t.Logf("asked broker %s to create topic %s with %d queues", brokerAddr, topic, n)
	}

	wait := time.Duration(envInt(t, "ROUTE_WAIT_SECONDS", 10)) * time.Second
	deadline := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		queues, err := adm.FetchPublishMessageQueues(ctx, topic)
		if err == nil && len(queues) > 0 {
			t.Logf("route of %s after %d attempt(s): %s", topic, attempt, describeQueues(queues))
			return queues
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("no writable route for topic %s from name server after %d attempt(s) in %s: err=%v queues=%d",
				topic, attempt, wait, err, len(queues))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func describeQueues(queues []*primitive.MessageQueue) string {
	perBroker := map[string][]int{}
	var order []string
	for _, q := range queues {
		if _, ok := perBroker[q.BrokerName]; !ok {
			order = append(order, q.BrokerName)
		}
		perBroker[q.BrokerName] = append(perBroker[q.BrokerName], q.QueueId)
	}
	parts := make([]string, 0, len(order))
	for _, b := range order {
		parts = append(parts, fmt.Sprintf("%s%v", b, perBroker[b]))
	}
	return strings.Join(parts, " ")
}

// decodeOffsetMsgID splits a broker-made message id (store host IPv4, port,
// commit log offset; 16 bytes as 32 hex digits) into its parts.
// Java: MessageDecoder#createMessageId.
func decodeOffsetMsgID(id string) (addr string, offset int64, err error) {
	raw, err := hex.DecodeString(id)
	if err != nil {
		return "", 0, fmt.Errorf("offsetMsgId %q is not hex: %w", id, err)
	}
	if len(raw) != 16 {
		return "", 0, fmt.Errorf("offsetMsgId %q has %d bytes, want 16 (IPv4 store host)", id, len(raw))
	}
	ip := net.IPv4(raw[0], raw[1], raw[2], raw[3])
	port := int(raw[4])<<24 | int(raw[5])<<16 | int(raw[6])<<8 | int(raw[7])
	var off int64
	for _, b := range raw[8:] {
		off = off<<8 | int64(b)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port)), off, nil
}

// testMessage builds message i of a run: alternating tags, two keys and two
// user properties, and a body that names the run and index.
func testMessage(topic, run string, i int) *primitive.Message {
	body := []byte(fmt.Sprintf("pyrmq go compat run=%s seq=%d", run, i))
	msg := primitive.NewMessage(topic, body)
	msg.WithTag([]string{"TagA", "TagB"}[i%2])
	msg.WithKeys([]string{fmt.Sprintf("key-%s-%d", run, i), "pyrmq-go"})
	msg.WithProperty("pyrmq_run", run)
	msg.WithProperty("pyrmq_seq", strconv.Itoa(i))
	return msg
}

package gotests

import (
	"context"
	"fmt"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// TestAclSend: sync sends with the client's credentials (producer.WithCredentials, the Go
// client's AclClientRPCHook) to a broker with authentication and authorization on. Each
// outcome is printed as "ACL <case> <outcome>" for tests/compat/test_acl_java.py to compare
// pyrmq's answers with the Java broker's.
//
// Environment: NAMESRV_ADDR, TOPIC (the app may Pub), DENIED_TOPIC (it may not), APP_AK,
// APP_SK.
func TestAclSend(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	denied := requireEnv(t, "DENIED_TOPIC")
	ak := requireEnv(t, "APP_AK")
	sk := requireEnv(t, "APP_SK")
	cases := []struct {
		name, topic string
		creds       primitive.Credentials
	}{
		{"go_app_send", topic, primitive.Credentials{AccessKey: ak, SecretKey: sk}},
		{"go_wrong_secret", topic, primitive.Credentials{AccessKey: ak, SecretKey: sk + "x"}},
		{"go_unknown_key", topic, primitive.Credentials{AccessKey: "nobody_" + ak, SecretKey: sk}},
		{"go_denied_topic", denied, primitive.Credentials{AccessKey: ak, SecretKey: sk}},
	}
	for _, c := range cases {
		fmt.Printf("ACL %s %s\n", c.name, aclSend(ctx, t, c.name, c.topic, c.creds))
	}
}

func aclSend(ctx context.Context, t *testing.T, name, topic string, creds primitive.Credentials) string {
	p, err := rocketmq.NewProducer(
		producer.WithNameServer(nameServers(t)),
		producer.WithGroupName("pyrmq_go_acl_"+name+"_"+runID()),
		producer.WithInstanceName("pyrmq-go-acl-"+name+"-"+runID()),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(8*time.Second),
		producer.WithCredentials(creds),
	)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer Start: %v", err)
	}
	defer within(t, "producer Shutdown", 10*time.Second, p.Shutdown)
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("acl "+name)))
	if err != nil {
		return "ERR " + err.Error()
	}
	if res.Status == primitive.SendOK {
		return "SEND_OK"
	}
	return fmt.Sprintf("STATUS %d", res.Status)
}

// TestAclConsume: a push consumer with the client's credentials (consumer.WithCredentials) in
// GROUP (the app may Sub), from the first offset of TOPIC, which holds messages. Prints
// "ACL go_app_consume CONSUMED some" when a message arrives with the right key within 60 s, and
// "ACL go_wrong_secret_consume CONSUMED none" when none arrives with a wrong secret within 10 s
// (a start refused counts as none; its error is logged).
//
// Environment: NAMESRV_ADDR, TOPIC, GROUP, APP_AK, APP_SK.
func TestAclConsume(t *testing.T) {
	ctx, cancel := caseContext(t, 100*time.Second)
	defer cancel()
	topic := requireEnv(t, "TOPIC")
	group := requireEnv(t, "GROUP")
	ak := requireEnv(t, "APP_AK")
	sk := requireEnv(t, "APP_SK")
	right := primitive.Credentials{AccessKey: ak, SecretKey: sk}
	wrong := primitive.Credentials{AccessKey: ak, SecretKey: sk + "x"}
	fmt.Printf("ACL go_app_consume %s\n", aclConsume(ctx, t, "go_app_consume", topic, group, right, 60*time.Second))
	fmt.Printf("ACL go_wrong_secret_consume %s\n", aclConsume(ctx, t, "go_wrong_secret_consume", topic, group, wrong, 10*time.Second))
}

func aclConsume(ctx context.Context, t *testing.T, name, topic, group string, creds primitive.Credentials, wait time.Duration) string {
	got := make(chan struct{}, 1)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer(nameServers(t)),
		consumer.WithGroupName(group),
		consumer.WithInstance("pyrmq-go-acl-"+name+"-"+runID()),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithCredentials(creds),
	)
	if err != nil {
		t.Fatalf("NewPushConsumer: %v", err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			select {
			case got <- struct{}{}:
			default:
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Logf("%s: consumer Start: %v", name, err)
		return "CONSUMED none"
	}
	defer within(t, "consumer Shutdown", 15*time.Second, c.Shutdown)
	select {
	case <-got:
		return "CONSUMED some"
	case <-time.After(wait):
		return "CONSUMED none"
	case <-ctx.Done():
		return "CONSUMED none"
	}
}

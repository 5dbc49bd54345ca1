package gotests

import (
	"context"
	"fmt"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
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

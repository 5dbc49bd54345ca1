package gotests

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestAdminTopicLifecycle: the Go admin API's name server calls. After the
// topic is created on the broker (CREATE_TOPIC_BROKER_ADDR, required) and
// routed, GET_ALL_TOPIC_LIST_FROM_NAMESERVER must list it; DeleteTopic
// (DELETE_TOPIC_IN_BROKER, then DELETE_TOPIC_IN_NAMESRV) must make the name
// server answer TOPIC_NOT_EXIST and drop it from the list.
//
// Environment: NAMESRV_ADDR, TOPIC (fresh), CREATE_TOPIC_BROKER_ADDR;
// optional CREATE_TOPIC_QUEUES, ROUTE_WAIT_SECONDS.
func TestAdminTopicLifecycle(t *testing.T) {
	ctx, cancel := caseContext(t, 60*time.Second)
	defer cancel()

	topic := requireEnv(t, "TOPIC")
	brokerAddr := requireEnv(t, "CREATE_TOPIC_BROKER_ADDR")
	ns := nameServers(t)

	publishQueues(ctx, t, topic) // creates it on the broker, waits for its route

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(ns)))
	if err != nil {
		t.Fatalf("NewAdmin: %v", err)
	}
	defer within(t, "admin Close", 5*time.Second, adm.Close)

	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatalf("FetchAllTopicList: %v", err)
	}
	if !slices.Contains(list.TopicList, topic) {
		t.Fatalf("topic list from the name server (%d topics) lacks %s: %v", len(list.TopicList), topic, list.TopicList)
	}
	t.Logf("topic list has %d topics including %s", len(list.TopicList), topic)

	err = adm.DeleteTopic(ctx,
		admin.WithTopicDelete(topic),
		admin.WithBrokerAddrDelete(brokerAddr),
		admin.WithNameSrvAddr(ns),
	)
	if err != nil {
		t.Fatalf("DeleteTopic %s: %v", topic, err)
	}

	// A fresh admin client, so no route cached by the first one can answer.
	probe, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(ns)))
	if err != nil {
		t.Fatalf("NewAdmin: %v", err)
	}
	defer within(t, "admin Close", 5*time.Second, probe.Close)
	queues, err := probe.FetchPublishMessageQueues(ctx, topic)
	if !errors.Is(err, rmqerrors.ErrTopicNotExist) {
		t.Errorf("after DeleteTopic the name server must answer TOPIC_NOT_EXIST for %s; got err=%v queues=%s",
			topic, err, describeQueues(queues))
	}
	list, err = probe.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatalf("FetchAllTopicList after delete: %v", err)
	}
	if slices.Contains(list.TopicList, topic) {
		t.Errorf("topic list still has %s after DeleteTopic", topic)
	}
}

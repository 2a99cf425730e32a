package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// TestSecureBrokerACLs: on a cluster with SASL and ACLs, an agent cannot
// write vm.commands.v1 but can write its reports; the gateway can write
// commands but not agent commands; only processors and projectors write
// dlq.v1; a wrong password does not connect.
func TestSecureBrokerACLs(t *testing.T) {
	pw := map[string]string{}
	for _, p := range []string{kafka.PrincipalAdmin, kafka.PrincipalGateway, kafka.PrincipalAgent, kafka.PrincipalProjector, kafka.PrincipalProcessor} {
		pw[p] = p + "-secret"
	}
	b, err := kafka.StartBroker("127.0.0.1:0", "", kafka.SecureOpts(pw)...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := func(user, pass string) kafka.Config {
		return kafka.Config{Brokers: b.Addrs(), User: user, Password: pass}
	}
	admin, err := kgo.NewClient(cfg(kafka.PrincipalAdmin, pw[kafka.PrincipalAdmin]).Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := (kafka.Config{}).EnsureTopics(t.Context(), admin, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	produce := func(user, pass, topic string) error {
		cl, err := kgo.NewClient(cfg(user, pass).Opts(kgo.ProduceRequestTimeout(3*time.Second), kgo.RecordRetries(2))...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")}).FirstErr()
	}
	for _, c := range []struct {
		user, topic string
		allowed     bool
	}{
		{kafka.PrincipalAgent, schemas.TopicVmCommands, false},
		{kafka.PrincipalAgent, schemas.TopicAgentCommands, false},
		{kafka.PrincipalAgent, schemas.TopicVmPower, true},
		{kafka.PrincipalAgent, schemas.TopicHostEvents, true},
		{kafka.PrincipalGateway, schemas.TopicVmCommands, true},
		{kafka.PrincipalGateway, schemas.TopicAgentCommands, false},
		{kafka.PrincipalGateway, schemas.TopicVmEvents, false},
		{kafka.PrincipalGateway, schemas.TopicAlertAcks, true},
		{kafka.PrincipalGateway, schemas.TopicPlacementRequests, true},
		{kafka.PrincipalProjector, schemas.TopicVmEvents, false},
		{kafka.PrincipalProcessor, schemas.TopicVmEvents, true},
		// A dead letter's origin is what an operator's redrive trusts.
		{kafka.PrincipalAgent, schemas.TopicDLQ, false},
		{kafka.PrincipalGateway, schemas.TopicDLQ, false},
		{kafka.PrincipalProjector, schemas.TopicDLQ, true},
		{kafka.PrincipalProcessor, schemas.TopicDLQ, true},
	} {
		err := produce(c.user, pw[c.user], c.topic)
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s writing %s: %v", c.user, c.topic, err)
		case !c.allowed && !errors.Is(err, kerr.TopicAuthorizationFailed):
			t.Errorf("%s writing %s: %v, want TopicAuthorizationFailed", c.user, c.topic, err)
		}
	}
	if err := produce(kafka.PrincipalAgent, "wrong", schemas.TopicVmPower); err == nil {
		t.Error("a wrong password wrote")
	}
}

package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/schemas"
)

// TLS settings of Config: TLS on, with an optional CA bundle (the system
// pool when empty) and an optional client certificate for mutual TLS.
type TLS struct {
	Enabled            bool
	CAFile             string
	CertFile, KeyFile  string
	ServerName         string
	InsecureSkipVerify bool // dev only: a self-signed broker
}

// tlsOpt builds the dialer's TLS configuration.
func (t TLS) tlsOpt() (kgo.Opt, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka tls ca %s: no certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka tls client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return kgo.DialTLSConfig(cfg), nil
}

// Principals of a secured cluster: one SASL user per role. Their ACLs are
// the least each role needs (docs/design.md §3's writers and readers of each topic).
const (
	PrincipalAdmin     = "vmplane-admin" // superuser: topic creation, seeding
	PrincipalGateway   = "vmplane-gateway"
	PrincipalAgent     = "vmplane-agent"
	PrincipalProjector = "vmplane-projector"
	PrincipalProcessor = "vmplane-processor"
)

// gatewayWrites are the topics the gateway may write: commands, the
// catalog, accounts and settings it administers, operators'
// acknowledgements of alerts, and the storage pools and networks it asks
// placement to change (UpdateStoragePool, UpdateNetwork).
var gatewayWrites = []string{schemas.TopicVmCommands, schemas.TopicHostCommands, schemas.TopicLeaseCommands, schemas.TopicCatalog,
	schemas.TopicAccounts, schemas.TopicAlertAcks, schemas.TopicSettings, schemas.TopicPlacementRequests}

// agentWrites are the agents' reports and answers.
var agentWrites = []string{schemas.TopicVmPower, schemas.TopicVmAnswers, schemas.TopicHostEvents}

func topicACL(op kmsg.ACLOperation, topic string) kfake.ACL {
	return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
}

func anyACL(res kmsg.ACLResourceType, op kmsg.ACLOperation) kfake.ACL {
	return kfake.ACL{Resource: res, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
}

// ACLs returns the ACLs of a principal.
func ACLs(principal string) []kfake.ACL {
	// Every client reads metadata and uses idempotent producers. Only
	// processors and projectors write dlq.v1: an operator's redrive trusts
	// what a dead letter says of its origin, so a gateway or an agent that
	// could write one could have its record redriven onto any topic.
	acls := []kfake.ACL{
		anyACL(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationDescribe),
		anyACL(kmsg.ACLResourceTypeCluster, kmsg.ACLOperationIdempotentWrite),
	}
	switch principal {
	case PrincipalGateway:
		for _, t := range gatewayWrites {
			acls = append(acls, topicACL(kmsg.ACLOperationWrite, t))
		}
		// The event streams' fanout reads vm.events.v1 without a group.
		acls = append(acls, topicACL(kmsg.ACLOperationRead, schemas.TopicVmEvents))
	case PrincipalAgent:
		for _, t := range agentWrites {
			acls = append(acls, topicACL(kmsg.ACLOperationWrite, t))
		}
		acls = append(acls, topicACL(kmsg.ACLOperationRead, schemas.TopicAgentCommands), anyACL(kmsg.ACLResourceTypeGroup, kmsg.ACLOperationRead))
	case PrincipalProjector:
		acls = append(acls, anyACL(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationRead), anyACL(kmsg.ACLResourceTypeGroup, kmsg.ACLOperationRead),
			topicACL(kmsg.ACLOperationWrite, schemas.TopicDLQ))
	case PrincipalProcessor:
		// Processors read their inputs and changelogs and write their
		// outputs in transactions.
		acls = append(acls,
			anyACL(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationRead), anyACL(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationWrite),
			anyACL(kmsg.ACLResourceTypeGroup, kmsg.ACLOperationRead),
			anyACL(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationWrite), anyACL(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationDescribe))
	}
	return acls
}

// SecureOpts are the kfake options of a cluster with SASL/SCRAM-SHA-512 and
// ACLs: passwords maps each principal above to its password.
func SecureOpts(passwords map[string]string) []kfake.Opt {
	opts := []kfake.Opt{kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-512", PrincipalAdmin, passwords[PrincipalAdmin])}
	for _, p := range []string{PrincipalGateway, PrincipalAgent, PrincipalProjector, PrincipalProcessor} {
		opts = append(opts, kfake.User("SCRAM-SHA-512", p, passwords[p], ACLs(p)...))
	}
	return opts
}

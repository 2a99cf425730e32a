package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/memory"
)

// flags is a FlagSet whose defaults come from environment variables.
type flags struct{ *flag.FlagSet }

func newFlags(role string) flags {
	return flags{flag.NewFlagSet("vmplane "+role, flag.ExitOnError)}
}

func (f flags) str(name, env, def, help string) *string {
	if v := os.Getenv(env); v != "" {
		def = v
	}
	return f.String(name, def, fmt.Sprintf("%s (env %s)", help, env))
}

func (f flags) dur(name, env string, def time.Duration, help string) *time.Duration {
	if v := os.Getenv(env); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			def = d
		}
	}
	return f.Duration(name, def, fmt.Sprintf("%s (env %s)", help, env))
}

func (f flags) num(name, env string, def int, help string) *int {
	if v := os.Getenv(env); v != "" {
		// Like dur: a value that does not read as a number keeps def.
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil {
			def = n
		}
	}
	return f.Int(name, def, fmt.Sprintf("%s (env %s)", help, env))
}

// kafkaFlags are the flags of every role that talks to Kafka.
type kafkaFlags struct {
	brokers, user, password, registry *string
	tlsCA, tlsCert, tlsKey            *string
	tls                               *bool
	replication                       *int
}

func (f flags) kafka() kafkaFlags {
	return kafkaFlags{
		brokers:     f.str("brokers", "VMPLANE_KAFKA_BROKERS", "127.0.0.1:9092", "Kafka bootstrap brokers, comma separated"),
		user:        f.str("kafka-user", "VMPLANE_KAFKA_USER", "", "SASL/SCRAM-SHA-512 user"),
		password:    f.str("kafka-password", "VMPLANE_KAFKA_PASSWORD", "", "SASL/SCRAM-SHA-512 password"),
		registry:    f.str("schema-registry", "VMPLANE_SCHEMA_REGISTRY", "", "Schema Registry URL (switches to the Confluent framing)"),
		tls:         f.Bool("kafka-tls", os.Getenv("VMPLANE_KAFKA_TLS") == "true", "TLS to the brokers (env VMPLANE_KAFKA_TLS)"),
		tlsCA:       f.str("kafka-tls-ca", "VMPLANE_KAFKA_TLS_CA", "", "CA bundle of the brokers' certificates (implies --kafka-tls; default: the system pool)"),
		tlsCert:     f.str("kafka-tls-cert", "VMPLANE_KAFKA_TLS_CERT", "", "client certificate for mutual TLS"),
		tlsKey:      f.str("kafka-tls-key", "VMPLANE_KAFKA_TLS_KEY", "", "client key for mutual TLS"),
		replication: f.replication(),
	}
}

// replication is --replication-factor: the replication factor of the
// topics a role creates. 1 suits kfake (one broker) and a one-broker
// test cluster; a production cluster wants 3 (docs/operations.md).
func (f flags) replication() *int {
	return f.num("replication-factor", "VMPLANE_KAFKA_REPLICATION", 1, "replication factor of topics created (1 for kfake; 3 on a production cluster)")
}

// replicationOf checks a --replication-factor value.
func replicationOf(n int) (int16, error) {
	if n < 1 || n > 32767 {
		return 0, fmt.Errorf("--replication-factor %d: want 1 or more", n)
	}
	return int16(n), nil
}

func (k kafkaFlags) config() kafka.Config {
	rf, err := replicationOf(*k.replication)
	if err != nil {
		rf = 1 // checked where topics are created
	}
	return kafka.Config{Brokers: strings.Split(*k.brokers, ","), User: *k.user, Password: *k.password, RegistryURL: *k.registry, Replication: rf,
		TLS: kafka.TLS{Enabled: *k.tls || *k.tlsCA != "", CAFile: *k.tlsCA, CertFile: *k.tlsCert, KeyFile: *k.tlsKey}}
}

func (f flags) instance() *string {
	h, _ := os.Hostname()
	return f.str("instance", "VMPLANE_INSTANCE", h, "instance id: transactional ids and static group members; unique among running instances of a role, stable across restarts")
}

func (f flags) settings() *time.Duration {
	return f.dur("ping-interval", "VMPLANE_PING_INTERVAL", 60*time.Second, "agent ping and report interval (ping.interval)")
}

// gcFlags tune the Go collector of a processor or projector process
// (memory.GC): a processor's heap is mostly long-lived states, which a
// collection re-marks every time, a projector's the batch in hand;
// benchmarks/README.md has the measurements behind the default.
type gcFlags struct {
	percent *int
	limit   *string
}

func (f flags) gc() gcFlags {
	def := memory.RecommendedGCPercent
	if os.Getenv("GOGC") != "" {
		def = 0 // the operator's GOGC stands unless the flag is given
	}
	return gcFlags{
		percent: f.num("gc-percent", "VMPLANE_GC_PERCENT", def, "Go GC percentage (debug.SetGCPercent): higher collects less often with a larger heap; 0 keeps GOGC"),
		limit:   f.str("memory-limit", "VMPLANE_MEMORY_LIMIT", "", "soft memory limit of the process, e.g. 6GiB (debug.SetMemoryLimit; collects harder near it); empty keeps GOMEMLIMIT"),
	}
}

// apply sets the collector as the flags say.
func (g gcFlags) apply() error {
	limit, err := memory.ParseBytes(*g.limit)
	if err != nil {
		return fmt.Errorf("--memory-limit: %w", err)
	}
	memory.GC{Percent: *g.percent, MemoryLimit: limit}.Apply()
	return nil
}

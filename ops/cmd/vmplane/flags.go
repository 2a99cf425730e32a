package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/memory"
	"github.com/vmplane/vmplane/internal/secret"
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

// secret is a flag of a secret whose default comes from env or from the
// file env_FILE names (secret.FromEnv), so that the secret need not stand in
// an environment file; what is wrong with them is in *errp.
// -h and a usage error never print its value.
func (f flags) secret(name, env, help string, errp *error) *string {
	def, err := secret.FromEnv(os.Getenv, env)
	if err != nil && *errp == nil {
		*errp = err
	}
	v := &def
	f.Var(hidden{v}, name, fmt.Sprintf("%s (env %s, or %s_FILE naming a file that holds it)", help, env, env))
	return v
}

// hiddenStr is str for a secret: -h never shows its value.
func (f flags) hiddenStr(name, env, help string) *string {
	v := new(string)
	*v = os.Getenv(env)
	f.Var(hidden{v}, name, fmt.Sprintf("%s (env %s)", help, env))
	return v
}

// hidden is a string flag whose value String never shows: the flag
// package prints a flag's default in -h and in every usage error, which
// would put a password from the environment in a terminal or a journal.
type hidden struct{ v *string }

func (h hidden) String() string { return "" }

func (h hidden) Set(s string) error {
	*h.v = s
	return nil
}

// kafkaFlags are the flags of every role that talks to Kafka.
type kafkaFlags struct {
	brokers, mechanism, user, password, registry, prefix              *string
	oauthToken, oauthFile, oauthURL, oauthID, oauthSecret, oauthScope *string
	tlsCA, tlsCert, tlsKey                                            *string
	tls, withoutTLS                                                   *bool
	err                                                               error
}

func (f flags) kafka() *kafkaFlags {
	f.Usage = func() {
		fmt.Fprintf(f.Output(), "Usage of %s (it never creates topics: vmplane topics create does):\n", f.Name())
		f.PrintDefaults()
	}
	k := &kafkaFlags{}
	k.brokers = f.str("brokers", "VMPLANE_KAFKA_BROKERS", "127.0.0.1:9092", "Kafka bootstrap brokers, comma separated")
	k.mechanism = f.str("kafka-sasl-mechanism", "VMPLANE_KAFKA_SASL_MECHANISM", "", "SASL mechanism: SCRAM-SHA-512, SCRAM-SHA-256, PLAIN or OAUTHBEARER (default SCRAM-SHA-512 with a user, OAUTHBEARER with an OAuth token source)")
	k.user = f.str("kafka-user", "VMPLANE_KAFKA_USER", "", "SASL user (SCRAM or PLAIN)")
	k.password = f.secret("kafka-password", "VMPLANE_KAFKA_PASSWORD", "SASL password (SCRAM or PLAIN)", &k.err)
	// Not f.secret: VMPLANE_KAFKA_OAUTH_TOKEN_FILE is a file read again at
	// every authentication (--kafka-oauth-token-file), not read once here.
	k.oauthToken = f.hiddenStr("kafka-oauth-token", "VMPLANE_KAFKA_OAUTH_TOKEN", "OAUTHBEARER: a static token")
	k.oauthFile = f.str("kafka-oauth-token-file", "VMPLANE_KAFKA_OAUTH_TOKEN_FILE", "", "OAUTHBEARER: a file holding the token, read again at every authentication")
	k.oauthURL = f.str("kafka-oauth-token-url", "VMPLANE_KAFKA_OAUTH_TOKEN_URL", "", "OAUTHBEARER: an OAuth 2 / OIDC token endpoint, asked with the client-credentials grant")
	k.oauthID = f.str("kafka-oauth-client-id", "VMPLANE_KAFKA_OAUTH_CLIENT_ID", "", "OAUTHBEARER: client id at the token endpoint")
	k.oauthSecret = f.secret("kafka-oauth-client-secret", "VMPLANE_KAFKA_OAUTH_CLIENT_SECRET", "OAUTHBEARER: client secret at the token endpoint", &k.err)
	k.oauthScope = f.str("kafka-oauth-scope", "VMPLANE_KAFKA_OAUTH_SCOPE", "", "OAUTHBEARER: scope asked of the token endpoint (space separated)")
	k.withoutTLS = f.Bool("kafka-sasl-without-tls", os.Getenv("VMPLANE_KAFKA_SASL_WITHOUT_TLS") == "true", "allow PLAIN and OAUTHBEARER, which send the secret itself, without TLS (env VMPLANE_KAFKA_SASL_WITHOUT_TLS)")
	k.registry = f.str("schema-registry", "VMPLANE_SCHEMA_REGISTRY", "", "Schema Registry URL (switches to the Confluent framing)")
	k.tls = f.Bool("kafka-tls", os.Getenv("VMPLANE_KAFKA_TLS") == "true", "TLS to the brokers (env VMPLANE_KAFKA_TLS)")
	k.tlsCA = f.str("kafka-tls-ca", "VMPLANE_KAFKA_TLS_CA", "", "CA bundle of the brokers' certificates (implies --kafka-tls; default: the system pool)")
	k.tlsCert = f.str("kafka-tls-cert", "VMPLANE_KAFKA_TLS_CERT", "", "client certificate for mutual TLS")
	k.tlsKey = f.str("kafka-tls-key", "VMPLANE_KAFKA_TLS_KEY", "", "client key for mutual TLS")
	k.prefix = f.str("topic-prefix", "VMPLANE_TOPIC_PREFIX", "", "prefix of every topic, consumer group and transactional id on a shared cluster, e.g. prod. (the same for every role of an install)")
	return k
}

// config is the Kafka configuration the flags say, checked.
func (k *kafkaFlags) config() (kafka.Config, error) {
	if k.err != nil {
		return kafka.Config{}, k.err
	}
	c := kafka.Config{Brokers: strings.Split(*k.brokers, ","), Mechanism: *k.mechanism, User: *k.user, Password: *k.password,
		OAuth: kafka.OAuth{Token: *k.oauthToken, TokenFile: *k.oauthFile, TokenURL: *k.oauthURL, ClientID: *k.oauthID,
			ClientSecret: *k.oauthSecret, Scope: *k.oauthScope},
		SASLWithoutTLS: *k.withoutTLS, RegistryURL: *k.registry, Prefix: *k.prefix,
		TLS: kafka.TLS{Enabled: *k.tls || *k.tlsCA != "", CAFile: *k.tlsCA, CertFile: *k.tlsCert, KeyFile: *k.tlsKey}}
	return c, c.Validate()
}

// chFlags are how a role logs in to ClickHouse.
type chFlags struct {
	user, password, analystPassword, ca *string
	tls                                 *bool
	err                                 error
}

func (f flags) clickhouse() *chFlags {
	c := &chFlags{}
	c.user = f.str("clickhouse-user", "VMPLANE_CH_USER", "", "ClickHouse user that writes and reads the journal (default: default)")
	c.password = f.secret("clickhouse-password", "VMPLANE_CH_PASSWORD", "password of the ClickHouse user", &c.err)
	c.analystPassword = f.secret("clickhouse-analyst-password", "VMPLANE_CH_ANALYST_PASSWORD", "password of the read-only analyst_<database> user (gateway: analysts' queries)", &c.err)
	c.tls = f.Bool("clickhouse-tls", os.Getenv("VMPLANE_CH_TLS") == "true", "TLS to ClickHouse's secure native port (tcp_port_secure, 9440) (env VMPLANE_CH_TLS)")
	c.ca = f.str("clickhouse-tls-ca", "VMPLANE_CH_TLS_CA", "", "CA bundle of ClickHouse's certificate (implies --clickhouse-tls; default: the system pool)")
	return c
}

func (c *chFlags) access() (chserver.Access, error) {
	return chserver.Access{User: *c.user, Password: *c.password, AnalystPassword: *c.analystPassword,
		TLS: *c.tls || *c.ca != "", CAFile: *c.ca}, c.err
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
// collection re-marks every time, as is a rebuild's fold of the whole log,
// a projector's the batch in hand;
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

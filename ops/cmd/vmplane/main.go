// Command vmplane runs vmplane's server roles: `dev` (everything in one
// process, what `make run` starts), `broker`, `processor`, `projector`,
// `gateway` and `agent`.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmplane/vmplane/internal/telemetry"
)

const usage = `vmplane — an event-sourced control plane for virtual machines

Usage:
  vmplane dev        [flags]   the whole system in one process (make run)
  vmplane broker     [flags]   an embedded Kafka-protocol broker with a data directory
  vmplane processor  --kind vm|host|host-relay|placement|lease [flags]
  vmplane projector  --kind postgres|journal [flags]
  vmplane projector  rebuild --target postgres [flags]   replay the log into fresh read models and swap them in
  vmplane gateway    [flags]   the REST API
  vmplane agent      --driver sim|qemu --hosts N [flags]   a hypervisor agent
  vmplane topics     create|check [flags]   create the topic table's topics / list how the cluster's differ
  vmplane dlq        list|show|redrive [flags]   inspect dead letters and put them back after a fix
  vmplane admin-key  [flags]   issue an admin API key (the first of an installation), printed on stdout
  vmplane decode     [--schema-registry URL] < values   Avro values read with kcat, as JSON lines
  vmplane guest-image --out DIR [--id tiny-linux]   write the QEMU guests' Linux template to DIR/<id>/
  vmplane openapi    [--out FILE]   write the API's OpenAPI document (what /v1/openapi.json serves)

The roles never create topics: "vmplane topics create" does, once, with an
admin principal (vmplane broker and dev create their own). Run "vmplane
<role> -h" for the flags of a role. Every flag has an environment variable,
shown in its help. Every role also takes
--metrics-addr ADDR (VMPLANE_METRICS_ADDR: /metrics, /healthz, /readyz) and
reads the standard OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG),
OTEL_SDK_DISABLED, ...) or VMPLANE_TRACE_EXPORTER=none|stdout|file:PATH|otlp
(VMPLANE_OTLP_ENDPOINT, VMPLANE_TRACE_SAMPLE_RATIO), which win.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Production roles log JSON for collectors; the dev stack logs text for
	// the person watching it (VMPLANE_LOG_FORMAT overrides either).
	opts := &slog.HandlerOptions{Level: logLevel()}
	var handler slog.Handler = slog.NewJSONHandler(os.Stderr, opts)
	if f := os.Getenv("VMPLANE_LOG_FORMAT"); f == "text" || (f == "" && os.Args[1] == "dev") {
		handler = slog.NewTextHandler(os.Stderr, opts)
	}
	log := slog.New(telemetry.LogHandler(handler)) // trace_id, span_id, job_id
	slog.SetDefault(log)

	var err error
	args, metricsAddr := observeFlags(os.Args[2:])
	if metricsAddr == "" && os.Args[1] == "dev" {
		metricsAddr = "127.0.0.1:9464" // every role of the dev stack on one address
	}
	if observes(os.Args[1], args) {
		flush, err := startObserving(ctx, os.Args[1], metricsAddr, log)
		if err != nil {
			fmt.Fprintf(os.Stderr, "vmplane %s: %v\n", os.Args[1], err)
			os.Exit(1)
		}
		defer flush()
	}
	switch os.Args[1] {
	case "dev":
		err = runDev(ctx, args, log)
	case "broker":
		err = runBroker(ctx, args, log)
	case "processor":
		err = runProcessor(ctx, args, log)
	case "projector":
		err = runProjector(ctx, args, log)
	case "gateway":
		err = runGateway(ctx, args, log)
	case "agent":
		err = runAgent(ctx, args, log)
	case "topics":
		err = runTopics(ctx, args, log)
	case "dlq":
		err = runDLQ(ctx, args, log)
	case "admin-key":
		err = runAdminKey(ctx, args, log)
	case "decode":
		err = runDecode(ctx, args, log)
	case "guest-image":
		err = runGuestImage(ctx, args, log)
	case "openapi":
		err = runOpenAPI(args)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "vmplane: unknown role %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vmplane %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("VMPLANE_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}

// observes says whether a command runs with metrics and traces: the roles
// do; the tools do not, nor a role asked for its flags, which prints them
// whatever else runs (it starts no metrics listener another process may
// hold).
func observes(cmd string, args []string) bool {
	switch cmd {
	case "topics", "dlq", "admin-key", "decode", "guest-image", "openapi", "-h", "--help", "help":
		return false
	}
	return !wantsHelp(args)
}

// wantsHelp says whether a role's arguments ask for its flags (-h, -help,
// --help before a "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

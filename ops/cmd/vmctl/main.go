// Command vmctl is the command-line client of the vmplane REST API: deploy
// and act on VMs, follow jobs step by step, list hosts and offerings. It
// only speaks HTTP to a gateway; it never reads Kafka or the databases.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usage lists the commands; the VM actions' come from their catalog.
var usage = `usage: vmctl [--api URL] [--key KEY] [--output table|json] COMMAND

commands:
  vm deploy --name N --offering O [--ha] [--affinity-group G] [--template T] [--root-disk GiB] [--data-disk GiB] [--network N,..] [--wait]
  vm get ID
  vm list
  vm delete ID [--wait]
  vm action ID ACTION [--wait]
  vm snapshots ID
` + actionUsage() + `  vm history ID [--at RFC3339|DURATION-AGO]
  journal query "<SQL>"   (admin; read-only, see docs/analytics.md)
  alert list [--vm ID] [--host ID] [--zone ID] [--kind K] [--open]; alert get ID; alert ack ID
  job get ID [--steps]
  job wait ID [--timeout 5m]
  job cancel ID [--reason R] [--wait] [--timeout 10m]
  host list; host get ID
  host enable|disable|maintenance|cancel-maintenance|remove|unmanage|manage ID [--wait] [--timeout 10m]
  host add ID [--name N] [--zone Z] [--pod P] [--cluster C] [--hypervisor H]
  offering list
  account create ID [--name N]; account list
  key create ACCOUNT [--role user|admin] [--expires-in 720h]; key list ACCOUNT; key revoke ACCOUNT KEY-ID
  offering create --name N --cpu C --memory MiB [--ha] [--planner P] [--planner-mode Strict|Preferred] [--host-tags a,b] [--storage-tags a,b]
  offering update ID [--name N] [--ha=true|false] [--planner P] [--planner-mode M] [--host-tags a,b] [--storage-tags a,b]
  offering delete ID   (refused while VMs use it)
  planner list
` + storageUsage + volumeUsage() + `  zone capacity ZONE
  settings list [--zone Z] [--cluster C]; settings get NAME [--zone Z] [--cluster C]   (admin)
  settings set NAME VALUE [--zone Z | --cluster C]; settings reset NAME [--zone Z | --cluster C]
  lease create --name N --end TIME|DURATION [--start now|TIME|DURATION] [--hosts MIN..MAX] [--property k=v,..] [--project P]
  lease get ID; lease list; lease events ID; lease delete ID
  lease update ID [--start T] [--end T] [--hosts MIN..MAX]

environment: VMPLANE_API (default http://127.0.0.1:8080), VMPLANE_API_KEY
(else the file var/dev/admin-key, when present), VMCTL_PROGRESS=always|never
(the status line of job wait and --wait; default: on a terminal only).
`

// Exit codes: 0 success, 1 a job that did not succeed or an API error,
// 2 a usage error.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// cli is one invocation: global settings and where output goes.
type cli struct {
	api, key, output string
	stdout, stderr   io.Writer
	// progress redraws a status line while waiting for a job: on a
	// terminal, or as VMCTL_PROGRESS=always|never says.
	progress bool
	c        *client
}

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	app := &cli{stdout: stdout, stderr: stderr}
	switch getenv("VMCTL_PROGRESS") {
	case "always":
		app.progress = true
	case "never":
	default:
		app.progress = isTerminal(stdout)
	}
	fs := flag.NewFlagSet("vmctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	app.globals(fs, getenv)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "vmctl: %v\n\n%s", err, usage)
		return exitUsage
	}
	if err := app.dispatch(ctx, fs.Args(), getenv); err != nil {
		var jf *jobFailed
		switch {
		case errors.Is(err, flag.ErrHelp):
			fmt.Fprint(stdout, usage)
			return exitOK
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "vmctl: %v\n\n%s", err, usage)
			return exitUsage
		case errors.As(err, &jf):
			return exitFail // the job's final line already says why
		}
		fmt.Fprintf(stderr, "vmctl: %v\n", err)
		return exitFail
	}
	return exitOK
}

// globals registers --api, --key and --output on fs, so that they may come
// before or after the command.
func (a *cli) globals(fs *flag.FlagSet, getenv func(string) string) {
	api := getenv("VMPLANE_API")
	if api == "" {
		api = "http://127.0.0.1:8080"
	}
	if a.api != "" {
		api = a.api
	}
	out := a.output
	if out == "" {
		out = "table"
	}
	fs.StringVar(&a.api, "api", api, "API base URL (VMPLANE_API)")
	fs.StringVar(&a.key, "key", a.key, "API key (VMPLANE_API_KEY, else var/dev/admin-key)")
	fs.StringVar(&a.output, "output", out, "output format: table or json")
}

func (a *cli) dispatch(ctx context.Context, args []string, getenv func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return flag.ErrHelp
	}
	if len(args) < 2 {
		return fmt.Errorf("%w: %q needs a subcommand", errUsage, args[0])
	}
	cmd := args[0] + " " + args[1]
	h, ok := commands[cmd]
	if !ok {
		h, ok = lifecycleCommands[cmd]
	}
	if !ok {
		h, ok = placementCommands[cmd]
	}
	if !ok {
		h, ok = historyCommands[cmd]
	}
	if !ok {
		h, ok = leaseCommands[cmd]
	}
	if !ok {
		h, ok = hostCommands[cmd]
	}
	if !ok {
		h, ok = accountCommands[cmd]
	}
	if !ok {
		h, ok = alertCommands[cmd]
	}
	if !ok {
		h, ok = settingsCommands[cmd]
	}
	if !ok {
		h, ok = storageCommands[cmd]
	}
	if !ok {
		h, ok = volumeCommands[cmd]
	}
	if !ok {
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	fs := flag.NewFlagSet("vmctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a.globals(fs, getenv)
	return h(ctx, a, fs, args[2:], getenv)
}

// setup parses a command's flags, which may come before or after its
// positional arguments, checks there are want of those, and makes the
// client.
func (a *cli) setup(fs *flag.FlagSet, args []string, getenv func(string) string, want ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, err
		} else if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != len(want) {
		return nil, fmt.Errorf("%w: %s takes %s", errUsage, fs.Name(), argList(want))
	}
	if a.output != "table" && a.output != "json" {
		return nil, fmt.Errorf("%w: --output must be table or json, not %q", errUsage, a.output)
	}
	key, err := resolveKey(a.key, getenv)
	if err != nil {
		return nil, err
	}
	a.c = newClient(a.api, key)
	return pos, nil
}

func argList(want []string) string {
	if len(want) == 0 {
		return "no arguments"
	}
	return strings.Join(want, " ")
}

// resolveKey takes --key, else VMPLANE_API_KEY, else the dev stack's admin
// key file in the current directory.
func resolveKey(flagKey string, getenv func(string) string) (string, error) {
	if flagKey != "" {
		return flagKey, nil
	}
	if k := getenv("VMPLANE_API_KEY"); k != "" {
		return k, nil
	}
	b, err := os.ReadFile("var/dev/admin-key")
	if errors.Is(err, os.ErrNotExist) {
		return "", errors.New("no API key: pass --key, set VMPLANE_API_KEY, or run from the directory of `vmplane dev` (var/dev/admin-key)")
	}
	if err != nil {
		return "", fmt.Errorf("read API key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Command vmctl is the command-line client of the vmplane REST API: deploy
// and act on VMs, follow jobs step by step, list hosts and offerings. It
// only speaks HTTP to a gateway; it never reads Kafka or the databases.
//
// Its commands are a tree (vmctl vm deploy, vmctl job list, ...) built
// from the tables of commands.go; every command has its own help (-h),
// shells complete them (vmctl completion bash|zsh|fish), and where the API
// is, who is asking and how answers print come from flags, the
// environment, a profile of the config file, or defaults, in that order
// (profile.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes: 0 success, 1 a job that did not succeed or an API error,
// 2 a usage error.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// cli is one invocation: the global flags as given, the settings resolved
// from them, and where output goes.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	flags          globalFlags
	settings       // resolved by setup
	// progress redraws a status line while waiting for a job: on a
	// terminal, or as VMCTL_PROGRESS=always|never says.
	progress bool
	// shows is the wire type the running command prints, for -c.
	shows any
	// columnsOf are each command's columns, for completing -c.
	columnsOf map[*cobra.Command][]string
	// failed is the command a usage error belongs to, for its hint.
	failed *cobra.Command
	c      *client
}

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	a := &cli{stdout: stdout, stderr: stderr, getenv: getenv}
	switch getenv("VMCTL_PROGRESS") {
	case "always":
		a.progress = true
	case "never":
	default:
		a.progress = isTerminal(stdout)
	}
	root := a.root()
	root.SetArgs(args)
	return a.exitCode(root, root.ExecuteContext(ctx))
}

// exitCode prints err as the user needs it and says the exit code.
func (a *cli) exitCode(root *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var jf *jobFailed
	if errors.As(err, &jf) {
		return exitFail // the job's final line already says why
	}
	if errors.Is(err, errUsage) {
		cmd := a.failed
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(a.stderr, "vmctl: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return exitUsage
	}
	fmt.Fprintf(a.stderr, "vmctl: %v\n", err)
	return exitFail
}

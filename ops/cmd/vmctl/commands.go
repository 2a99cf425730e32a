package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runner does a command once its flags are parsed; pos are its positional
// arguments, as many as its spec names.
type runner func(ctx context.Context, pos []string) error

// command defines a command's flags on fs and returns what runs it: the
// flags exist before anything is parsed, so that help and completion know
// them.
type command func(a *cli, fs *pflag.FlagSet) runner

// spec is one command of the tree: vmctl PATH ARGS... [flags].
type spec struct {
	path  string   // "vm deploy"
	args  []string // names of its positional arguments: "ID"
	short string   // one line in the list of commands
	// synopsis follows the arguments in the usage line: the flags that
	// are required ("--name N --offering O").
	synopsis string
	example  string
	cmd      command
	// shows is the API's wire type the command prints (a zero value), for
	// -c: its JSON names are the columns; nil when it varies.
	shows any
	// waitShows is the type it prints with --wait, when that differs.
	waitShows any
	// offline: the command needs no API key (config show, version).
	offline bool
	// bare: the command resolves no settings (config list, set, use):
	// it must work while they are wrong.
	bare bool
}

// groups says in one line what each first word of a command is about.
var groups = map[string]string{
	"vm":       "Deploy, list and act on VMs",
	"job":      "Follow, list and cancel jobs",
	"host":     "List hosts and act on them (admin)",
	"offering": "Compute offerings",
	"planner":  "Deployment planners",
	"zone":     "Zone capacity (admin)",
	"account":  "Accounts (admin)",
	"key":      "API keys of an account",
	"alert":    "Alerts of VMs and hosts",
	"settings": "Operator settings (admin)",
	"lease":    "Host reservations (leases)",
	"template": "Templates of root volumes",
	"pool":     "Primary storage pools (admin)",
	"network":  "Guest networks",
	"volume":   "Volumes and their actions",
	"journal":  "The job journal in ClickHouse (admin)",
	"config":   "Profiles of the config file",
}

// specs is every command, in the order help lists them.
func specs() []spec {
	return slices.Concat(vmCommands, lifecycleCommands(), historyCommands, jobCommands, eventCommands,
		hostCommands, catalogCommands, placementCommands, accountCommands, alertCommands, settingsCommands,
		leaseCommands, storageCommands, volumeCommands(), configCommands, versionCommands)
}

// root builds the command tree of one invocation.
func (a *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "vmctl",
		Short: "vmctl is the command-line client of the vmplane API",
		Long: `vmctl is the command-line client of the vmplane REST API.

Where the API is, the key and the output format come from the flags, else
the environment (VMPLANE_API, VMPLANE_API_KEY, VMPLANE_VAR, VMCTL_OUTPUT),
else a profile of the config file (--profile, VMCTL_PROFILE, else the file's
default; vmctl config list), else the defaults: ` + defaultAPI + ` and the
dev stack's admin key, var/dev/admin-key in this directory or a parent.

VMCTL_PROGRESS=always|never says whether a status line is redrawn while
waiting for a job (default: on a terminal only).`,
		DisableFlagsInUseLine: true,
		SilenceErrors:         true,
		SilenceUsage:          true,
		Args:                  a.subcommandArgs,
		RunE:                  a.needSubcommand,
		ValidArgsFunction:     cobra.NoFileCompletions,
		CompletionOptions:     cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	a.columnsOf = map[*cobra.Command][]string{}
	a.globalFlags(root)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		a.failed = c
		return fmt.Errorf("%w: %v", errUsage, err)
	})
	nodes := map[string]*cobra.Command{"": root}
	for _, s := range specs() {
		words := strings.Fields(s.path)
		parent := root
		for i := range len(words) - 1 {
			key := strings.Join(words[:i+1], " ")
			if nodes[key] == nil {
				g := &cobra.Command{Use: words[i], Short: groups[key], Args: a.subcommandArgs, RunE: a.needSubcommand,
					ValidArgsFunction: cobra.NoFileCompletions, DisableFlagsInUseLine: true, SuggestionsMinimumDistance: 2}
				parent.AddCommand(g)
				nodes[key] = g
			}
			parent = nodes[key]
		}
		parent.AddCommand(a.leaf(s, words[len(words)-1]))
	}
	return root
}

// printed is the type s prints as c's flags ask: waitShows with --wait.
func (s spec) printed(c *cobra.Command) any {
	if f := c.Flags().Lookup("wait"); s.waitShows != nil && f != nil && f.Value.String() == "true" {
		return s.waitShows
	}
	return s.shows
}

// leaf is the cobra command of s.
func (a *cli) leaf(s spec, name string) *cobra.Command {
	use := strings.Join(append([]string{name}, s.args...), " ")
	if s.synopsis != "" {
		use += " " + s.synopsis
	}
	c := &cobra.Command{
		Use:               use,
		Short:             s.short,
		Example:           s.example,
		Args:              a.exactArgs(s.args),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	run := s.cmd(a, c.Flags())
	a.columnsOf[c] = fieldsOf(s.shows)
	c.RunE = func(c *cobra.Command, pos []string) error {
		a.shows = s.shows
		var err error
		if !s.bare {
			err = a.setup(!s.offline)
		}
		if shows := s.printed(c); err == nil && shows != nil {
			// Before anything is sent: a change whose answer could not be
			// printed would look failed though it was made.
			err = answer{}.check(a.columns, fieldsOf(shows))
		}
		if err == nil {
			err = run(c.Context(), pos)
		}
		if err != nil && a.failed == nil {
			a.failed = c
		}
		return err
	}
	return c
}

// exactArgs wants one positional argument per name.
func (a *cli) exactArgs(names []string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		a.failed = c
		want := "no arguments"
		if len(names) > 0 {
			want = strings.Join(names, " ")
		}
		return fmt.Errorf("%w: %s takes %s, got %d", errUsage, strings.TrimPrefix(c.CommandPath(), "vmctl "), want, len(args))
	}
}

// subcommandArgs refuses a word that is no subcommand of a group.
func (a *cli) subcommandArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	a.failed = c
	cmd := strings.TrimPrefix(c.CommandPath()+" "+args[0], "vmctl ")
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		return fmt.Errorf("%w: unknown command %q; did you mean %s?", errUsage, cmd, strings.Join(s, " or "))
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// needSubcommand is a group called alone: its help, on stderr, and a usage
// error.
func (a *cli) needSubcommand(c *cobra.Command, _ []string) error {
	c.SetOut(a.stderr)
	_ = c.Help()
	c.SetOut(a.stdout)
	a.failed = c
	if c.HasParent() {
		return fmt.Errorf("%w: %q needs a subcommand", errUsage, strings.TrimPrefix(c.CommandPath(), "vmctl "))
	}
	return fmt.Errorf("%w: no command", errUsage)
}

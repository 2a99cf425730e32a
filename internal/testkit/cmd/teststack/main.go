// Command teststack starts and stops the servers integration tests run against, so that
// `make test` pays for starting them once and leaves nothing running:
//
//	go run ./internal/testkit/cmd/teststack up     # before go test
//	go run ./internal/testkit/cmd/teststack down   # after it
//
// up uses the configured servers ($VMPLANE_PG_DSN, $VMPLANE_CH_ADDR) when they answer and starts
// local ones under var/test otherwise; down stops only what was started under var/test.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: teststack up|down")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	if os.Args[1] == "down" {
		if err := testkit.StackDown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "teststack down:", err)
			os.Exit(1)
		}
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := testkit.StackUp(ctx, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "teststack up:", err)
		os.Exit(1)
	}
	fmt.Printf("postgres   %s%s\nclickhouse %s%s\n",
		st.PostgresDSN, startedNote(st.PostgresStarted, st.VarDir),
		st.ClickHouseAddr, startedNote(st.ClickHouseStarted, st.VarDir))
}

func startedNote(started bool, varDir string) string {
	if started {
		return " (started under " + varDir + ")"
	}
	return ""
}

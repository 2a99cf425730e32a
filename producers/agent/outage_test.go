package agent_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// pollFailures counts the agent's "polling agent commands" warnings: one
// per failed poll of its command loop.
type pollFailures struct{ n *atomic.Int32 }

func (h pollFailures) Enabled(context.Context, slog.Level) bool { return true }
func (h pollFailures) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "polling agent commands" {
		h.n.Add(1)
	}
	return nil
}
func (h pollFailures) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h pollFailures) WithGroup(string) slog.Handler      { return h }

// TestCommandsResumeWhenTheBrokerReturns: an outage long enough for seven
// failed polls of the command loop (about 15 s) ends; a command sent once
// the broker is back is executed within 8 s. franz-go retries the group's
// join with the agent's backoff, whose ceiling was 30 s: the command
// waited over 25 s. Found by the crash loop, where two broker kills at the
// end of the load left both agents' command groups behind for over 20 s.
func TestCommandsResumeWhenTheBrokerReturns(t *testing.T) {
	b := testkit.StartBrokerProcess(t, t.TempDir())
	failures := pollFailures{n: new(atomic.Int32)}
	s := newStackOn(t, b.Config().Brokers, time.Second, nil, func(c *agent.Config) { c.Logger = slog.New(failures) })
	waitFor(s, 2, func(*schemas.AgentConnected) bool { return true })
	s.send(&schemas.StartVm{AgentCommand: cmd("c1", "h2", "v1", 3), CPU: 1, MemoryMB: 256}, "h2")
	waitFor(s, 1, answerTo("c1"))

	b.Kill()
	deadline := time.Now().Add(40 * time.Second)
	for failures.n.Load() < 7 {
		if time.Now().After(deadline) {
			t.Fatalf("%d failed polls in 40 s of outage, want 7", failures.n.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Start()
	back := time.Now()
	s.send(&schemas.RebootVm{AgentCommand: cmd("c2", "h2", "v1", 3)}, "h2")
	waitFor(s, 1, answerTo("c2"))
	took := time.Since(back)
	t.Logf("answered %s after the broker came back", took.Round(time.Millisecond))
	if took > 8*time.Second {
		t.Fatalf("the command after the outage was answered %s after the broker came back, want within 8 s", took.Round(time.Millisecond))
	}
}

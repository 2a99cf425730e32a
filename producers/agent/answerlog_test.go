package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// memo plays the answer caches behind a log: what a rewrite keeps.
type memo struct {
	mu   sync.Mutex
	kept []keptAnswer
	// last bounds what is remembered, as a cache's limit does (0: all).
	last int
}

func (m *memo) add(a keptAnswer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept = append(m.kept, a)
	if m.last > 0 && len(m.kept) > m.last {
		m.kept = m.kept[len(m.kept)-m.last:]
	}
}

func (m *memo) live() []keptAnswer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]keptAnswer(nil), m.kept...)
}

func answer(i int) keptAnswer {
	return keptAnswer{Answer: schemas.AgentAnswer{CommandID: fmt.Sprintf("c%d", i), VmID: "v1", HostID: "h1", Epoch: int64(i),
		CommandType: "StartVm", OK: true, PowerState: schemas.PowerOn, AnsweredAt: 1000 + int64(i)}, Traceparent: "00-tp"}
}

func openStarted(t *testing.T, dir string, m *memo) (*answerLog, []keptAnswer, int) {
	t.Helper()
	l, got, err := openAnswerLog(t.Context(), dir, "a1", slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got {
		m.add(a)
	}
	_, skipped, err := readAnswers(l.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.start(m.live); err != nil {
		t.Fatal(err)
	}
	return l, got, skipped
}

// keep appends through the log the way execute does: remembered first,
// then kept, waiting for the disk.
func keep(t *testing.T, l *answerLog, m *memo, a keptAnswer) {
	t.Helper()
	m.add(a)
	done := make(chan error, 1)
	l.keep(a, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAnswerLogTornTail: what a kill leaves at the end of the file (a line
// without its newline, a line whose bytes never reached the disk) is
// skipped, every whole line before it is read back, and the next append
// starts on a clean line.
func TestAnswerLogTornTail(t *testing.T) {
	dir := t.TempDir()
	m := &memo{}
	l, got, _ := openStarted(t, dir, m)
	if len(got) != 0 {
		t.Fatalf("a new file held %d answers", len(got))
	}
	for i := range 3 {
		keep(t, l, m, answer(i))
	}
	l.close()

	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	whole := string(encodeAnswer(answer(3)))
	// A line of zeros (the size reached the disk, the data did not), one
	// with a bad checksum, then half a line.
	garbage := strings.Repeat("\x00", 40) + "\n" + "00000000" + whole[8:] + whole[:len(whole)/2]
	if _, err := f.WriteString(garbage); err != nil {
		t.Fatal(err)
	}
	f.Close()

	m = &memo{}
	l, got, skipped := openStarted(t, dir, m)
	if len(got) != 3 || skipped != 3 {
		t.Fatalf("read %d answers, skipped %d lines; want 3 and 3", len(got), skipped)
	}
	for i, a := range got {
		if a != answer(i) {
			t.Fatalf("answer %d read back as %+v", i, a)
		}
	}
	keep(t, l, m, answer(4))
	l.close()
	got, skipped, err = readAnswers(l.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || skipped != 0 || got[3] != answer(4) {
		t.Fatalf("after the reopen and an append: %d answers (last %+v), %d skipped; want 4 and none", len(got), got[len(got)-1], skipped)
	}
}

// TestAnswerLogBounded: the file is rewritten from what is remembered, so
// it does not grow with every answer ever given.
func TestAnswerLogBounded(t *testing.T) {
	dir := t.TempDir()
	m := &memo{last: 10}
	l, _, _ := openStarted(t, dir, m)
	const n = 3 * minRewrite
	// Queued without waiting, as a batch's commands are: they share
	// fsyncs.
	var wg sync.WaitGroup
	for i := range n {
		m.add(answer(i))
		wg.Add(1)
		l.keep(answer(i), func(err error) {
			if err != nil {
				t.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	l.close()
	got, _, err := readAnswers(l.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > minRewrite+m.last {
		t.Fatalf("%d answers in the file after %d, remembering %d", len(got), n, m.last)
	}
	if last := got[len(got)-1]; last != answer(n-1) {
		t.Fatalf("last answer %+v, want the last kept", last)
	}
	if _, err := os.Stat(l.path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temp file left: %v", err)
	}
}

// TestAnswerLogLocked: two agents with the same id cannot write one file.
func TestAnswerLogLocked(t *testing.T) {
	dir := t.TempDir()
	l, _, _ := openStarted(t, dir, &memo{})
	defer l.close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := openAnswerLog(ctx, dir, "a1", slog.Default()); err == nil {
		t.Fatal("a second log opened the locked file")
	}
	if _, _, err := openAnswerLog(t.Context(), dir, "../a1", slog.Default()); err == nil {
		t.Fatal("an agent id with a path in it named a file")
	}
}

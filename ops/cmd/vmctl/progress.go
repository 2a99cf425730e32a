package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vmplane/vmplane/api"
)

// watch is what vmctl shows of one job while it waits for it: each new
// step as a line, and on a terminal a status line under them, redrawn in
// place (elapsed time, state, task state, steps so far). Lines go out in
// table mode only; json mode prints the final job alone.
type watch struct {
	mu      sync.Mutex
	out     io.Writer
	lines   bool // table mode: step lines and the final line
	tty     bool // redraw a status line
	id      string
	start   time.Time
	printed int32   // highest step seq printed
	last    api.Job // the job as last seen
	seen    bool    // last holds the job
	drawn   bool    // a status line is on screen
	stop    chan struct{}
	stopped sync.Once
}

// statusEvery is how often the status line's clock is redrawn.
const statusEvery = 200 * time.Millisecond

func (a *cli) newWatch(id string) *watch {
	w := &watch{out: a.stdout, lines: a.plain(), id: id, start: time.Now(), stop: make(chan struct{})}
	w.tty = w.lines && a.progress
	if w.tty {
		go w.tick()
	}
	return w
}

func (w *watch) tick() {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			w.draw()
			w.mu.Unlock()
		}
	}
}

// done stops the redraws and takes the status line off the screen, so
// that the final line stands alone.
func (w *watch) done() {
	w.stopped.Do(func() { close(w.stop) })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.erase()
}

// job takes a snapshot of the job (from the stream or a poll) and prints
// the steps not printed yet.
func (w *watch) job(j api.Job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.seen = j, true
	for _, s := range j.Steps {
		w.stepLocked(s)
	}
	w.draw()
}

// step prints s unless a step at or after it was printed already.
func (w *watch) step(s api.JobStep) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stepLocked(s)
	if s.TaskState != "" {
		w.last.TaskState = s.TaskState
	}
	w.draw()
}

func (w *watch) stepLocked(s api.JobStep) {
	if s.Seq <= w.printed {
		return
	}
	w.printed = s.Seq
	if w.lines {
		w.erase()
		fmt.Fprintln(w.out, stepLine(s))
	}
}

// state notes a job state or task state seen on the stream.
func (w *watch) state(state, taskState string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if state != "" {
		w.last.State = state
	}
	if taskState != "" {
		w.last.TaskState = taskState
	}
	w.draw()
}

func (w *watch) after() int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.printed
}

func (w *watch) lastJob() (api.Job, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.seen
}

// statusLine reads "job 1f2e… Deploy running · Spawning · 3 steps · 4.2s".
func (w *watch) statusLine() string {
	state := orDash(w.last.State)
	if !w.seen && w.last.State == "" {
		state = "waiting"
	}
	parts := []string{strings.TrimSpace(fmt.Sprintf("job %s %s %s", short(w.id), w.last.Type, state))}
	if w.last.TaskState != "" {
		parts = append(parts, w.last.TaskState)
	}
	noun := "steps"
	if w.printed == 1 {
		noun = "step"
	}
	parts = append(parts, fmt.Sprintf("%d %s", w.printed, noun), time.Since(w.start).Round(100*time.Millisecond).String())
	return strings.Join(parts, " · ")
}

// draw rewrites the status line in place: carriage return, then erase to
// the end of the line.
func (w *watch) draw() {
	if !w.tty {
		return
	}
	fmt.Fprint(w.out, "\r\x1b[K"+w.statusLine())
	w.drawn = true
}

func (w *watch) erase() {
	if w.drawn {
		fmt.Fprint(w.out, "\r\x1b[K")
		w.drawn = false
	}
}

// short is an id cut for the status line, which must fit one line.
func short(id string) string {
	if len(id) > 13 {
		return id[:12] + "…"
	}
	return id
}

// isTerminal says whether w is a character device (a terminal): only then
// is a status line redrawn with \r; a pipe or file gets plain lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

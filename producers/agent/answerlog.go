package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/vmplane/vmplane/internal/atomicfile"
	"github.com/vmplane/vmplane/internal/filelock"
	"github.com/vmplane/vmplane/schemas"
)

// answerLog keeps the agent's answers in its data directory, so that a
// command delivered again to a restarted agent (it was killed before the
// command's offset was committed) is answered with the first answer instead
// of being executed a second time. The answer caches in memory stay the
// index; the file only lets them survive the process.
//
// The file (answers-<agent id>.log) is append-only, one answer a line, and
// an answer is fsynced before it is produced: the offset of a command is
// marked only after its answer is produced, so no offset can be committed
// for a command whose answer would be forgotten. Appends that arrive
// together share one write and one fsync (group commit), so a batch of
// commands pays one disk flush, not one each.
//
// A line is "<crc32c of the JSON, 8 hex digits> <JSON>\n". A kill during an
// append leaves a torn or unsynced last line; a line without its newline or
// whose checksum does not match is skipped when the file is read. The file
// is rewritten from the answers still remembered (the bounded caches) when
// it is opened and whenever it has grown by as many lines as it then held,
// by temp file, fsync and rename: a kill leaves the old or the new file,
// and the file stays within about twice what the caches hold.
type answerLog struct {
	path string
	log  *slog.Logger
	// live returns the answers the caches remember, each host's oldest
	// first: what a rewrite keeps.
	live   func() []keptAnswer
	unlock func()

	ops  chan logOp
	done chan struct{}
	once sync.Once

	// Owned by the writer goroutine once started.
	f        *os.File // nil after a failure: the next write rewrites the file
	kept     int      // lines written by the last rewrite
	appended int      // lines appended since
}

// keptAnswer is one line of the file: an answer and the trace it carried.
// The JSON names are the Go field names of schemas.AgentAnswer.
type keptAnswer struct {
	Answer      schemas.AgentAnswer `json:"answer"`
	Traceparent string              `json:"traceparent,omitempty"`
}

// logOp is one append, or with no line a barrier: then is called once every
// line queued before it is on disk.
type logOp struct {
	line []byte
	then func(error)
}

const (
	// minRewrite is the fewest appended lines that trigger a rewrite, so
	// an agent that remembers few answers does not rewrite all the time.
	minRewrite = 1024
	// maxGroup bounds the lines of one write and fsync.
	maxGroup = 1024
	// lockWait is how long an agent waits for the file's lock, held by a
	// process with the same agent id that is still stopping.
	lockWait = 10 * time.Second
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// openAnswerLog locks and reads the answers file of agent id in dir,
// creating dir if needed. It returns the log, not yet writing, and the
// answers the file holds in the order they were written; start begins
// appending once they are in the caches.
func openAnswerLog(ctx context.Context, dir, id string, log *slog.Logger) (*answerLog, []keptAnswer, error) {
	if id == "" || filepath.Base(id) != id {
		return nil, nil, fmt.Errorf("answers file: agent id %q cannot name a file", id)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("answers dir: %w", err)
	}
	path := filepath.Join(dir, "answers-"+id+".log")
	lctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	unlock, err := filelock.Lock(lctx, path+".lock")
	if err != nil {
		return nil, nil, fmt.Errorf("answers file %s (is another agent %s running?): %w", path, id, err)
	}
	answers, skipped, err := readAnswers(path)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	if skipped > 0 {
		// Expected after a kill during an append: that answer was never
		// produced, and its command was not committed either.
		log.Warn("answers file: unreadable lines skipped", "path", path, "lines", skipped)
	}
	l := &answerLog{path: path, log: log, unlock: unlock, ops: make(chan logOp, maxGroup), done: make(chan struct{})}
	return l, answers, nil
}

// readAnswers reads every intact line of the file; a missing file holds
// none.
func readAnswers(path string) (answers []keptAnswer, skipped int, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read answers file: %w", err)
	}
	for len(data) > 0 {
		line, rest, complete := bytes.Cut(data, []byte{'\n'})
		data = rest
		if !complete {
			skipped++ // torn: the kill came before the newline
			break
		}
		a, ok := decodeAnswer(line)
		if !ok {
			skipped++
			continue
		}
		answers = append(answers, a)
	}
	return answers, skipped, nil
}

func encodeAnswer(a keptAnswer) []byte {
	js, err := json.Marshal(a)
	if err != nil {
		panic(fmt.Sprintf("answers file: encode %+v: %v", a, err)) // strings and numbers only
	}
	line := make([]byte, 0, 9+len(js)+1)
	line = fmt.Appendf(line, "%08x ", crc32.Checksum(js, castagnoli))
	line = append(line, js...)
	return append(line, '\n')
}

func decodeAnswer(line []byte) (keptAnswer, bool) {
	var a keptAnswer
	if len(line) < 10 || line[8] != ' ' {
		return a, false
	}
	want, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return a, false
	}
	js := line[9:]
	if crc32.Checksum(js, castagnoli) != uint32(want) {
		return a, false
	}
	if err := json.Unmarshal(js, &a); err != nil || a.Answer.CommandID == "" {
		return a, false
	}
	return a, true
}

// start rewrites the file from live (dropping torn lines, repeats and the
// answers the caches forgot) and starts the writer.
func (l *answerLog) start(live func() []keptAnswer) error {
	l.live = live
	if err := l.rewrite(); err != nil {
		l.unlock()
		return err
	}
	go l.run()
	return nil
}

// keep queues a for the file and calls then once it is on disk, or with
// the error that kept it off. A nil log (no data directory) calls then at
// once.
func (l *answerLog) keep(a keptAnswer, then func(error)) {
	if l == nil {
		then(nil)
		return
	}
	l.ops <- logOp{line: encodeAnswer(a), then: then}
}

// sync calls then once every answer kept before it is on disk.
func (l *answerLog) sync(then func()) {
	if l == nil {
		then()
		return
	}
	l.ops <- logOp{then: func(error) { then() }}
}

// close waits for the queued appends and releases the file. Nothing may be
// appended after it.
func (l *answerLog) close() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		close(l.ops)
		<-l.done
		// Every append was synced before its answer went out: a failed
		// close loses nothing, but is worth a line.
		if l.f != nil {
			if err := l.f.Close(); err != nil {
				l.log.Warn("answers file not closed", "path", l.path, "err", err)
			}
		}
		l.unlock()
	})
}

// run writes what is queued, one group at a time.
func (l *answerLog) run() {
	defer close(l.done)
	group := make([]logOp, 0, maxGroup)
	for op := range l.ops {
		group = append(group[:0], op)
	gather:
		for len(group) < maxGroup {
			select {
			case op, ok := <-l.ops:
				if !ok {
					break gather
				}
				group = append(group, op)
			default:
				break gather
			}
		}
		err := l.write(group)
		for _, op := range group {
			op.then(err)
		}
	}
}

// write appends a group's lines with one write and one fsync.
func (l *answerLog) write(group []logOp) error {
	var buf []byte
	n := 0
	for _, op := range group {
		if op.line != nil {
			buf = append(buf, op.line...)
			n++
		}
	}
	if n == 0 {
		return nil // barriers only: everything before them was synced
	}
	if l.f == nil {
		// A write failed before: the caches hold this group's answers
		// too, so writing them all afresh covers it.
		return l.rewrite()
	}
	_, err := l.f.Write(buf)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		// After a failed write or fsync the file's contents are unknown
		// (Linux may drop the dirty pages and report a later fsync as
		// successful), so it is not appended to again: rewritten instead.
		l.log.Warn("answers file append failed; rewriting it", "path", l.path, "err", err)
		_ = l.f.Close() // abandoned: what it holds is unknown either way
		l.f = nil
		return l.rewrite()
	}
	l.appended += n
	if l.appended >= max(l.kept, minRewrite) {
		if err := l.rewrite(); err != nil {
			// The appended answers are on disk; only the compaction failed.
			l.log.Warn("answers file not compacted", "path", l.path, "err", err)
		}
	}
	return nil
}

// rewrite replaces the file with the answers the caches remember, then
// appends to the new file.
func (l *answerLog) rewrite() error {
	answers := l.live()
	if err := writeAnswers(l.path, answers); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open answers file: %w", err)
	}
	if l.f != nil {
		// The replaced file, already renamed over: what it held was synced
		// and the new one holds it too.
		_ = l.f.Close()
	}
	l.f, l.kept, l.appended = f, len(answers), 0
	return nil
}

// writeAnswers replaces the file at path with answers (internal/atomicfile:
// a crash or a power loss leaves the old file or the new one).
func writeAnswers(path string, answers []keptAnswer) error {
	var buf bytes.Buffer
	for _, a := range answers {
		buf.Write(encodeAnswer(a))
	}
	if err := atomicfile.Write(path, buf.Bytes()); err != nil {
		return fmt.Errorf("replace answers file: %w", err)
	}
	return nil
}

// record is the answer as it is produced on vm.answers.v1.
func (a keptAnswer) record() schemas.Record {
	ans := a.Answer
	h := map[string]string{"command_id": ans.CommandID}
	if a.Traceparent != "" {
		h["traceparent"] = a.Traceparent
	}
	return schemas.Record{Topic: schemas.TopicVmAnswers, Key: ans.VmID, Value: &ans, Headers: h}
}

// keptOf is the line of an answer record made by execute.
func keptOf(r schemas.Record) (keptAnswer, bool) {
	ans, ok := r.Value.(*schemas.AgentAnswer)
	if !ok {
		return keptAnswer{}, false
	}
	return keptAnswer{Answer: *ans, Traceparent: r.Headers["traceparent"]}, true
}

package testkit

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// BrokerProcess is the embedded broker in a process of its own, on a data
// directory, so that a test can SIGKILL it and start it again on the same
// log: what a crash does to a broker's files cannot be done in process. The
// process is the test binary itself, started again with an environment
// that makes BrokerMain serve instead of testing.
type BrokerProcess struct {
	t    testing.TB
	dir  string
	addr string
	cmd  *exec.Cmd
}

const (
	envBrokerDir  = "VMPLANE_TESTKIT_BROKER_DIR"
	envBrokerAddr = "VMPLANE_TESTKIT_BROKER_ADDR"
)

// BrokerMain serves a broker and never returns when the test binary was
// started by StartBrokerProcess; otherwise it returns at once. Call it
// first in the TestMain of a package that uses StartBrokerProcess.
func BrokerMain() {
	dir := os.Getenv(envBrokerDir)
	if dir == "" {
		return
	}
	b, err := kafka.StartBroker(os.Getenv(envBrokerAddr), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
	fmt.Println("broker ready", strings.Join(b.Addrs(), ","))
	select {}
}

// StartBrokerProcess starts a broker process on a free loopback port with
// its log in dir and creates the topics; the process is killed when the
// test ends.
func StartBrokerProcess(t testing.TB, dir string) *BrokerProcess {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	b := &BrokerProcess{t: t, dir: dir, addr: addr}
	b.Start()
	t.Cleanup(b.Kill)
	cl, err := kgo.NewClient(b.Config().Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := b.Config().EnsureTopics(t.Context(), cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	return b
}

// Config reaches the broker.
func (b *BrokerProcess) Config() kafka.Config {
	return kafka.Config{Brokers: []string{b.addr}}
}

// Start starts the broker process again on the same address and log, and
// waits until it serves.
func (b *BrokerProcess) Start() {
	b.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envBrokerDir+"="+b.dir, envBrokerAddr+"="+b.addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.cmd = cmd
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "broker ready") {
				ready <- nil
				for sc.Scan() {
				}
				return
			}
		}
		ready <- fmt.Errorf("broker process ended before it served")
	}()
	select {
	case err := <-ready:
		if err != nil {
			b.t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		b.t.Fatal("broker process not ready within 60 s")
	}
}

// Kill sends SIGKILL to the broker process and waits for it to end: no
// flush, no clean shutdown, as in a crash.
func (b *BrokerProcess) Kill() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	_ = b.cmd.Wait()
	b.cmd = nil
}

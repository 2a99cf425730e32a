package dev

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// pythonAgentDir is examples/agent-python, the example agent in another
// language, seen from this package.
const pythonAgentDir = "../../examples/agent-python"

// python returns an interpreter that imports the modules the example agent
// runs on, Debian's python3-confluent-kafka and python3-avro:
// $VMPLANE_PYTHON, else python3 on PATH, else /usr/bin/python3 (Debian's
// packages serve its own interpreter only, and a python3 of pyenv earlier on
// PATH does not see them). Missing is a failure, since ops/install.sh
// installs them, except under -short.
func python(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, py := range []string{os.Getenv("VMPLANE_PYTHON"), "python3", "/usr/bin/python3"} {
		if py == "" {
			continue
		}
		out, err := exec.Command(py, "-B", "-c", "import confluent_kafka, avro").CombinedOutput()
		if err == nil {
			return py
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", py, err, bytes.TrimSpace(out)))
	}
	msg := "no python3 imports confluent_kafka and avro (Debian's python3-confluent-kafka and python3-avro; ops/install.sh installs them): " + strings.Join(tried, "; ")
	if testing.Short() {
		t.Skip(msg)
	}
	t.Fatal(msg)
	return ""
}

// TestPythonCodecAgrees holds the example agent's Avro framing to the Go
// codec's: for every record type the all-defaults value the Python codec
// writes is byte for byte what schemas.Marshal writes of the zero value
// (C3 01, the CRC-64-AVRO fingerprint it computes itself, the body), and
// for every schema file, older versions included, its fingerprint is
// goavro's.
func TestPythonCodecAgrees(t *testing.T) {
	py := python(t)
	script := `
import glob, json, os, sys
import avro.schema, vmplane_avro as v
d = sys.argv[1]
c = v.Codec(d)
fps = {}
for p in glob.glob(os.path.join(d, "*.avsc")) + glob.glob(os.path.join(d, "history", "*.avsc")):
    fps[os.path.relpath(p, d)] = "%016x" % v.fingerprint(avro.schema.parse(open(p).read()))
print(json.dumps({"zero": {n: c.encode(n, c.record(n)).hex() for n in c.schemas}, "fingerprints": fps}))
`
	dir, err := filepath.Abs("../../schemas/avro")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), py, "-B", "-c", script, dir)
	cmd.Dir = pythonAgentDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python codec: %v\n%s", err, stderr.Bytes())
	}
	var got struct {
		Zero         map[string]string `json:"zero"`
		Fingerprints map[string]string `json:"fingerprints"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}

	names := schemas.Names()
	if len(got.Zero) != len(names) {
		t.Errorf("python knows %d record types, Go %d", len(got.Zero), len(names))
	}
	for _, name := range names {
		v, _ := schemas.New(name)
		want, err := schemas.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got.Zero[name] != hex.EncodeToString(want) {
			t.Errorf("%s: python writes %s, Go %x", name, got.Zero[name], want)
		}
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.avsc"))
	old, _ := filepath.Glob(filepath.Join(dir, "history", "*.avsc"))
	for _, f := range append(files, old...) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := goavro.NewCodec(string(text))
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, f)
		if want := fmt.Sprintf("%016x", c.Rabin); got.Fingerprints[rel] != want {
			t.Errorf("%s: python fingerprint %q, goavro %s", rel, got.Fingerprints[rel], want)
		}
	}
}

// TestPythonAgent runs the example agent (examples/agent-python) as a
// subprocess against a dev stack: an admin adds its host, the agent's hello
// and first report round make it Up, bad records on its commands are skipped,
// a VM of an offering placed on its tag only is deployed and runs there, the
// agent powers the guest off on its own (SIGUSR1) and the VM follows to
// Stopped with a GuestShutdown alert, a start through the API runs it again,
// the agent killed and started again on its state directory still runs the
// guest and stops it when told, and its goodbye leaves the host
// Disconnected. Then every record the agent wrote is read back: in the
// partition Kafka's murmur2 gives its key, with its `type` header, decoded by
// the Go codec, with report sequences that only grow, and none dead-lettered.
func TestPythonAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	py := python(t)
	began := time.Now()
	pgDSN := envOr("VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	chAddr := envOr("VMPLANE_CH_ADDR", "127.0.0.1:9000")
	db := "vmplane_py_" + randHex(4)
	t.Cleanup(func() { dropDatabases(pgDSN, chAddr, db) })
	cfg := Config{VarDir: t.TempDir(), KafkaAddr: freeAddr(t), HTTPAddr: freeAddr(t), PostgresDSN: pgDSN,
		ClickHouse: chAddr, Database: db, Hosts: 1, PingInterval: time.Second}
	st, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A cleanup, not a defer: cleanups run last first, so an agent the
	// test did not stop stops before the stack does.
	t.Cleanup(st.Stop)
	api, key := "http://"+cfg.HTTPAddr, st.AdminKey
	t.Logf("stack up after %v", time.Since(began).Round(time.Millisecond))

	// An admin adds the host first: the way in when auto-registration is
	// off. It waits in Creating until its agent says hello.
	const host = "py-1"
	code, added := call(t, "POST", api+"/v1/hosts", key, map[string]any{"id": host, "zone_id": "zone-1", "hypervisor": "python"})
	if code != http.StatusAccepted {
		t.Fatalf("add host: %d %v", code, added)
	}
	waitFor(t, 10*time.Second, host+" Creating", func() bool {
		_, h := call(t, "GET", api+"/v1/hosts/"+host, key, nil)
		return h["status"] == "Creating"
	})

	args := []string{"--brokers", strings.Join(st.Kafka().Brokers, ","), "--host-id", host, "--zone", "zone-1",
		"--cpu", "4", "--memory-mb", "4096", "--tag", "python", "--ping-interval", "1", "--state-dir", t.TempDir()}
	agent := startPythonAgent(t, py, args...)
	waitFor(t, 20*time.Second, host+" Up", func() bool {
		_, h := call(t, "GET", api+"/v1/hosts/"+host, key, nil)
		return h["status"] == "Up" && h["reservable"] == true
	})
	_, h := call(t, "GET", api+"/v1/hosts/"+host, key, nil)
	if h["hypervisor"] != "python" || h["cpu"] != 4.0 || h["memory_mb"] != 4096.0 || fmt.Sprint(h["tags"]) != "[python]" || h["cluster_id"] != "python-cluster" {
		t.Fatalf("host as the agent announced it: %v", h)
	}
	t.Logf("host Up after %v", time.Since(began).Round(time.Millisecond))

	// Bad input on its commands is logged and skipped; the deploy below
	// comes after it in the same partition and must still be carried out.
	poison := sendPoison(t, st.Kafka(), host)

	// Placed on the python host only: the offering asks for its tag.
	code, off := call(t, "POST", api+"/v1/offerings", key, map[string]any{"name": "python-small", "cpu": 1, "memory_mb": 512, "host_tags": []string{"python"}})
	if code != http.StatusCreated {
		t.Fatalf("create offering: %d %v", code, off)
	}
	waitFor(t, 10*time.Second, "the offering listed", func() bool {
		code, _ := call(t, "GET", api+"/v1/offerings/"+off["id"].(string), key, nil)
		return code == http.StatusOK
	})
	code, job := call(t, "POST", api+"/v1/vms", key, map[string]any{"name": "py-vm-1", "offering": "python-small"})
	if code != http.StatusAccepted {
		t.Fatalf("deploy: %d %v", code, job)
	}
	vmID := job["vm_id"].(string)
	waitJob(t, api, key, job["id"].(string))
	if vm := getVM(t, api, key, vmID); vm["vm_state"] != "Active" || vm["power_state"] != "PowerOn" || vm["host_id"] != host {
		t.Fatalf("after deploy: %v", vm)
	}
	t.Logf("VM running on %s after %v", host, time.Since(began).Round(time.Millisecond))

	// The guest powers itself off, behind vmplane's back.
	if err := agent.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the VM Stopped with a GuestShutdown alert", func() bool {
		vm := getVM(t, api, key, vmID)
		_, alerts := call(t, "GET", api+"/v1/alerts?vm="+vmID, key, nil)
		items, _ := alerts["items"].([]any)
		for _, a := range items {
			if a.(map[string]any)["kind"] == "GuestShutdown" {
				return vm["vm_state"] == "Stopped" && vm["power_state"] == "PowerOff"
			}
		}
		return false
	})

	// A start through the API is a new job, a new epoch, and runs it again.
	code, job = call(t, "POST", api+"/v1/vms/"+vmID+"/actions", key, map[string]any{"action": "start"})
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, job)
	}
	waitJob(t, api, key, job["id"].(string))
	if vm := getVM(t, api, key, vmID); vm["vm_state"] != "Active" || vm["power_state"] != "PowerOn" {
		t.Fatalf("after start: %v", vm)
	}

	// Killed and started again on its state directory, the agent finds
	// its guest running, its reports are newer than its predecessor's, and
	// it takes commands again.
	killed := time.Now()
	if err := agent.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = agent.cmd.Wait()
	if n := strings.Count(agent.log.String(), "skipping an undecodable agent command"); n != poison {
		t.Errorf("the agent logged %d undecodable commands, want %d", n, poison)
	}
	agent = startPythonAgent(t, py, args...)
	waitFor(t, 10*time.Second, "the agent announcing its host again", func() bool {
		return strings.Contains(agent.log.String(), "announcing host "+host+" (1 VMs)")
	})
	t.Logf("agent killed and announcing again after %v", time.Since(killed).Round(time.Millisecond))
	code, job = call(t, "POST", api+"/v1/vms/"+vmID+"/actions", key, map[string]any{"action": "stop"})
	if code != http.StatusAccepted {
		t.Fatalf("stop: %d %v", code, job)
	}
	waitJob(t, api, key, job["id"].(string))
	if vm := getVM(t, api, key, vmID); vm["vm_state"] != "Stopped" || vm["power_state"] != "PowerOff" || vm["host_id"] != host {
		t.Fatalf("after a restart of the agent and a stop: %v", vm)
	}

	// The agent's goodbye.
	if err := agent.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(agent.cmd, 15*time.Second); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	waitFor(t, 10*time.Second, host+" Disconnected", func() bool {
		_, h := call(t, "GET", api+"/v1/hosts/"+host, key, nil)
		return h["status"] == "Disconnected"
	})

	checkAgentRecords(t, st.Kafka(), host, vmID)
	t.Logf("whole test %v", time.Since(began).Round(time.Millisecond))
}

// pythonAgent is the example agent's process and its log.
type pythonAgent struct {
	cmd *exec.Cmd
	log *lockedBuffer
}

// startPythonAgent starts the example agent; its log goes to the test's
// log at the end. A cleanup stops it if the test did not.
func startPythonAgent(t *testing.T, py string, args ...string) pythonAgent {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-B", "agent.py"}, args...)...)
	cmd.Dir = pythonAgentDir
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := waitExit(cmd, 15*time.Second); err != nil {
				t.Errorf("agent exit: %v", err)
			}
		}
		t.Logf("python agent:\n%s", out.String())
	})
	return pythonAgent{cmd: cmd, log: out}
}

// lockedBuffer is a buffer the process writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sendPoison writes records to host's agent commands that no agent can
// carry out, as a Go producer would place them, and returns how many: not
// Avro, a StartVm cut short, a StopVm whose type header says StartVm, and a
// value in the Confluent framing (which needs a schema registry).
func sendPoison(t *testing.T, kc kafka.Config, host string) int {
	t.Helper()
	cmd := schemas.AgentCommand{CommandID: "poison-" + randHex(4), HostID: host, VmID: "vm-none", IssuedAt: time.Now().UnixMilli()}
	start, err := schemas.Marshal(&schemas.StartVm{AgentCommand: cmd})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := schemas.Marshal(&schemas.StopVm{AgentCommand: cmd})
	if err != nil {
		t.Fatal(err)
	}
	values := []struct {
		typ   string
		value []byte
	}{
		{"StartVm", []byte("not avro")},
		{"StartVm", start[:len(start)-3]},
		{"StartVm", stop},
		{"StartVm", append([]byte{0, 0, 0, 0, 1}, start[10:]...)},
	}
	cl, err := kgo.NewClient(kc.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		kr := &kgo.Record{Topic: schemas.TopicAgentCommands, Key: []byte(host), Value: v.value,
			Headers: []kgo.RecordHeader{{Key: "type", Value: []byte(v.typ)}}}
		if err := cl.ProduceSync(t.Context(), kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return len(values)
}

// waitExit waits for the process to exit, killing it after d.
func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("not gone %v after SIGTERM; killed", d)
	}
}

// checkAgentRecords reads back what the agent wrote: the host's events and
// the VM's reports and answers. Each record is in the partition Kafka's
// murmur2 gives its key (as every Go client places it), carries its `type`
// header and decodes with the Go codec; report sequences grow; nothing of
// the host or the VM is a dead letter.
func checkAgentRecords(t *testing.T, kc kafka.Config, host, vmID string) {
	t.Helper()
	codec, err := kc.Codec()
	if err != nil {
		t.Fatal(err)
	}
	hash := kgo.StickyKeyPartitioner(nil)
	seen := map[string]int{}
	var pingSeqs, reportSeqs []int64
	var dead []string
	topics := []string{schemas.TopicHostEvents, schemas.TopicVmPower, schemas.TopicVmAnswers, schemas.TopicDLQ}
	err = kafka.ReadToEnd(t.Context(), kc, topics, func(kr *kgo.Record) error {
		if kr.Attrs.IsControl() {
			return nil
		}
		k := string(kr.Key)
		if kr.Topic == schemas.TopicDLQ {
			if k == host || k == vmID {
				dead = append(dead, fmt.Sprintf("%s: %s", kafka.DeadLetterHeader(kr, "dlq.topic"), kafka.DeadLetterHeader(kr, "dlq.error")))
			}
			return nil
		}
		if (kr.Topic == schemas.TopicHostEvents && k != host) || (kr.Topic != schemas.TopicHostEvents && k != vmID) {
			return nil
		}
		spec, _ := schemas.TopicByName(kr.Topic)
		if want := hash.ForTopic(kr.Topic).Partition(kr, int(schemas.Partitions[spec.KeyClass])); int(kr.Partition) != want {
			t.Errorf("%s key %s in partition %d, murmur2 says %d", kr.Topic, k, kr.Partition, want)
		}
		rec, err := kafka.FromKafka(t.Context(), codec, kr)
		if err != nil {
			t.Errorf("%s key %s: %v", kr.Topic, k, err)
			return nil
		}
		name := kafka.Header(kr, "type")
		if name != schemas.TypeName(rec.Value) {
			t.Errorf("%s key %s: type header %q for a %s", kr.Topic, k, name, schemas.TypeName(rec.Value))
		}
		seen[name]++
		switch v := rec.Value.(type) {
		case *schemas.AgentPing:
			pingSeqs = append(pingSeqs, v.ReportSeq)
		case *schemas.PowerReport:
			reportSeqs = append(reportSeqs, v.ReportSeq)
			if v.HostID != host {
				t.Errorf("power report from host %q", v.HostID)
			}
		case *schemas.AgentAnswer:
			if !v.OK || v.PowerHost != host || v.ReportSeq == 0 || rec.Headers["command_id"] != v.CommandID {
				t.Errorf("answer %+v, headers %v", v, rec.Headers)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("records of the python agent: %v", seen)
	for _, name := range []string{"AgentConnected", "AgentPing", "PowerReport", "AgentAnswer", "AgentDisconnected"} {
		if seen[name] == 0 {
			t.Errorf("no %s from the python agent", name)
		}
	}
	// One key is one partition, so its records are read in the order written.
	for _, seqs := range [][]int64{pingSeqs, reportSeqs} {
		if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
			t.Errorf("report sequences do not only grow: %v", seqs)
		}
	}
	if len(dead) > 0 {
		t.Errorf("dead letters of the python agent's records: %v", dead)
	}
}

#!/usr/bin/python3
"""An example vmplane hypervisor agent in Python: one host whose VMs "run" in memory.

It speaks the agent's side of vmplane's Kafka contract, as the Go agent (producers/agent) does:

- announces its host on host.events.v1 (AgentConnected, keyed by the host id), and then, every
  ping interval, reports each VM's power on vm.power.v1 (PowerReport, keyed by the VM id) and
  closes the round with an AgentPing listing the host's VMs, all under one new report_seq;
- reads agent.commands.v1 (every partition, as a consumer group; keyed by host id) and carries
  out the commands whose host_id is its host, answering each on vm.answers.v1 (AgentAnswer,
  keyed by the VM id, with the command's id and epoch) and following a success with the VM's
  PowerReport;
- reports a change it sees on its own at once: on SIGUSR1 every running guest "powers itself
  off", which the control plane follows (the VM becomes Stopped, with a GuestShutdown alert).

Every value is Avro with single-object encoding (vmplane_avro.py) and every record has a
`type` header naming its record. Keys are placed by Kafka's murmur2 hash, as every vmplane
client places them. README.md says how to run it and what it does not do.
"""

import argparse
import collections
import json
import logging
import os
import re
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

import vmplane_avro

COMMANDS = "agent.commands.v1"
ANSWERS = "vm.answers.v1"
POWER = "vm.power.v1"
HOST_EVENTS = "host.events.v1"

POWER_ON, POWER_OFF, PAUSED, SUSPENDED = "PowerOn", "PowerOff", "Paused", "Suspended"

# The records of agent.commands.v1 (schemas/topics.go).
VM_COMMANDS = {
    "StartVm", "StopVm", "DestroyVm", "RebootVm", "PauseVm", "UnpauseVm", "SuspendVm", "ResumeVm",
    "RescueVm", "UnrescueVm", "RebuildVm", "SnapshotVm", "RevertSnapshotVm", "DeleteSnapshotVm",
    "MigrateVm", "AbortMigrateVm", "CheckVm", "AttachVolumeVm", "DetachVolumeVm", "ResizeVolumeVm",
    "SnapshotVolumeVm", "DeleteVolumeVm",
}
# Addressed by cluster, keyed by the host to look at: an agent serving another live host of
# that cluster answers. This agent serves one host, so it is never that neighbour.
INVESTIGATIONS = {"CheckHost", "FenceHost"}

# What a command does to a VM's power: the states it may start from (None: any) and the state
# it leaves. A command for a VM already in the target state succeeds, as with the Go drivers.
TRANSITIONS = {
    "StopVm": (None, POWER_OFF),
    "RebootVm": ({POWER_ON}, POWER_ON),
    "PauseVm": ({POWER_ON}, PAUSED),
    "UnpauseVm": ({PAUSED}, POWER_ON),
    "SuspendVm": ({POWER_ON}, SUSPENDED),
    "ResumeVm": ({SUSPENDED}, POWER_ON),
    "RescueVm": (None, POWER_ON),
    "UnrescueVm": (None, POWER_ON),
    "RebuildVm": (None, POWER_ON),
}

# Errors an answer carries, worded as the Go agent words them.
ERR_UNSUPPORTED = "unsupported by agent"
ERR_EXPIRED = "expired: the job that sent it has timed out"
ERR_SUPERSEDED = "superseded: a newer job's command for this VM was carried out on this host"

ANSWERS_KEPT = 256  # answers remembered by command id, as the Go agent keeps per host
LEDGER_DONE = 16  # command ids kept per VM in its ledger

log = logging.getLogger("agent-python")


def now_ms():
    return int(time.time() * 1000)


class Unanswered(Exception):
    """A command that gets no answer: the job that sent it resends it or times out."""


class Host:
    """The host's state: its VMs (in memory), their ledgers, the answers given, when it came up.

    With a state directory it is one JSON file, written whole and renamed into place before
    an answer is sent, so a killed agent finds the old or the new state, never a half.
    """

    def __init__(self, host_id, state_dir):
        self.path = os.path.join(state_dir, host_id + ".json") if state_dir else None
        self.vms = {}  # vm id -> {"power", "name", "cpu", "memory_mb"}
        # vm id -> {"epoch": newest epoch admitted, "done": ids of its commands carried out}
        self.ledgers = {}
        self.answers = collections.OrderedDict()  # command id -> AgentAnswer value
        # Guests in memory die with the process: a new one is a host back from being down,
        # and commands issued before it came up are void here.
        self.up_since = now_ms()
        if self.path and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                s = json.load(f)
            self.vms, self.ledgers, self.up_since = s["vms"], s["ledgers"], s["up_since"]
            self.answers.update((a["command_id"], a) for a in s["answers"])
            log.info("host state read from %s: %d VMs, %d answers", self.path, len(self.vms), len(self.answers))

    def save(self):
        if not self.path:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"vms": self.vms, "ledgers": self.ledgers, "up_since": self.up_since,
                       "answers": list(self.answers.values())}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def power_states(self):
        return {vm: v["power"] for vm, v in sorted(self.vms.items())}

    def power(self, vm_id):
        """A VM's power; PowerOff for a VM the host does not have."""
        return self.vms.get(vm_id, {}).get("power", POWER_OFF)

    def keep_answer(self, answer):
        self.answers[answer["command_id"]] = answer
        while len(self.answers) > ANSWERS_KEPT:
            self.answers.popitem(last=False)

    def admit(self, cmd):
        """Decides a command against the VM's ledger, as the Go agent's ledger.go does:
        (carried out here before, error). A command of an older epoch than one admitted here
        is superseded; a newer epoch is recorded. Raises Unanswered for a command issued at
        or before the host came up.
        """
        if cmd["issued_at"] <= self.up_since:
            raise Unanswered("issued before the host came back from being down")
        ledger = self.ledgers.setdefault(cmd["vm_id"], {"epoch": 0, "done": []})
        if cmd["epoch"] < ledger["epoch"]:
            return False, f"{ERR_SUPERSEDED} (epoch {cmd['epoch']}; host ran epoch {ledger['epoch']})"
        if cmd["epoch"] == ledger["epoch"]:
            return cmd["command_id"] in ledger["done"], None
        ledger["epoch"], ledger["done"] = cmd["epoch"], []
        return False, None

    def carried_out(self, cmd):
        done = self.ledgers[cmd["vm_id"]]["done"]
        done.append(cmd["command_id"])
        del done[:-LEDGER_DONE]

    def execute(self, name, cmd):
        """Carries a command out on the in-memory VMs: (error or None, report power after)."""
        vm_id = cmd["vm_id"]
        vm = self.vms.get(vm_id)
        if name == "StartVm":
            self.vms[vm_id] = {"power": POWER_ON, "name": cmd["name"], "cpu": cmd["cpu"], "memory_mb": cmd["memory_mb"]}
            return None, True
        if name == "DestroyVm":
            self.vms.pop(vm_id, None)  # already gone: destroying is idempotent
            return None, False
        if name == "CheckVm":
            return None, False  # the answer carries the power; nothing changes
        if name not in TRANSITIONS:
            return ERR_UNSUPPORTED, False
        if vm is None:
            return f"{name} {vm_id}: unknown vm", False
        allowed, to = TRANSITIONS[name]
        if allowed is not None and vm["power"] not in allowed and vm["power"] != to:
            return f"{name} {vm_id}: wrong power state {vm['power']}", False
        vm["power"] = to
        return None, True


class Agent:
    def __init__(self, args, codec):
        self.args = args
        self.codec = codec
        self.host_id = args.host_id
        self.host = Host(args.host_id, args.state_dir)
        # The per-host report sequence. It starts from the agent's start time (ms × 1000), so
        # a restarted agent's reports are newer than its predecessor's; each round, change and
        # answer takes the next one before it reads the power it reports.
        self.seq = now_ms() * 1000
        self.connected = False  # AgentConnected went out since the agent (re)started
        self.rejected = False
        self.oob_stop = False
        self.stopping = False
        self.started = now_ms()
        self.produce_errors = []
        debug = {"debug": args.kafka_debug} if args.kafka_debug else {}
        self.producer = Producer({
            "bootstrap.servers": args.brokers,
            "client.id": self.group(),
            # Kafka's murmur2, as franz-go's StickyKeyPartitioner hashes: every vmplane client
            # puts a key in the same partition. librdkafka's default (consistent_random) would
            # put most keys elsewhere, and the processor owning the key would never read them.
            "partitioner": "murmur2_random",
            "enable.idempotence": True,  # retries keep the order of one key's records
            "linger.ms": 0,
            "logger": log,
            **debug,
        })
        self.consumer = Consumer({
            "bootstrap.servers": args.brokers,
            "client.id": self.group(),
            "group.id": self.group(),
            # A static member: restarted after a crash, it takes its partitions back at once.
            "group.instance.id": self.group(),
            "session.timeout.ms": 10000,
            # Processors write agent commands in transactions: read only committed ones.
            "isolation.level": "read_committed",
            # Offsets are stored once a command is answered and committed every second.
            "enable.auto.commit": True,
            "enable.auto.offset.store": False,
            "auto.commit.interval.ms": 1000,
            "auto.offset.reset": "latest",
            "logger": log,
            **debug,
        })

    def group(self):
        return "vmplane-agent-" + self.args.agent_id

    # Kafka ---------------------------------------------------------------------------------

    def send(self, topic, key, name, value, headers=None):
        """Queues one record: Avro value, `type` header = its record name, more headers."""
        hs = [("type", name.encode())] + [(k, v.encode()) for k, v in (headers or {}).items()]
        self.producer.produce(topic, key=key.encode(), value=self.codec.encode(name, value),
                              headers=hs, on_delivery=self.delivered)

    def delivered(self, err, msg):
        if err is not None:
            self.produce_errors.append(f"{msg.topic()} key {msg.key()}: {err}")

    def flush(self):
        """Waits for every queued record; False (and the host to be announced again) if any failed."""
        left = self.producer.flush(10)
        errors, self.produce_errors = self.produce_errors, []
        if left or errors:
            log.warning("records not sent: %d pending, %s", left, errors)
            self.connected = False
            return False
        return True

    def on_assign(self, consumer, partitions):
        """Starts each partition at a concrete offset: its committed one, else the first
        command newer than the agent's start minus a ping interval (older ones were for an
        earlier incarnation whose jobs have ended), else its end as of now."""
        committed = consumer.committed(partitions, timeout=10)
        since = self.started - int(self.args.ping_interval * 1000)
        fresh = [TopicPartition(p.topic, p.partition, since) for p in committed if p.offset < 0]
        found = {p.partition: p.offset for p in consumer.offsets_for_times(fresh, timeout=10)} if fresh else {}
        for p in committed:
            if p.offset >= 0:
                continue
            p.offset = found.get(p.partition, -1)
            if p.offset < 0:
                # Not the logical end (-1): librdkafka would look it up only once fetching
                # starts, and a command written meanwhile would be skipped. The end is the
                # last stable offset here (read_committed), so an open transaction's
                # commands are read once it commits.
                p.offset = consumer.get_watermark_offsets(p, timeout=10, cached=False)[1]
        consumer.assign(committed)
        log.info("reading %s from offsets %s", COMMANDS, ", ".join(f"{p.partition}:{p.offset}" for p in committed))

    # Reports -------------------------------------------------------------------------------

    def next_seq(self):
        self.seq += 1
        return self.seq

    def round(self):
        """One report round: AgentConnected first if not announced, a PowerReport per VM and an
        AgentPing with the VM list, all under one new report_seq."""
        seq, at = self.next_seq(), now_ms()
        states = self.host.power_states()
        if not self.connected:
            a = self.args
            log.info("announcing host %s (%d VMs)", self.host_id, len(states))
            self.send(HOST_EVENTS, self.host_id, "AgentConnected", self.codec.record(
                "AgentConnected", host_id=self.host_id, name=a.name or self.host_id, agent_id=a.agent_id,
                zone_id=a.zone, pod_id=a.pod, cluster_id=a.cluster, hypervisor="python", cpu=a.cpu,
                memory_mb=a.memory_mb, tags=a.tag, properties={}, vm_ids=list(states), at=at))
        for vm, power in states.items():
            self.send(POWER, vm, "PowerReport", self.power_report(vm, power, seq, at))
        self.send(HOST_EVENTS, self.host_id, "AgentPing", self.ping(seq, at))
        self.connected = self.flush()

    def power_report(self, vm, power, seq, at):
        return self.codec.record("PowerReport", vm_id=vm, host_id=self.host_id, power_state=power,
                                 report_seq=seq, reported_at=at)

    def ping(self, seq, at):
        return self.codec.record("AgentPing", host_id=self.host_id, report_seq=seq,
                                 vm_ids=list(self.host.power_states()), at=at)

    def power_off_guests(self):
        """The out-of-band change of SIGUSR1: every running guest powers itself off, and each is
        reported at once (a PowerReport and the host's VM list under a new sequence)."""
        for vm, power in self.host.power_states().items():
            if power not in (POWER_ON, PAUSED):
                continue
            self.host.vms[vm]["power"] = POWER_OFF
            self.host.save()
            log.info("guest %s powered itself off", vm)
            if self.connected:
                seq, at = self.next_seq(), now_ms()
                self.send(POWER, vm, "PowerReport", self.power_report(vm, POWER_OFF, seq, at))
                self.send(HOST_EVENTS, self.host_id, "AgentPing", self.ping(seq, at))
                self.flush()

    # Commands ------------------------------------------------------------------------------

    def command(self, msg):
        """Handles one record of agent.commands.v1. Whatever cannot be decoded is logged and
        skipped: an agent writes no dead letters, and the VM processor sends an unanswered
        command again."""
        headers = {k: (v or b"").decode("utf-8", "replace") for k, v in (msg.headers() or [])}
        try:
            name, cmd = self.codec.decode(msg.value())
            if headers.get("type", name) != name:
                raise vmplane_avro.DecodeError(f"type header {headers['type']!r} but the value is a {name}")
            if name not in VM_COMMANDS | INVESTIGATIONS | {"AgentRejected"}:
                raise vmplane_avro.DecodeError(f"{name} is not an agent command")
        except vmplane_avro.DecodeError as e:
            log.error("skipping an undecodable agent command at %s/%d@%d: %s",
                      msg.topic(), msg.partition(), msg.offset(), e)
            return
        if name in INVESTIGATIONS or cmd["host_id"] != self.host_id:
            return
        if name == "AgentRejected":
            log.error("host %s rejected by the control plane: %s; no more reports for it", self.host_id, cmd["reason"])
            self.rejected = True
            return
        prev = self.host.answers.get(cmd["command_id"])
        if prev is not None:
            # Delivered again (a resend, a replay after a restart): the first answer, again.
            self.send(ANSWERS, cmd["vm_id"], "AgentAnswer", prev, answer_headers(cmd, headers))
            self.flush()
            return
        try:
            error, report = self.carry_out(name, cmd)
        except Unanswered as e:
            log.warning("command %s %s dropped unanswered: %s", name, cmd["command_id"], e)
            return
        self.answer(name, cmd, headers, error, report)

    def carry_out(self, name, cmd):
        """Runs a command as the Go agent's Execute does: expiry, the ledger, then the VMs."""
        if cmd["expires_at"] and now_ms() > cmd["expires_at"]:
            return ERR_EXPIRED, False
        if name == "CheckVm":
            return self.host.execute(name, cmd)
        repeat, error = self.host.admit(cmd)
        if error or repeat:
            # Superseded; or carried out before, its answer lost with the agent's memory: the
            # answer reads the power as it is, and nothing runs again.
            return error, False
        error, report = self.host.execute(name, cmd)
        if error is None:
            self.host.carried_out(cmd)
        return error, report

    def answer(self, name, cmd, headers, error, report):
        """The answer, then after a success the VM's PowerReport under the answer's sequence,
        and the host's VM list when the VM came or went. The answer is kept (on disk with a
        state directory) before it is sent."""
        vm = cmd["vm_id"]
        seq, at = self.next_seq(), now_ms()
        power = self.host.power(vm)
        answer = self.codec.record(
            "AgentAnswer", command_id=cmd["command_id"], vm_id=vm, host_id=cmd["host_id"], epoch=cmd["epoch"],
            command_type=name, ok=error is None, error=error or "", power_state=power, answered_at=at,
            power_host=self.host_id, report_seq=seq)
        self.host.keep_answer(answer)
        self.host.save()
        log.info("%s %s on %s: %s", name, vm, self.host_id, "ok" if error is None else error)
        self.send(ANSWERS, vm, "AgentAnswer", answer, answer_headers(cmd, headers))
        if error is None and self.connected:
            if report:
                self.send(POWER, vm, "PowerReport", self.power_report(vm, power, seq, at), trace(headers))
            if name in ("StartVm", "DestroyVm"):
                self.send(HOST_EVENTS, self.host_id, "AgentPing", self.ping(seq, at))
        self.flush()

    # The loop ------------------------------------------------------------------------------

    def run(self):
        self.consumer.subscribe([COMMANDS], on_assign=self.on_assign)
        next_round = 0.0
        while not self.stopping and not self.rejected:
            if time.monotonic() >= next_round:
                self.round()
                next_round = time.monotonic() + self.args.ping_interval
            if self.oob_stop:
                self.oob_stop = False
                self.power_off_guests()
            msg = self.consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    log.warning("polling agent commands: %s", msg.error())
                continue
            self.command(msg)
            self.consumer.store_offsets(msg)
        self.close()
        return 2 if self.rejected else 0

    def close(self):
        """Says goodbye (AgentDisconnected) and commits what was answered."""
        if self.connected and not self.rejected:
            self.send(HOST_EVENTS, self.host_id, "AgentDisconnected", self.codec.record(
                "AgentDisconnected", host_id=self.host_id, reason=f"agent {self.args.agent_id} stopping", at=now_ms()))
            self.flush()
        self.consumer.close()
        log.info("agent stopped")


def answer_headers(cmd, headers):
    return {"command_id": cmd["command_id"], **trace(headers)}


def trace(headers):
    return {"traceparent": headers["traceparent"]} if headers.get("traceparent") else {}


ID = re.compile(r"[A-Za-z0-9._:-]{1,255}")


def an_id(s):
    """An id as vmplane's decoders require in every id field; another is a dead letter."""
    if not ID.fullmatch(s) or len(s.encode()) > 255:
        raise argparse.ArgumentTypeError(f"{s!r} is no id: 1 to 255 bytes of [A-Za-z0-9._:-]")
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--brokers", default="127.0.0.1:9092", help="Kafka bootstrap servers (comma separated)")
    p.add_argument("--host-id", required=True, type=an_id, help="the host this agent serves")
    p.add_argument("--agent-id", type=an_id,
                   help="names the agent; its consumer group is vmplane-agent-<id> (default py-<host id>)")
    p.add_argument("--name", help="the host's display name (default its id)")
    p.add_argument("--zone", default="zone-1", type=an_id, help="the host's zone")
    p.add_argument("--pod", type=an_id, help="the host's pod (default <zone>-pod-1)")
    p.add_argument("--cluster", default="python-cluster", type=an_id, help="the host's cluster")
    p.add_argument("--cpu", type=int, default=8, help="CPUs the host offers")
    p.add_argument("--memory-mb", type=int, default=16384, help="memory the host offers, MiB")
    p.add_argument("--tag", action="append", default=[], help="a host tag (repeat for more)")
    p.add_argument("--ping-interval", type=float, default=5.0,
                   help="seconds between report rounds; at most the control plane's ping.interval (5 s in make run)")
    p.add_argument("--state-dir", help="keep the host (VMs, ledgers, answers) in <dir>/<host id>.json across restarts")
    p.add_argument("--schemas", default=os.path.join(here, "..", "..", "schemas", "avro"),
                   help="the directory of vmplane's .avsc files")
    p.add_argument("--kafka-debug", help="librdkafka debug contexts to log, e.g. cgrp,fetch")
    args = p.parse_args()
    args.agent_id = args.agent_id or "py-" + args.host_id
    args.pod = args.pod or args.zone + "-pod-1"
    logging.basicConfig(level=logging.DEBUG if args.kafka_debug else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)

    agent = Agent(args, vmplane_avro.Codec(args.schemas))

    def stop(*_):
        agent.stopping = True

    def oob(*_):
        agent.oob_stop = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGUSR1, oob)
    log.info("agent %s serving host %s (brokers %s, ping interval %.1fs)", args.agent_id, args.host_id,
             args.brokers, args.ping_interval)
    sys.exit(agent.run())


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Runs every test against real servers: starts the test ClickHouse (and a
# local Postgres if none answers) under var/test, runs go test -race, and
# stops what it started, whatever the outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("${@:-./...}")
go run ./internal/testkit/cmd/teststack up
trap 'go run ./internal/testkit/cmd/teststack down' EXIT
go test -race -count=1 -timeout 12m "${pkgs[@]}"
# The seeded simulation of the whole control plane without the race
# detector (ten times slower, and a world is one goroutine): the quick
# search of docs/design.md §14, its default 2,000 seeds.
go test -count=1 -run '^TestSeeds$' ./ops/sim/
# Hostile input for a short while beyond the seeds that the run above
# tried: random and mutated records against every consumer, and random
# requests against every route of the API. The budgets are counts of
# inputs, not durations: with a duration, Go 1.26's fuzzing coordinator
# can report its own deadline as a failure ("context deadline exceeded",
# no input written; go.dev/issue/75804, fixed in Go 1.27), as FuzzHTTP
# did in CI on 2026-11-27. On this 2-core box 3,000 records take about
# 30 s with the seeds' replay and 8,000 requests about 17 s, so that
# `make test` stays under 15 minutes on a cold 2-core machine.
go test -run '^$' -fuzz '^FuzzConsumers$' -fuzztime 3000x -parallel 1 ./ops/poison/
go test -run '^$' -fuzz '^FuzzHTTP$' -fuzztime 8000x ./gateway/
# The benchmark harness in its quick mode, so that it never rots: it must
# run and print every row (figures are not judged here).
go build -o var/bench ./benchmarks/cmd/bench
out=$(./var/bench -quick -record=false -runs 1)
echo "$out"
for row in "end-to-end reports/s" "time to caught up" "VM processor reports/s" "Postgres row writes (vms)" \
           "VM processor restore" "VM processor heap per VM" "VM processor CPU" "Postgres writes after 3rd same-state report" \
           "reboot p99 at 20 actions/s" "decisions/s at 10000 hosts" "decisions/s at 100000 hosts" \
           "decisions/s through Kafka" "ingest rows/s" "analyst query p50/p95" \
           "events/s into an empty read model" \
           "hand-over stall" "reports applied twice" "reports not applied" "jobs started" \
           "deploy p99 at 20 deploys/s" "highest rate with p99 under 100ms" "100 hosts Up" \
           "agents connecting at once: all Up" "restart: hosts Disconnected, Alert or Down" "restart: hosts investigated" \
           "restart after an outage: hosts Disconnected, Alert or Down" \
           "synced data dir: one produce p50" "synced data dir: one produce p99" "synced data dir: pipelined produce" \
           "synced data dir: transaction p50" "synced data dir: transaction p99" \
           "data dir without fsync: one produce p50" "data dir without fsync: one produce p99" "data dir without fsync: pipelined produce" \
           "data dir without fsync: transaction p50" "data dir without fsync: transaction p99"; do
  grep -q -- "$row" <<<"$out" || { echo "make bench QUICK=1: row '$row' missing"; exit 1; }
done
if grep -q "error:" <<<"$out"; then echo "make bench QUICK=1: a scenario failed to run"; exit 1; fi

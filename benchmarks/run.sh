#!/usr/bin/env bash
# Runs the benchmark harness with the test servers up (started and stopped
# like ops/test.sh does). Arguments go to benchmarks/cmd/bench.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./internal/testkit/cmd/teststack up
trap 'go run ./internal/testkit/cmd/teststack down' EXIT
go build -o var/bench ./benchmarks/cmd/bench
./var/bench "$@"

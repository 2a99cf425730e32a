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

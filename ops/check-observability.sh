#!/usr/bin/env bash
# Checks what operators load from ops/deploy: promtool checks the Prometheus alert rules and runs
# their unit tests (ops/deploy/prometheus/*.test.yml), and a Go test lints the Grafana dashboards
# (ops/deploy/grafana) and holds every query of both to the metrics and labels vmplane registers
# (internal/telemetry's registry, not a list kept by hand).
#
# promtool is Prometheus's own, pinned by its Go module version and built once from the module
# proxy into var/tools (a few minutes the first time); Debian's is years older.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.316.0 # github.com/prometheus/prometheus, i.e. Prometheus 3.16.0
promtool=$PWD/var/tools/promtool-$version
if [[ ! -x $promtool ]]; then
	echo "check-observability: building promtool $version into var/tools (once)"
	mkdir -p var/tools
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	GOBIN=$tmp go install "github.com/prometheus/prometheus/cmd/promtool@$version"
	mv "$tmp/promtool" "$promtool"
fi

"$promtool" check rules ops/deploy/prometheus/vmplane-alerts.yml
# Rule files in a test are named relative to the test file.
(cd ops/deploy/prometheus && "$promtool" test rules ./*.test.yml)
go test -count=1 -run 'TestSelectors|TestDashboards|TestAlertRules' ./internal/telemetry

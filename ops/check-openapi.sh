#!/usr/bin/env bash
# Lints the API's OpenAPI document with redocly's recommended rules
# (tools/openapi: @redocly/cli pinned in package-lock.json, rules turned
# off with their reasons in redocly.yaml). The document is written by
# `vmplane openapi`, without a stack. Any error or warning fails: redocly
# itself fails on errors only, so the totals of its JSON report decide.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm npx; do
  command -v "$tool" >/dev/null || { echo "the OpenAPI lint needs $tool (node 20.19 or later): apt-get install nodejs npm"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run ./ops/cmd/vmplane openapi --out "$tmp/openapi.json"
npm ci --prefix tools/openapi --silent --no-audit --no-fund >/dev/null
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
lint() { npx --no-install --prefix tools/openapi redocly lint --extends=recommended --config tools/openapi/redocly.yaml "$@" "$tmp/openapi.json"; }
lint --format=json >"$tmp/report.json" 2>"$tmp/stderr" || true
if ! problems=$(node -e '
  const t = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).totals;
  console.log(t.errors + t.warnings);' "$tmp/report.json" 2>/dev/null); then
  echo "redocly lint gave no report:"; cat "$tmp/stderr" "$tmp/report.json"; exit 1
fi
if [[ $problems != 0 ]]; then
  echo "OpenAPI document: $problems redocly findings (errors and warnings both fail):"
  lint 2>&1 | grep -v '[╔║╚]' || true
  exit 1
fi
echo "OpenAPI document: redocly lint (recommended) clean"

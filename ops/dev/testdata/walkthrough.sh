#!/usr/bin/env bash
# The README's curl walkthrough, as a script: TestWalkthroughWithCurl runs it
# against a dev stack; with `make run` up it runs as is from the repository
# root. Change the README and this file together.
set -euo pipefail
API=${API:-http://127.0.0.1:8080}
ADMIN=$(cat "${ADMIN_KEY_FILE:-var/dev/admin-key}")
J='Content-Type: application/json'

# An admin creates an account and a user key for it (the key is shown once).
curl -sf -XPOST -H "Authorization: Bearer $ADMIN" -H "$J" -d '{"id":"acme","name":"Acme"}' "$API/v1/accounts"
KEY=$(curl -sf -XPOST -H "Authorization: Bearer $ADMIN" -H "$J" -d '{"role":"user","expires_in":"720h"}' \
      "$API/v1/accounts/acme/keys" | jq -r .key)

# Deploy (202 + Location: /v1/jobs/<id>); the Idempotency-Key makes a retry safe.
JOB=$(curl -sf -XPOST -H "Authorization: Bearer $KEY" -H "$J" -H "Idempotency-Key: web-2-deploy" \
      -d '{"name":"web-2","offering":"small"}' "$API/v1/vms" | jq -r .id)
AGAIN=$(curl -sf -XPOST -H "Authorization: Bearer $KEY" -H "$J" -H "Idempotency-Key: web-2-deploy" \
      -d '{"name":"web-2","offering":"small"}' "$API/v1/vms" | jq -r .id)
test "$JOB" = "$AGAIN"
curl -sf -H "Authorization: Bearer $KEY" "$API/v1/jobs/$JOB?wait=30s" | jq -e '.state == "succeeded"'
VM=$(curl -sf -H "Authorization: Bearer $KEY" "$API/v1/jobs/$JOB" | jq -r .vm_id)

# The job's steps as Server-Sent Events (the stream ends with the job).
curl -sfN --max-time 20 -H "Authorization: Bearer $KEY" "$API/v1/jobs/$JOB/events" | grep -q '^event: job'

# The VM, then a conditional GET: 304 while it has not changed. A VM a
# moment old still changes as its first power reports arrive (each is a new
# version, so a new ETag): take the ETag again until one holds.
for try in 1 2 3 4 5 6 7 8 9 10; do
  ETAG=$(curl -sf -D - -o /dev/null -H "Authorization: Bearer $KEY" "$API/v1/vms/$VM" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
  test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" -H "If-None-Match: $ETAG" "$API/v1/vms/$VM")" = 304 && break
  test "$try" -lt 10
  sleep 1
done

# Stop; a second stop is a 409 that names the allowed actions.
STOP=$(curl -sf -XPOST -H "Authorization: Bearer $KEY" -H "$J" -d '{"action":"stop"}' "$API/v1/vms/$VM/actions" | jq -r .id)
curl -sf -H "Authorization: Bearer $KEY" "$API/v1/jobs/$STOP?wait=30s" | jq -e '.state == "succeeded"'
curl -s -XPOST -H "Authorization: Bearer $KEY" -H "$J" -d '{"action":"stop"}' "$API/v1/vms/$VM/actions" \
  | jq -e '.error.code == "invalid_state" and (.error.details.allowed_actions | index("start"))'

# The VM's events, live: a stream opened before an action carries its job
# to the end (the gateway starts consuming when the first stream opens).
EV=$(mktemp); trap 'rm -f "$EV" "$EV.h"' EXIT
curl -sN --max-time 30 -D "$EV.h" -H "Authorization: Bearer $KEY" "$API/v1/events?vm=$VM" > "$EV" &
for try in $(seq 100); do grep -qs '^HTTP/1.1 200' "$EV.h" && break; test "$try" -lt 100; sleep 0.1; done
START=$(curl -sf -XPOST -H "Authorization: Bearer $KEY" -H "$J" -d '{"action":"start"}' "$API/v1/vms/$VM/actions" | jq -r .id)
for try in $(seq 100); do grep -q "^data: .*\"type\":\"JobSucceeded\".*\"job_id\":\"$START\"" "$EV" && break; test "$try" -lt 100; sleep 0.1; done
kill %1 2>/dev/null || true

# Lists page with limit and next; another account's VM is a 404.
curl -sf -H "Authorization: Bearer $KEY" "$API/v1/vms?limit=1" | jq -e '.items | length == 1'
curl -s -H "Authorization: Bearer $KEY" "$API/v1/vms/vm-of-someone-else" | jq -e '.error.code == "not_found"'

# Delete (terminate), then revoke the key: it stops working.
DEL=$(curl -sf -XDELETE -H "Authorization: Bearer $KEY" "$API/v1/vms/$VM" | jq -r .id)
curl -sf -H "Authorization: Bearer $KEY" "$API/v1/jobs/$DEL?wait=30s" | jq -e '.state == "succeeded"'
KEYID=$(curl -sf -H "Authorization: Bearer $ADMIN" "$API/v1/accounts/acme/keys" | jq -r '.items[0].id')
curl -sf -XDELETE -H "Authorization: Bearer $ADMIN" "$API/v1/accounts/acme/keys/$KEYID"
test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" "$API/v1/vms")" = 401

# The API is described by OpenAPI 3.1.
curl -sf "$API/v1/openapi.json" | jq -e '.openapi == "3.1.0"'
echo walkthrough ok

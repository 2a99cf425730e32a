# vmplane — `make run` starts the whole system on this machine, `make test`
# runs every test. Both install what is missing first (ops/install.sh).

GO      ?= go
ARGS    ?=
PKGS    ?= ./...
BIN     := bin

.PHONY: help run test test-short bench check build install clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

install: ## install the Debian packages vmplane needs (ClickHouse, QEMU, kcat, Postgres if none answers)
	@bash ops/install.sh

run: install ## start the dev stack: broker, Postgres, ClickHouse, processors, projectors, gateway :8080, sim agent
	$(GO) run ./ops/cmd/vmplane dev $(ARGS)

test: install ## run every test (race detector on) against the real broker, Postgres, ClickHouse
	@bash ops/test.sh $(PKGS)

test-short: ## unit tests only (no Postgres, ClickHouse or QEMU)
	$(GO) test -short -count=1 $(PKGS)

bench: install ## run the benchmark scenarios and record the results (QUICK=1 for a tiny size)
	@bash benchmarks/run.sh $(if $(QUICK),-quick)

check: ## gofmt, go vet, go mod tidy, import boundaries, golangci-lint (pinned in tools/go.mod), OpenAPI lint, alert rules and dashboards
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	@tmp=$$(mktemp -d); cp go.mod go.sum $$tmp/; $(GO) mod tidy; \
	 if ! cmp -s go.mod $$tmp/go.mod || ! cmp -s go.sum $$tmp/go.sum; then \
	   echo "go mod tidy changes go.mod/go.sum:"; diff -u $$tmp/go.mod go.mod || true; \
	   cp $$tmp/go.mod $$tmp/go.sum .; rm -rf $$tmp; exit 1; fi; rm -rf $$tmp
	@bash ops/check-imports.sh
	@# The linter is a module of its own (tools/go.mod), so its dependencies
	@# stay out of go.mod; go run caches the build.
	$(GO) run -modfile=tools/go.mod github.com/golangci/golangci-lint/v2/cmd/golangci-lint run ./...
	@# redocly's recommended rules, pinned in tools/openapi (npm ci), on the
	@# document `vmplane openapi` writes; a warning fails as an error does.
	@bash ops/check-openapi.sh
	@# promtool (pinned, built once into var/tools) on the alert rules and
	@# their unit tests; a Go test lints the Grafana dashboards and holds
	@# every query to the metrics vmplane registers.
	@bash ops/check-observability.sh

build: ## build the binaries into bin/
	$(GO) build -o $(BIN)/ ./ops/cmd/...

clean: ## remove build output and the dev stack's data (var/), after quitting its QEMU guests
	@# Guests outlive a killed stack; their disks are about to go.
	-@pkill -f "qemu-system.*$(CURDIR)/var/qemu/" 2>/dev/null; true
	rm -rf $(BIN) var

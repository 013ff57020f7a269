GO      ?= go
SHELL   := /bin/bash
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/cicy-agent

.PHONY: build test test-unit clis lint demo demo-mixed demo-cluster bench fmt tidy

# The pinned real CLI agents (supervisor/cliagent: Claude Code, Codex, opencode, Qwen Code, pi, Gemini CLI) the integration
# tests drive; installed once into a cache folder (CICY_CLI_DIR).
CICY_CLI_DIR ?= $(HOME)/.cache/cicy-agent/clis
export CICY_CLI_DIR

# The first build (make demo's too) downloads and compiles every module:
# minutes, not seconds; it says so rather than sit silent.
build:
	@[ -e $(BIN) ] || echo "Building $(BIN): the first build downloads and compiles the Go modules, which takes a few minutes (later builds take seconds)..."
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/cicy-agent

# The whole suite, with the race detector, the real CLI agents included
# (installed first if missing). CI runs exactly this. It prints what go test
# prints, then the ten slowest tests (scripts/testreport reads go test -json). The timeout is per
# package: cmd/cicy-agent, which drives the six real CLIs through the
# binary (built there without the race detector: the supervisor's packages
# run it in process under the detector), takes about 8 minutes on two cores
# (BENCHMARKS.md), longer when they are busy.
test: clis
	$(GO) vet ./...
	$(GO) build -o bin/testreport ./scripts/testreport
	set -o pipefail; CICY_REQUIRE_CLIS=1 $(GO) test -json -race -timeout 1800s ./... | bin/testreport

# The suite without the real CLI agents (their tests skip): no npm needed.
test-unit:
	$(GO) vet ./...
	$(GO) build -o bin/testreport ./scripts/testreport
	set -o pipefail; $(GO) test -json -race -timeout 900s ./... | bin/testreport

clis: build
	scripts/install-clis.sh $(BIN)

# gofmt, go vet and staticcheck (pinned; fetched by the go command from
# the module proxy on first use, not a dependency of the module).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The offline demo team: examples/demo.yaml with the scripted model.
demo: build
	scripts/demo.sh

# The offline mixed team: examples/mixed.yaml — a cicy coordinator and the
# real Claude Code, Codex, opencode, Qwen Code, pi and Gemini CLI (the script
# installs them if missing, as make clis does) with a cicy engineer, each in
# a git worktree, all on the scripted model through the gateway.
demo-mixed: build
	scripts/demo-mixed.sh

# The demo team split across two nodes sharing a private PostgreSQL.
demo-cluster: build
	scripts/demo-cluster.sh

# Benchmarks whose figures are written down in BENCHMARKS.md.
bench: build
	$(GO) test -run '^$$' -bench . -skip 'TmuxOutputState|Worktree|TaskCommitRecord|KillNine|Restart' -benchtime 300x ./supervisor/
	$(GO) test -run '^$$' -bench 'WorktreeCreate|TaskCommitRecord' -benchtime 50x ./supervisor/
	$(GO) test -run '^$$' -bench WorktreeTwentyWorkers -benchtime 1x -timeout 1800s ./supervisor/
	$(GO) test -run '^$$' -bench TmuxOutputState -benchtime 30x -timeout 1800s ./supervisor/
	$(GO) test -run '^$$' -bench 'KillNine$$' -benchtime 1x -timeout 1800s ./supervisor/
	$(GO) test -run '^$$' -bench KillNineWorktrees -benchtime 1x -timeout 1800s ./supervisor/
	$(GO) test -run '^$$' -bench Restart -benchtime 3x -timeout 1800s ./supervisor/
	$(GO) test -run '^$$' -bench 'Throughput|Ceiling' -benchtime 2x ./pane/
	$(GO) test -run '^$$' -bench EventToScreen -benchtime 200x ./cmd/cicy-agent/dashboard/
	scripts/bench-idle-cpu.sh
	scripts/bench-dashboard.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

tidy:
	$(GO) mod tidy

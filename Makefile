GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/cicy-agent

.PHONY: build test lint demo bench fmt tidy

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/cicy-agent

# The whole suite, with the race detector. CI runs exactly this.
test:
	$(GO) vet ./...
	$(GO) test -race -timeout 600s ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The offline demo team: examples/demo.yaml with the scripted model.
demo: build
	scripts/demo.sh

# Benchmarks whose figures are written down in BENCHMARKS.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 300x ./supervisor/
	scripts/bench-idle-cpu.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

tidy:
	$(GO) mod tidy

# dupefs — see README.md.
GO      ?= go
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/dupefs
PREFIX  ?= /usr/local

.PHONY: all build test test-race bench lint install clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/dupefs

# Every test: unit tests, the end-to-end tests in integration/ (they build
# the binary) and the FUSE tests, which mount for real (root, /dev/fuse).
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 25m ./...

# The concurrent packages once more under the race detector.
test-race:
	$(GO) test -race -count=1 -timeout 25m ./indexer/... ./store/ ./fusefs/

# Side by side with jdupes, rdfind, fdupes and rmlint; see integration/bench.
bench: build
	./integration/bench/bench.sh

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/dupefs

clean:
	rm -rf bin

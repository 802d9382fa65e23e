# dupefs — see README.md.
GO      ?= go
# A version dpkg can order: the last tag (or 0.0.0), the number of commits
# and the commit.
TAG     := $(shell git describe --tags --abbrev=0 2>/dev/null | sed 's/^v//')
COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
VERSION ?= $(if $(TAG),$(TAG),0.0.0)+git$(shell git rev-list --count HEAD 2>/dev/null || echo 0).$(COMMIT)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN     := bin/dupefs
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man/man1
BASHDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHDIR ?= $(PREFIX)/share/fish/vendor_completions.d
UNITDIR ?= $(PREFIX)/lib/systemd
DIST    := cmd/dupefs/dist
ARCH    ?= $(shell dpkg --print-architecture 2>/dev/null || $(GO) env GOARCH)
# staticcheck at a fixed version, run with go run: fetched once through the
# module proxy, and no tool line in go.mod.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test test-race bench lint install deb clean

all: build

# A static binary (modernc SQLite is pure Go): it runs on any Linux.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/dupefs

# Every test: unit tests, the end-to-end tests in integration/ (they build
# the binary) and the FUSE tests, which mount for real (root, /dev/fuse).
# Run by another user, the tests that need root skip, saying why. What tests
# leave for a person to look at (the file manager's screens) is kept in
# build/test-artifacts.
test:
	$(GO) vet ./...
	mkdir -p build/test-artifacts
	$(GO) test -count=1 -timeout 40m -artifacts -outputdir $(CURDIR)/build/test-artifacts ./...

# The concurrent packages once more under the race detector.
test-race:
	$(GO) test -race -count=1 -timeout 25m ./indexer/... ./store/ ./fusefs/

# Side by side with jdupes, rdfind, fdupes and rmlint; see integration/bench.
bench: build
	./integration/bench/bench.sh

# gofmt, vet, staticcheck, and go.mod and go.sum as go mod tidy leaves them.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

# The binary, the man page, the completions of bash, zsh and fish, and the
# systemd units (user and system), under $(DESTDIR)$(PREFIX).
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/dupefs
	install -d $(DESTDIR)$(MANDIR) $(DESTDIR)$(BASHDIR) $(DESTDIR)$(ZSHDIR) $(DESTDIR)$(FISHDIR) \
		$(DESTDIR)$(UNITDIR)/user $(DESTDIR)$(UNITDIR)/system
	$(BIN) docs man | gzip -9n >$(DESTDIR)$(MANDIR)/dupefs.1.gz
	$(BIN) docs bash >$(DESTDIR)$(BASHDIR)/dupefs
	$(BIN) docs zsh >$(DESTDIR)$(ZSHDIR)/_dupefs
	$(BIN) docs fish >$(DESTDIR)$(FISHDIR)/dupefs.fish
	for kind in user system; do \
		sed 's|@BINDIR@|$(BINDIR)|g' $(DIST)/systemd/$$kind/dupefs-mount@.service.in \
			>$(DESTDIR)$(UNITDIR)/$$kind/dupefs-mount@.service; \
	done
	chmod 0644 $(DESTDIR)$(MANDIR)/dupefs.1.gz $(DESTDIR)$(BASHDIR)/dupefs $(DESTDIR)$(ZSHDIR)/_dupefs \
		$(DESTDIR)$(FISHDIR)/dupefs.fish $(DESTDIR)$(UNITDIR)/*/dupefs-mount@.service

# A Debian package: bin/dupefs_$(VERSION)_$(ARCH).deb.
deb:
	rm -rf build/deb bin/dupefs_*.deb
	$(MAKE) install DESTDIR=$(CURDIR)/build/deb PREFIX=/usr ZSHDIR=/usr/share/zsh/vendor-completions
	install -D -m 0644 README.md build/deb/usr/share/doc/dupefs/README.md
	install -D -m 0644 $(DIST)/debian/copyright build/deb/usr/share/doc/dupefs/copyright
	install -d build/deb/DEBIAN
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@ARCH@|$(ARCH)|' \
		-e "s|@SIZE@|$$(du -sk build/deb/usr | cut -f1)|" $(DIST)/debian/control.in >build/deb/DEBIAN/control
	dpkg-deb --root-owner-group -Zxz --build build/deb bin/dupefs_$(VERSION)_$(ARCH).deb

clean:
	rm -rf bin build

# gonfsrdma — see README.md. Every target runs on a fresh Debian bookworm
# machine as root; `deps` installs what the others need.

SHELL    := /bin/bash
GO       ?= go
BIN      := bin/gonfsrdma
PKGS     := ./...
FUZZTIME ?= 5s
EXPORT   ?= /srv/gonfsrdma
# Packages whose Ceph code is built only with -tags ceph (the CephFS
# backend, the daemon's multi-head tests, the conformance suite on CephFS).
CEPH_PKGS := ./vfs/cephfs/ ./daemon/ ./conformance/

.PHONY: all deps build build-ceph run test test-ceph bench-ceph check conformance fuzz bench bench-peers lint interop test-kernel clean man install deb deb-check

all: build

# System packages: rdma-core headers for the cgo verbs binding, libnfs
# utilities for the interop test, QEMU for the kernel-client test.
deps:
	@scripts/deps.sh

# The version `gonfsrdma --version` prints: the git description of the tree.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS  := -X main.version=$(VERSION)

build:
	CGO_ENABLED=1 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gonfsrdma

# The same binary with the CephFS backend (backend=cephfs): it links
# libcephfs and librados, so it needs them installed to start.
build-ceph:
	CGO_ENABLED=1 $(GO) build -tags ceph -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gonfsrdma

# Where `make install` puts things (DESTDIR for staging): the binary, the
# man page generated from the command line, the systemd unit (systemd
# reads /usr/local/lib/systemd/system too), shell completions, and the
# example exports file and /etc/default/gonfsrdma unless they exist.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc

man: build
	./$(BIN) man | gzip -9n > bin/gonfsrdma.8.gz

install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/gonfsrdma
	install -d $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DATADIR)/bash-completion/completions \
	  $(DESTDIR)$(DATADIR)/zsh/vendor-completions $(DESTDIR)$(DATADIR)/fish/vendor_completions.d $(DESTDIR)$(UNITDIR)
	./$(BIN) man | gzip -9n > $(DESTDIR)$(MANDIR)/man8/gonfsrdma.8.gz
	./$(BIN) completion bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/gonfsrdma
	./$(BIN) completion zsh > $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_gonfsrdma
	./$(BIN) completion fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/gonfsrdma.fish
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' packaging/gonfsrdma.service.in > $(DESTDIR)$(UNITDIR)/gonfsrdma.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/gonfsrdma.service $(DESTDIR)$(MANDIR)/man8/gonfsrdma.8.gz
	install -D -m 0644 README.md $(DESTDIR)$(DATADIR)/doc/gonfsrdma/README.md
	[ -e $(DESTDIR)$(SYSCONFDIR)/gonfsrdma/exports ] || install -D -m 0644 packaging/exports $(DESTDIR)$(SYSCONFDIR)/gonfsrdma/exports
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/gonfsrdma ] || install -D -m 0644 packaging/default $(DESTDIR)$(SYSCONFDIR)/default/gonfsrdma
	@if [ -z "$(DESTDIR)" ]; then mkdir -p /srv/gonfsrdma; \
	  echo "installed; start with: systemctl daemon-reload && systemctl enable --now gonfsrdma"; fi

# The Debian package build/deb/gonfsrdma_VERSION_ARCH.deb, made by nfpm
# run as a Go tool (tools/nfpm/go.mod pins it).
deb: build
	scripts/deb.sh

# The package installed into a fresh dpkg root, its unit checked by
# systemd-analyze verify and started from its own directives
# (scripts/deb-check.sh says what this proves and what it does not).
deb-check: deb
	scripts/deb-check.sh build/deb/gonfsrdma.deb

# Serve $(EXPORT) (created if missing) read-write to loopback clients.
run: deps build
	mkdir -p $(EXPORT)
	./$(BIN) serve --default-export $(EXPORT)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags nordma ./verbs/...
	CGO_ENABLED=0 $(GO) vet ./verbs/... ./rpcrdma/... ./daemon/ ./cmd/...
	$(GO) vet -tags ceph $(CEPH_PKGS)
	@cgo=$$($(GO) list -tags ceph -f '{{if .CgoFiles}}{{.ImportPath}}{{end}}' $(PKGS) | grep -v -e '/verbs$$' -e '/vfs/cephfs$$' || true); \
	  if [ -n "$$cgo" ]; then echo "cgo outside verbs/ and vfs/cephfs/: $$cgo"; exit 1; fi
	@scripts/importcheck.sh

# Then the builds without RDMA, where TestNoRDMABuild runs: the nordma
# tag, and no cgo at all (verbs falls back to the same stub).
test:
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	conformance/kernel/selftest.sh
	$(GO) test -count=1 -tags nordma ./verbs/...
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./verbs/... ./rpcrdma/... ./daemon/
	# Memory and availability bounds, asserted without the race detector.
	$(GO) test -count=1 -run '^TestRSS' ./oncrpc/

# The CephFS backend against a throwaway one-node cluster (mon, mgr, a
# memstore OSD, MDS) in a private network namespace: the vfs conformance
# suite and two-mount tests on a live CephFS, several gonfsrdma heads
# (processes) over it, and the NFS conformance suite (strict profile) over
# TCP and the RDMA software fabric on CephFS exports, and libnfs interop
# (scripts/interop-ceph.sh). Fails, never skips, when the cluster cannot
# start.
test-ceph:
	@start=$$(date +%s); \
	  CGO_ENABLED=1 $(GO) build -tags ceph -o bin/gonfsrdma-ceph ./cmd/gonfsrdma && \
	  scripts/ceph-cluster.sh run sh -c '$(GO) test -race -count=1 -timeout 10m -tags ceph ./vfs/cephfs/ && \
	    $(GO) test -race -count=1 -timeout 10m -tags ceph -run Ceph ./daemon/ && \
	    $(GO) test -count=1 -timeout 10m -tags ceph -run "^TestSuiteCeph|^TestCephCalls" ./conformance/ && \
	    scripts/interop-ceph.sh bin/gonfsrdma-ceph'; rc=$$?; \
	  echo "test-ceph: $$(( $$(date +%s) - start )) s"; exit $$rc

# The conformance suite against an in-process daemon, over TCP and over
# RPC-over-RDMA on the software fabric, with every test's line printed.
conformance:
	$(GO) test -count=1 -v -run '^TestSuite' ./conformance | grep -E '^\s+suite_test.go:[0-9]+: |^(--- |ok|FAIL|PASS)' | sed -E 's/^\s+suite_test.go:[0-9]+: //'; exit $${PIPESTATUS[0]}

# Short native-fuzzing runs of every fuzz target, from their seeds.
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2000x $(PKGS)

# gonfsrdma vs go-nfs vs NFS-Ganesha over loopback TCP in a private
# network namespace (root; installs Ganesha and rpcbind). BENCH_SIZE=1GiB
# for the full-size run.
bench-peers: build
	scripts/bench-peers.sh

# gonfsrdma (backend=cephfs) vs NFS-Ganesha with FSAL_CEPH on one
# throwaway CephFS, same client and workload (root; installs Ganesha).
bench-ceph:
	scripts/bench-ceph.sh

# Interop with an independent client (libnfs-utils).
interop: build
	scripts/interop.sh $(BIN)
	scripts/interop-rpcbind.sh $(BIN)

# The Linux kernel client in a QEMU guest, beside the kernel's nfsd.
# gonfsrdma must build and run there, and the hardware verbs and rpcrdma
# tests count (GONFSRDMA_REQUIRE=0 to run knfsd-only or to ignore them).
GONFSRDMA_REQUIRE ?= 1
test-kernel: build
	GONFSRDMA_REQUIRE=$(GONFSRDMA_REQUIRE) conformance/kernel/run.sh

# The README's test command: everything CI runs.
check: deps lint test conformance fuzz interop test-ceph deb-check test-kernel

clean:
	rm -rf bin build

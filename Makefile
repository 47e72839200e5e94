# sctp-rdma: iWARP (RDMAP/DDP) over SCTP and MPA/TCP.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 60s
GOTESTFLAGS ?=

.PHONY: all build cli release test test-short vet race fuzz fuzz-short demo bench bench-docs soak clean e2e flood wan wan-docs wan-kernel-docs siw-perf bench-veth bench-veth-docs usrsctp

all: build

build:
	$(GO) build $(PKGS)

# The version and commit that `sctp-rdma --version` prints (main.version,
# main.commit): git describe's name for the tree ("v0.1.0", "v0.1.0-3-gabc",
# "-dirty" with uncommitted changes) and the full commit.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN     ?= bin/sctp-rdma

# make cli: the command, with its version, into $(BIN).
cli:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sctp-rdma

# make release: static linux/amd64 and linux/arm64 binaries of the command
# into dist/, named with the version, and their SHA-256 checksums
# (dist/SHA256SUMS; check with sha256sum -c).
RELEASE_ARCHS ?= amd64 arm64
release:
	rm -rf dist && mkdir -p dist
	for arch in $(RELEASE_ARCHS); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' \
	    -o dist/sctp-rdma-$(VERSION)-linux-$$arch ./cmd/sctp-rdma || exit 1; \
	done
	cd dist && sha256sum sctp-rdma-* > SHA256SUMS && cat SHA256SUMS

vet:
	$(GO) vet $(PKGS)

# make test: vet, then every test under the race detector, the data path's
# allocation bound without it (the race detector's sync.Pool drops make it
# loose there), then every fuzz target briefly (FUZZ_CI_TIME each; make fuzz
# for the long runs).
FUZZ_CI_TIME ?= 2s
test: vet
	$(GO) test -race -count=1 -timeout 12m $(GOTESTFLAGS) $(PKGS)
	$(GO) test -count=1 -run 'TestRealPathAllocs|TestTenThousandStreams' ./transport/
	$(GO) test -count=1 -run 'TestMultihoming_RunsPerDestination' ./sctp/
	./scripts/fuzz-all.sh $(FUZZ_CI_TIME)

# make test-short: the short tier (go test -short): vet, then every test
# that needs no root, VM, apt, network namespace or tshark, without the
# long ones (soaks, 10,000 streams, WAN cells); under 2 minutes on a 2-core
# host. Without -race, which doubles it (make test keeps -race). What it
# leaves out skips with "full tier only (make test): needs ...".
test-short: vet
	$(GO) test -short -count=1 -timeout 5m $(GOTESTFLAGS) $(PKGS)

# make e2e: the end-to-end RDMA suites only: pion on the host, kernel SCTP
# and kernel↔pion interop in the qemu VM (e2e.TestKernelSuiteInVM; also part
# of make test, never skipped).
e2e:
	$(GO) test -race -count=1 -timeout 10m -v -run 'Suite' ./e2e

# make usrsctp: the interop suite against usrsctp (Debian's libusrsctp) over
# UDP encapsulation, both directions, verbose (docs/usrsctp-interop.md; also
# part of make test). About 30 s.
usrsctp:
	$(GO) test -race -count=1 -timeout 5m -v ./interop/usrsctp/

# make flood: 100,000 SCTP INITs from as many source addresses against a
# real `serve` (FLOOD_LLP: sctp-native, the default, or sctp-pion) while a
# bench runs; prints the server's RSS before, at the peak and 30 s after
# (docs/security.md). About 45 s.
FLOOD_LLP ?= sctp-native
flood:
	$(GO) build -o .cache/sctp-rdma ./cmd/sctp-rdma
	./.cache/sctp-rdma serve --llp $(FLOOD_LLP) --listen 127.0.0.1:18599 > .cache/flood-serve.log 2>&1 & pid=$$!; sleep 1; \
	  $(GO) run ./internal/tools/initflood -addr 127.0.0.1:18599 -pid $$pid -n 100000 -rate 10000 -llp $(FLOOD_LLP) -bench ./.cache/sctp-rdma; rc=$$?; \
	  kill -INT $$pid; wait $$pid; exit $$rc

# make wan: every LLP over emulated wide-area paths (RTT 1/10/50/100 ms x
# loss 0/0.01/0.1/1%, 100 Mbit/s bottleneck) between two network namespaces,
# the recovery from a 1 s outage, sharing the bottleneck, head-of-line
# blocking; root. WAN_RUNS runs per path, the median reported (about 20
# minutes a run). make wan-docs writes the section of docs/benchmarks.md
# (the loopback run keeps it).
WAN_RUNS ?= 3
wan:
	$(GO) run ./cmd/sctp-rdma harness --wan --runs $(WAN_RUNS)

wan-docs:
	$(GO) run ./cmd/sctp-rdma harness --wan --runs $(WAN_RUNS) --out docs/benchmarks.md
	$(MAKE) wan-kernel-docs

# make wan-kernel-docs: kernel SCTP and MPA over emulated paths inside the
# qemu VM (the host kernel has neither SCTP nor netem), 20 Mbit/s; writes
# its own section of docs/benchmarks.md. About 20 minutes.
wan-kernel-docs:
	SCTPRDMA_WAN_KERNEL_FULL=1 SCTPRDMA_WAN_KERNEL_OUT=$(CURDIR)/docs/benchmarks.md \
		$(GO) test -count=1 -timeout 90m -run '^TestWANKernelInVM$$' -v ./internal/tools/harness/

# make fuzz: run every fuzz target for FUZZTIME each (default 60s).
fuzz:
	./scripts/fuzz-all.sh $(FUZZTIME)

fuzz-short:
	./scripts/fuzz-all.sh 5s

demo:
	$(GO) run ./cmd/sctp-rdma demo

clean:
	$(GO) clean -testcache

# make siw-perf: the perftest comparison with Linux siw in the qemu VM
# (siw <-> siw, our client against perftest's server, perftest's client
# against ours), each run SIW_PERF_ITERS x 64 KiB (over a second at the
# VM's pace), SIW_PERF_RUNS rounds, medians reported (docs/siw-interop.md).
# About 5 minutes. make test runs one short round as an interop check.
SIW_PERF_ITERS ?= 1000
SIW_PERF_RUNS ?= 5
siw-perf:
	SIW_PERFTEST_ITERS=$(SIW_PERF_ITERS) SIW_PERFTEST_RUNS=$(SIW_PERF_RUNS) SIW_RUN='^TestSiwInterop$$/perftest' \
		$(GO) test -count=1 -timeout 45m -v -run '^TestSiwInterop$$' ./interop/siw/ | grep -v '^=== '

# make soak: the load test of internal/tools/soak — 64 streams, every operation,
# random sizes and deliberate stream terminations — for SOAK (default 10m).
# make test runs the same test for 20 s.
SOAK ?= 10m
soak:
	$(GO) test -count=1 -timeout 0 -v -run '^TestSoak$$' ./internal/tools/soak -soak.duration=$(SOAK)

# make bench: raw LLP versus RDMA figures (median of 3 runs), with the machine
# description, and the PNG plots (gonum/plot: throughput and round trip
# against message size per LLP, streams scaling), into .cache/bench/ (the
# tracked docs stay as they are). make bench-docs writes them into
# docs/benchmarks.md and docs/img, to commit, as medians of 9 runs (a
# configuration moves by 10-15% between runs on a shared 2-core host, and
# loopback TCP, the reference of the mpa rows, between 14 and 38 Gbit/s from
# one measurement to the next: with 5 runs an mpa ratio moved by 0.3 from one
# make bench-docs to the next, 2026-11-28). Each
# throughput measurement moves 256 MiB (about 100 ms at loopback speeds):
# loopback TCP alone moves either about 15 or about 25 Gbit/s for tens of
# milliseconds at a time here, and 64 MiB windows swung a row's ratio by
# 0.4 between runs where 256 MiB ones swung it by 0.2. Set GOGC to compare.
bench:
	$(GO) run ./cmd/sctp-rdma harness --bytes 256M --out .cache/bench/benchmarks.md

bench-docs:
	$(GO) run ./cmd/sctp-rdma harness --runs 9 --bytes 256M --out docs/benchmarks.md

# make bench-veth: raw TCP and RDMA Write, Read and Send of 64 KiB at depth
# 16 over sctp-native and mpa between two network namespaces joined by a
# veth pair, at MTU 1500 and 9000 with GRO on and off, each side a process
# of its own with its CPU seconds per GB (root; ethtool from
# scripts/ethtool-setup.sh). Medians of VETH_RUNS rounds, VETH_DURATION
# each cell; VETH_FLAGS adds flags (--llp sctp-native,mpa,sctp-pion).
# make bench-veth-docs writes its section of docs/benchmarks.md (the other
# runs keep it).
VETH_RUNS ?= 3
VETH_DURATION ?= 3s
bench-veth:
	./scripts/ethtool-setup.sh
	$(GO) run ./cmd/sctp-rdma harness --veth --runs $(VETH_RUNS) --veth-duration $(VETH_DURATION) $(VETH_FLAGS)

bench-veth-docs:
	./scripts/ethtool-setup.sh
	$(GO) run ./cmd/sctp-rdma harness --veth --runs $(VETH_RUNS) --veth-duration $(VETH_DURATION) $(VETH_FLAGS) --out docs/benchmarks.md

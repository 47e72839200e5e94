# sctp-rdma: iWARP (RDMAP/DDP) over SCTP and MPA/TCP.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 60s
GOTESTFLAGS ?=

.PHONY: all build test vet race fuzz fuzz-short demo bench soak clean

all: build

build:
	$(GO) build $(PKGS)

vet:
	$(GO) vet $(PKGS)

# make test: vet, then every test under the race detector.
test: vet
	$(GO) test -race -count=1 -timeout 12m $(GOTESTFLAGS) $(PKGS)

# make fuzz: run every fuzz target for FUZZTIME each (default 60s).
fuzz:
	./scripts/fuzz-all.sh $(FUZZTIME)

fuzz-short:
	./scripts/fuzz-all.sh 5s

demo:
	$(GO) run ./cmd/sctp-rdma demo

clean:
	$(GO) clean -testcache

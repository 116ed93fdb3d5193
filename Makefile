# locklab: the two set-up commands are `make demo` and `make test` (README.md).
GO      ?= go
BIN     := bin/locklab
OUT     ?= out

.PHONY: all apt-deps deps build demo test vet fuzz bench tla clean

all: build

# Redis, Sentinel and libfaketime from apt; the tests also need the same Redis built
# without jemalloc for libfaketime (cached after the first build).
apt-deps:
	@./scripts/install-deps.sh

deps: apt-deps
	@./scripts/build-redis-libc.sh >/dev/null

build:
	$(GO) build -o $(BIN) ./cmd/locklab

# Kleppmann's pause on the textbook lock (with an INCR fence), with fencing off and full.
# Exit status 1 means "violation found", which is what the demo shows; 2 or more is an error.
demo: apt-deps build
	@$(BIN) demo pause-past-ttl --out $(OUT)/demo; \
	  s=$$?; if [ $$s -gt 1 ]; then exit $$s; fi

test: deps
	$(GO) test -race -timeout 20m ./...

vet:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet ./...

# Longer fuzzing of the readers than `make test` does (the seed corpus runs in every test).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReadHistory -fuzztime 60s ./histories
	$(GO) test -run '^$$' -fuzz FuzzParsePlan -fuzztime 60s ./campaign

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./histories ./linearizability ./workload

# TLC on every spec config; skips with a message when TLA2TOOLS_JAR is unset (tla/README.md).
tla:
	@./tla/check.sh

clean:
	rm -rf bin $(OUT)

# locklab: the two set-up commands are `make demo` and `make test` (README.md).
GO      ?= go
BIN     := bin/locklab
OUT     ?= out

.PHONY: all apt-deps browser-deps deps docker-engine docker-image node-deps detection build demo docs test vet fuzz bench bench-jobs tla matrix clean versions test-versions soak

all: build

# Redis, Sentinel and libfaketime from apt; the tests also need the same Redis built
# without jemalloc for libfaketime (cached after the first build), and Chromium for the
# browser tests (browser-deps: Debian's chromium, from apt).
apt-deps:
	@./scripts/install-deps.sh

browser-deps:
	@./scripts/install-deps.sh --browser

deps: apt-deps node-deps
	@./scripts/build-redis-libc.sh >/dev/null

# The docker backend (--backend docker): a Docker engine (docker-engine starts Debian's
# docker.io in the background when none answers; scripts/docker-engine.sh stop ends it)
# and the locklab/redis image, built without any registry by debootstrap and docker
# import, and reused once built. Both need root. Without them the docker backend's tests
# skip, except where LOCKLAB_REQUIRE_DOCKER or CI is set (.ci/run sets it).
docker-engine:
	@./scripts/docker-engine.sh start

docker-image: apt-deps docker-engine
	@./scripts/build-docker-image.sh

# The Node.js example client of the subprocess protocol (ioredis, pinned in its lock file).
node-deps: clients/node/node_modules/.package-lock.json
clients/node/node_modules/.package-lock.json: clients/node/package.json clients/node/package-lock.json
	npm ci --prefix clients/node --no-audit --no-fund

# locklab, locklab-lockserve (the in-process locks as subprocess clients: the *-process
# implementations, for stop-the-world pauses), and locklab-etcd: the etcd server of the
# go.etcd.io/etcd/server/v3 release pinned in go.mod (a tool dependency), for the etcd
# topology.
build:
	$(GO) build -o $(BIN) ./cmd/locklab
	$(GO) build -o bin/locklab-lockserve ./cmd/locklab-lockserve
	$(GO) build -o bin/locklab-etcd go.etcd.io/etcd/server/v3

# Releases of the lock libraries other than the pinned ones, built or installed into
# $LOCKLAB_CACHE (default ~/.cache/locklab) ahead of the runs that name them
# (NAME@VERSION), e.g. make versions VERSIONS="redsync@v4.13.0 redis-semaphore-mutex@5.6.0".
VERSIONS ?=
# The releases make test runs: cmd/locklab's TestReleasesRun, the affected and fixed
# release of every bug of docs/track-record (TestTrackRecord), TestBisectFindsTheFix's,
# releases' TestOldRedsyncReleases (one per adapter variant's range).
TEST_VERSIONS = redsync@v4.13.0 redis-semaphore-mutex@5.6.0 redsync@v4.12.0 redsync@v4.12.1 node-redlock@3.1.1 node-redlock@3.1.2 node-redlock@4.0.0 node-redlock@4.2.0 rueidislock@v1.0.69 rueidislock@v1.0.70 redis-semaphore-mutex@5.3.0 redis-semaphore-mutex@5.3.1 redsync@v4.3.0 redsync@v4.4.1 redsync@v4.7.1
versions: build
	@test -n "$(VERSIONS)" || { echo 'make versions VERSIONS="NAME@VERSION ..."' >&2; exit 2; }
	$(BIN) list $(addprefix --prepare ,$(VERSIONS))
test-versions: build
	$(BIN) list $(addprefix --prepare ,$(TEST_VERSIONS))

# Kleppmann's pause on the textbook lock (with an INCR fence), with fencing off and full.
# Exit status 1 means "violation found", which is what the demo shows; 2 or more is an error.
demo: apt-deps build
	@$(BIN) demo pause-past-ttl --out $(OUT)/demo; \
	  s=$$?; if [ $$s -gt 1 ]; then exit $$s; fi

# The tutorial (docs/tutorial.md): every experiment of docs/tutorial/tutorial.md.tmpl runs on
# real servers TUTORIAL_REPEAT times per fencing mode; its pictures (docs/tutorial/*.svg),
# verdict counts and explanations come from those runs. About 10 minutes on 2 cores.
TUTORIAL_REPEAT ?= 3
docs: deps build
	$(BIN) tutorial --repeat $(TUTORIAL_REPEAT) --out $(OUT)/tutorial

# The browser tests (internal/browsertest: each page in headless Chromium) keep a
# screenshot of every page they load, named <Test>-<page>.png, under
# $(OUT)/test-artifacts/_artifacts/<n>/ (go test -artifacts; the <n> is a directory per
# test); `find $(OUT)/test-artifacts -name '*.png'` lists them, and each test logs its
# path (shown with -v or on failure). The directory is emptied first. -artifacts also
# turns off go test's cache (it is not a cacheable flag), so every test runs each time.
# -timeout bounds one package's test binary against a hang, not its speed: runner's took
# 1,313 s on 2 cores with two CPU-bound processes beside it (810 s on CI's idle machine),
# so 40 minutes leave it room.
TEST_ARTIFACTS := $(OUT)/test-artifacts
test: deps browser-deps build
	rm -rf $(TEST_ARTIFACTS) && mkdir -p $(TEST_ARTIFACTS)
	$(GO) test -race -timeout 40m -artifacts -outputdir $(abspath $(TEST_ARTIFACTS)) ./...

vet:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "not gofmt-ed: $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...

# Longer fuzzing of the readers than `make test` does (the seed corpus runs in every test).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReadHistory -fuzztime 60s ./histories
	$(GO) test -run '^$$' -fuzz FuzzOpDecoder -fuzztime 60s ./histories
	$(GO) test -run '^$$' -fuzz FuzzParsePlan -fuzztime 60s ./plan

# The performance goals (BENCHMARKS.md): each measured by a Go benchmark as a ratio in
# one run; internal/benchtable runs them one after the other (a few minutes on 2 cores;
# the docker backend's row needs `make docker-image`, else it says not measured), prints
# the table and writes it between the bench markers of BENCHMARKS.md, with the raw output
# in $(OUT)/bench/bench.txt. Every other benchmark: go test -run '^$$' -bench . ./...
bench: deps build
	$(GO) run ./internal/benchtable -go $(GO) -markdown BENCHMARKS.md -out $(OUT)/bench

# A short property-based fault campaign for CI (docs/nightly.md): for each bug class a
# random search (no scenario hints) that stops at its first detection, confirms and
# shrinks it; then a fault-mixed search on fenced with fencing full, where the models say
# no violation may show. Fails when a class is not found or a safe configuration shows a
# violation. Summaries (summary.md, junit.xml) in $(OUT)/campaign.
.PHONY: campaign nightly
CAMPAIGN_SEED        ?= 1
CAMPAIGN_PARALLEL    ?= 2
CAMPAIGN_SHRINK_TIME ?= 10s
CAMPAIGN_CLASSES     ?= check-then-set unsafe-release no-expiry ttl-too-short pause-past-ttl slow-write \
                        slow-grant clock-jump server-pause restart-amnesia failover-loss unfenced-read
campaign: deps build
	@rm -rf $(OUT)/campaign/class-* $(OUT)/campaign/fenced-full; failed=""; \
	for c in $(CAMPAIGN_CLASSES); do \
	  echo "== class $$c"; \
	  $(BIN) campaign --class $$c --seed $(CAMPAIGN_SEED) --max-runs 60 --duration 3m --parallel $(CAMPAIGN_PARALLEL) \
	    --shrink-time $(CAMPAIGN_SHRINK_TIME) --out $(OUT)/campaign/class-$$c || failed="$$failed $$c"; \
	done; \
	echo "== fenced, fencing full, every fault kind"; \
	$(BIN) campaign --impl fenced --fencing full --seed $(CAMPAIGN_SEED) --duration 1m --parallel $(CAMPAIGN_PARALLEL) \
	  --safe-only --shrink-time 1m --out $(OUT)/campaign/fenced-full || failed="$$failed fenced-full"; \
	$(BIN) campaign merge --out $(OUT)/campaign $(OUT)/campaign/class-* $(OUT)/campaign/fenced-full >/dev/null || failed="$$failed (merged summary fails)"; \
	if [ -n "$$failed" ]; then echo "campaign FAILED:$$failed (see $(OUT)/campaign/*/summary.md)"; exit 1; fi; \
	echo "campaign passed: every class found, no safe-configuration violation ($(OUT)/campaign/summary.md)"

# A long campaign over every implementation and fault kind (NIGHTLY_FLAGS narrows it, e.g.
# --impl fenced; --shard i/n splits it across runners). The seed is new each night unless
# NIGHTLY_SEED is set; it is printed, and the same seed draws the same plans.
NIGHTLY_DURATION ?= 1h
NIGHTLY_PARALLEL ?= 2
NIGHTLY_SEED     ?=
NIGHTLY_FLAGS    ?=
nightly: deps build
	$(BIN) campaign --duration $(NIGHTLY_DURATION) --parallel $(NIGHTLY_PARALLEL) \
	  $(if $(NIGHTLY_SEED),--seed $(NIGHTLY_SEED)) $(NIGHTLY_FLAGS) --out $(OUT)/campaign/nightly

# A long run checked as it goes (locklab soak): the steady soak plan (a correct lock under
# recurring faults it must survive) for $(SOAK), its history in segments and each violation
# written when it is found, in $(OUT)/soak. SOAK_FLAGS changes the plan, e.g. --impl redsync
# or --soak planted. Exit 1 on a violation: the nightly's verdict.
SOAK       ?= 1h
SOAK_FLAGS ?=
soak: deps build
	$(BIN) soak --duration $(SOAK) $(SOAK_FLAGS) --out $(OUT)/soak

# TLC on every spec config; skips with a message when TLA2TOOLS_JAR is unset (tla/README.md).
tla:
	@./tla/check.sh

# The verdict matrix: every implementation × catalog scenario × fencing off/full, R runs per
# cell (make matrix R=10 for a firmer count; MATRIX_FLAGS="--parallel 4" to go faster), into
# $(OUT)/matrix; the table in docs/matrix.md between its matrix markers is replaced. Exit
# status 2 means a run failed to run (its cell says err) or the matrix was interrupted.
R            ?= 1
MATRIX_FLAGS ?=
matrix: deps build
	$(BIN) matrix --repeat $(R) --out $(OUT)/matrix --readme docs/matrix.md $(MATRIX_FLAGS)

# Time to detection of every bug class by random search (10 seeds each, the first one's
# counterexample shrunk) and the false alarms of fault-free campaigns, into BENCHMARKS.md,
# whose "Produced by" line says how long that run took; SEEDS=3 for a quick look.
SEEDS ?= 10
detection: deps build
	$(BIN) detection --seeds $(SEEDS) --parallel 2 --shrink --shrink-time 30s --out $(OUT)/detection --markdown BENCHMARKS.md

# The double-processing experiment: a job queue's re-deliveries while the lock is held and
# after its release, without and with the write-up's lock and with the two fixes, 30 s per
# phase, about five minutes (BENCH_JOBS_FLAGS="--duration 72h" for a soak), its table into
# the README.
BENCH_JOBS_FLAGS ?=
bench-jobs: deps build
	$(BIN) bench jobs --out $(OUT)/bench-jobs --markdown README.md $(BENCH_JOBS_FLAGS)

clean:
	rm -rf bin $(OUT)

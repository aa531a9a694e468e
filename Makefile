# popup service. `make up` brings up the whole local stack; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
# GO_TAGS: the build tags of every build, vet and test (scripts/build.env says why).
include scripts/build.env
TAGS  ?= $(GO_TAGS)

.PHONY: all build up down status test test-quick lint lint-full vet fmt bench bench-audiences bench-upload bench-worker soak growth-soak fuzz timewait loadtest migrate clean chaos

all: build

# No -trimpath here (the image's build has it, deploy/Dockerfile): a local build then shares the
# compiled packages that go vet, staticcheck and the tests' own builds leave in the Go cache, where
# -trimpath would compile every package a second time (docs/PERFORMANCE.md, "make test").
build: ## bin/popup-api, bin/popup-worker and bin/popup-sysctl
	$(GO) build -tags $(TAGS) -o bin/popup-api ./cmd/popup-api
	$(GO) build -tags $(TAGS) -o bin/popup-worker ./cmd/popup-worker
	$(GO) build -tags $(TAGS) -o bin/popup-sysctl ./cmd/popup-sysctl

up: ## install what is missing, start MariaDB, Redis, migrate, seed, start api + worker
	scripts/stack.sh up

down: ## stop everything `make up` started (by PID)
	scripts/stack.sh down

status:
	scripts/stack.sh status

test: ## every test: unit, integration (own MariaDB + Redis), sysctl profiles, the chaos subset, the locust and API fuzz smoke, every Go fuzz target for 10,000 executions (scripts/test.sh lists the stages)
	scripts/test.sh

test-quick: ## the edit loop (well under a minute): pure packages; storage tests skip unless POPUP_TEST_* are set
	$(GO) test -tags $(TAGS) ./...

lint: ## go vet's and staticcheck's bug checks (tools/popup-lint) and gofmt on every package; make test leaves out deploy/ and tools/ (scripts/test.sh says why)
	$(GO) build -o bin/popup-lint ./tools/popup-lint
	$(GO) vet -tags $(TAGS) -vettool=bin/popup-lint ./...
	$(GO) vet -tags chaos,$(TAGS) -vettool=bin/popup-lint ./internal/chaos/
	$(GO) vet -tags clients,$(TAGS) -vettool=bin/popup-lint ./clients/web/
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

lint-full: ## the standalone staticcheck with every default check, U1000 (unused code) included; slower
	$(GO) tool staticcheck -tags $(TAGS) ./...
	$(GO) tool staticcheck -tags chaos,$(TAGS) ./internal/chaos/

vet:
	$(GO) vet -tags $(TAGS) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

migrate: build ## apply migrations to POPUP_MYSQL_DSN
	bin/popup-worker migrate

clean:
	rm -rf bin .testdata

bench: ## A/B throughput and latency: bare net/http vs GET /api/v1/popup (docs/PERFORMANCE.md)
	scripts/bench.sh

fuzz: ## every Go fuzz target for 60 s each (make test fuzzes each for 10,000 executions and replays their seeds and saved crashers), then the API fuzzer for 300 s on its own stack
	scripts/fuzz.sh 60
	scripts/api-fuzz.sh --stack $${API_FUZZ_SECONDS:-300}

bench-audiences: ## an audience's 10M replace and 10k delta through one popup-api, timed until a second serves them (docs/PERFORMANCE.md, Audiences)
	scripts/bench-audiences.sh

bench-upload: ## a 20M audience replace through a popup-api serving GETs: its peak RSS and the GETs' p99 against idle (docs/PERFORMANCE.md, Audience uploads and memory)
	scripts/bench-upload.sh

bench-worker: ## batched vs one-row-at-a-time draining (docs/PERFORMANCE.md, Worker)
	RACE=0 GOTEST_FLAGS='-run ^$$ -bench ^BenchmarkDrain$$ -benchtime 3s' scripts/test.sh

timewait: ## the TIME_WAIT experiment in its own network namespaces (root; about 2 min; docs/PERFORMANCE.md)
	bash sysctl/experiment.sh

soak: ## 10-minute fixed-rate load: popup-api RSS and goroutines must stay flat
	scripts/soak.sh

growth-soak: ## the action log grown to 1, 10 and 50 million rows: the drain's rate and a day's drop at each size, plotted (docs/PERFORMANCE.md; about 17 GB of disk)
	scripts/growth-soak.sh

chaos: ## fault scenarios against the real stack (Redis/MySQL down, kill storms, SIGTERM; ~8 min; docs/RELIABILITY.md)
	scripts/chaos.sh full

loadtest: ## headless distributed locust run (1 master + N workers) with HTML/CSV reports in loadtest/reports/
	scripts/loadtest.sh

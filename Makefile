# kubelet-walkthrough — `make` lists the targets.
#
# The kubernetes version lives in go.mod only (the require line of k8s.io/kubernetes);
# everything here reads it from there.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
K8S_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
BIN         := .bin
# Release builds stamp the version with -ldflags; `go run` leaves v0.0.0-master+$$Format:%H$$.
GO_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION)
CHAPTERS    := $(notdir $(wildcard chapters/[0-9][0-9]-*))
# Packages tested with the race detector: our own concurrent code. Those whose code or tests
# start the real kubelet (realkubelet, minicluster, and what imports them) are left out: the
# kubelet's own data races are not ours to fix.
REAL        := chapters/04-runkubelet/realkubelet chapters/07-minicluster/minicluster
RACE_PKGS    = $(shell $(GO) list -f '{{.ImportPath}} {{join .Deps " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | grep -v -e '$(word 1,$(REAL))' -e '$(word 2,$(REAL))' | cut -d' ' -f1)
TEST_FLAGS  ?=
K8S         ?=
BENCH       ?= .

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "kubelet-walkthrough on k8s.io/kubernetes $(K8S_VERSION)\n\nUsage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z_0-9%-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)
	@printf "\nChapters: %s\n" "$(CHAPTERS)"

##@ Run

.PHONY: run
run: ## The main job: the real kubelet on examples/static-pods, serving /pods until Ctrl-C.
	@LDFLAGS='$(GO_LDFLAGS)' .ci/build-progress ./chapters/04-runkubelet $(BIN)/04-runkubelet
	@$(BIN)/04-runkubelet $(ARGS)

run-%: ## Run one chapter, e.g. `make run-01-entrypoint ARGS=--help`.
	@test -d chapters/$* || { echo "no chapter $* (have: $(CHAPTERS))"; exit 1; }
	@LDFLAGS='$(GO_LDFLAGS)' .ci/build-progress ./chapters/$* $(BIN)/$*
	@$(BIN)/$* $(ARGS)

##@ Workshop

.PHONY: check
check: ## Check a workshop exercise against your current cluster: make check EX=1.
	@test -n "$(EX)" || { echo "make check EX=<exercise number>, 1 to 9"; exit 1; }
	@$(GO) build -o $(BIN)/check ./examples/workshop/check
	@$(BIN)/check $(EX) $(ARGS)

##@ Test

.PHONY: test
test: verify verify-notes test-unit test-race test-readmes ## Everything CI checks (.ci/run calls this).

# A cold build of a kubelet chapter takes minutes on 2 cores, and some tests build chapters.
TIMEOUT     ?= 45m
# CI runs every README several times in a row: a race at shutdown shows as a flaky sample.
README_RUNS ?= $(if $(filter true,$(CI)),3,1)

.PHONY: verify
verify: verify-deps ## Static gates: gofmt, go mod tidy, go vet, pinned staging modules, the layout's import rules.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) test -count=1 -run '^(TestImportRules|TestImportProblems)$$' ./chapters/

.PHONY: vet
vet: ## go vet every package.
	$(GO) vet ./...

.PHONY: test-unit
test-unit: ## go test every package in random order (the README runs are test-readmes).
	$(GO) test -count=1 -shuffle=on -timeout $(TIMEOUT) -skip '^TestChapterREADMEs$$' $(TEST_FLAGS) ./...

.PHONY: test-race
test-race: ## go test -race on our concurrent code (not the packages that start the real kubelet).
	$(GO) test -count=1 -race -shuffle=on -timeout $(TIMEOUT) -skip '^TestChapterREADMEs$$' $(TEST_FLAGS) $(RACE_PKGS)

.PHONY: test-readmes
test-readmes: ## Run every chapter README's commands and compare their output, as this host and as a cgroup v2 host.
	$(GO) test -count=$(README_RUNS) -timeout $(TIMEOUT) -run '^TestChapterREADMEs$$' $(TEST_FLAGS) ./chapters/
	@if [ "$$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then \
	  echo "This host is cgroup v2: the samples for cgroup v1 hosts are checked by CI."; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo ".ci/cgroup-v2 $(GO) test … ./chapters/   # the same READMEs as a cgroup v2 host"; \
	  .ci/cgroup-v2 $(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestChapterREADMEs$$' $(TEST_FLAGS) ./chapters/; \
	elif [ "$${CI:-}" = true ]; then \
	  echo "CI=true: the READMEs must also be run as a cgroup v2 host, which on this cgroup v1 host needs root"; exit 1; \
	else \
	  echo "Skipped: the READMEs as a cgroup v2 host (this host is cgroup v1; simulating v2 needs root)."; \
	fi

test-%: ## Test one chapter and its packages, e.g. `make test-04-runkubelet`.
	$(GO) test -count=1 $(TEST_FLAGS) ./chapters/$*/...

.PHONY: verify-deps
verify-deps: ## Check that go.mod pins every kubernetes staging module at the matching version.
	$(GO) test -count=1 -run '^TestStagingReplaces$$' ./chapters/

.PHONY: verify-notes
verify-notes: ## Check every source citation against the pinned module; K8S=v1.38.0 lists what an upgrade breaks.
	K8S_VERSION=$(K8S) $(GO) test -count=1 -v -run '^TestCitations$$' ./notes/
	$(GO) test -count=1 -run '^(TestCheckerFindsBrokenCitations|TestBrokenCopyFails)$$' ./notes/

.PHONY: update-golden
update-golden: ## Rewrite the sample outputs in the chapter READMEs from real runs.
	$(GO) test -count=1 -run '^TestChapterREADMEs$$' ./chapters/ -update

.PHONY: bench
bench: ## Run the benchmarks (side-by-side comparisons, see the chapter notes).
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./...

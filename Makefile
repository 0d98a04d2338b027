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
test: verify-deps verify-notes vet test-unit test-race ## Everything CI checks (.ci/run calls this).

.PHONY: vet
vet: ## go vet every package.
	$(GO) vet ./...

.PHONY: test-unit
test-unit: ## go test every package, including the runs of every chapter's README commands.
	$(GO) test -count=1 $(TEST_FLAGS) ./...

.PHONY: test-race
test-race: ## go test -race on our concurrent code (not the packages that start the real kubelet).
	$(GO) test -count=1 -race -skip '^TestChapterREADMEs$$' $(TEST_FLAGS) $(RACE_PKGS)

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

# kubelet-walkthrough — `make` lists the targets. The kubernetes version lives in go.mod only (the
# require line of k8s.io/kubernetes); everything here reads it from there, with sed: reading this
# file needs no Go (on a Mac without it, the chapters run in Docker).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
K8S_VERSION := $(shell sed -n 's|^[[:space:]]*k8s\.io/kubernetes[[:space:]]\{1,\}\(v[^[:space:]]*\).*|\1|p' go.mod)
BIN         := .bin
UNAME       := $(shell uname -s)
# Release builds stamp the version with -ldflags; `go run` leaves v0.0.0-master+$$Format:%H$$.
GO_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION)
CHAPTERS    := $(notdir $(wildcard chapters/[0-9][0-9]-*))
# The race detector's packages: ours with concurrent code, less the real kubelet's, the lab's and
# the debugger chapter's (.ci/race-packages says why).
RACE_PKGS    = $(shell .ci/race-packages chapters/04-runkubelet/realkubelet chapters/08-minicluster/minicluster chapters/machinery/lab/labtest examples/workshop/rehearsal chapters/13-debugger)
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

# Where a chapter runs: here on Linux, and elsewhere those of CROSS_PLATFORM; the others, the kubelet's
# node code made for Linux, in a Linux container through your Docker (.ci/in-docker). RUN_IN=docker
# runs any chapter in the container, on Linux too; RUN_IN=native here. make clean-docker removes its caches.
RUN_IN    ?= $(if $(filter Linux,$(UNAME)),native)
in-docker  = $(filter docker,$(or $(RUN_IN),$(if $(filter chapters/$(1),$(CROSS_PLATFORM)),native,docker)))
.SECONDEXPANSION:

.PHONY: run
run: run-04-runkubelet ## The main job: the real kubelet on examples/static-pods, serving /pods until Ctrl-C.

run-%: ## Run one chapter, e.g. `make run-01-entrypoint ARGS=--help`.
	@test -d chapters/$* || { echo "no chapter $* (have: $(CHAPTERS))"; exit 1; }
	@LDFLAGS='$(GO_LDFLAGS)' $(if $(call in-docker,$*),.ci/in-docker run $* $(ARGS),.ci/go-progress $(BIN)/$* ./chapters/$*)
	@$(if $(call in-docker,$*),:,$(BIN)/$* $(ARGS))

.PHONY: clean-docker
clean-docker: ## Remove what running in Docker keeps: the volumes of Go's caches, the images it built.
	@.ci/in-docker clean

##@ Workshop

.PHONY: check
check: ## Check a workshop exercise against your current cluster: make check EX=1.
	@test -n "$(EX)" || { echo "make check EX=<exercise number>, 1 to 20"; exit 1; }
	@$(GO) build -o $(BIN)/check ./examples/workshop/check
	@$(BIN)/check $(EX) $(ARGS)

##@ Debug (chapter 13: Delve, pinned in chapters/machinery/support/delve)

# Editors attach to DEBUG_ADDR. Delve refuses other users' connections to its port on Linux only; elsewhere
# it listens on a socket in a directory only you can open; in Docker, Delve's session is your terminal.
# Our packages -N -l (DEBUG_BUILD_FLAGS=: all).
DEBUG_ADDR        ?= $(if $(filter Linux,$(UNAME)),127.0.0.1:2345,unix:$(CURDIR)/$(BIN)/debug/dlv.sock)
DEBUG_BUILD_FLAGS ?= -gcflags=all= '-gcflags=github.com/kubelet-walkthrough/kubelet-walkthrough/...=-N -l'

.PHONY: dlv
dlv: ## Build .bin/dlv: Delve, from its pinned module chapters/machinery/support/delve.
	@cd chapters/machinery/support/delve && $(GO) build -o $(CURDIR)/$(BIN)/dlv github.com/go-delve/delve/cmd/dlv

.PHONY: debug-chain
debug-chain: $$(if $$(call in-docker,13-debugger),,dlv) ## Stop the real kubelet at every step of its startup chain in Delve (chapter 13).
	@$(if $(call in-docker,13-debugger),.ci/in-docker run 13-debugger,$(GO) run ./chapters/13-debugger --dlv $(BIN)/dlv) $(ARGS)

debug-%: $$(if $$(call in-docker,$$*),,dlv) ## Serve one chapter in a headless Delve on DEBUG_ADDR for an editor to attach: make debug-04-runkubelet ARGS=--once.
	@test -d chapters/$* || { echo "no chapter $* (have: $(CHAPTERS))"; exit 1; }
	@DEBUG_ADDR='$(DEBUG_ADDR)' DEBUG_BUILD_FLAGS="$(DEBUG_BUILD_FLAGS)" BIN=$(BIN) .ci/$(if $(call in-docker,$*),in-docker debug,debug-serve) $* $(ARGS)

##@ Test

# make test's stages: in order, a failure stops the rest; the workshop's rehearsal, which mostly
# waits on its cluster, and after it the lab's own tests run beside the other test stages (make
# -j2), which yield it the CPU (nice 10; the labs they start weigh their containers' cgroups as
# their own nice, chapters/machinery/lab/dockerd/weight.go). The lab's tests go after the
# rehearsal rather than beside it: the two tracks then take about as long. .ci/timed notes how
# long each took, and checks that the tests left this machine as they found it.
TIMED := .ci/timed $(BIN)/make-test

test: ## Everything CI checks (.ci/run calls this), stage by stage, with a time summary at the end.
	@$(TIMED) begin
	@status=0; $(MAKE) --no-print-directory test-stages || status=$$?; $(TIMED) summary; exit $$status

.PHONY: test-stages test-beside-rehearsal test-rehearsal-then-lab
test-stages:
	@$(TIMED) run prerequisites $(MAKE) --no-print-directory prerequisites
	@$(TIMED) save
	@$(TIMED) run test-node-components $(MAKE) --no-print-directory test-node-components
	@$(TIMED) run verify $(MAKE) --no-print-directory verify
	@$(TIMED) run verify-notes $(MAKE) --no-print-directory verify-notes
	@$(TIMED) check
	@$(MAKE) --no-print-directory -j2 --output-sync=recurse test-rehearsal-then-lab test-beside-rehearsal
	@$(TIMED) check

test-rehearsal-then-lab:
	@$(TIMED) run test-rehearsal $(MAKE) --no-print-directory test-rehearsal
	@$(TIMED) run test-lab nice -n 10 $(MAKE) --no-print-directory test-lab

test-beside-rehearsal:
	@$(TIMED) run test-unit nice -n 10 $(MAKE) --no-print-directory test-unit
	@$(TIMED) run test-race nice -n 10 $(MAKE) --no-print-directory test-race
	@$(TIMED) run test-readmes nice -n 10 $(MAKE) --no-print-directory test-readmes

prerequisites: ## Check this machine has what make test needs, before building anything (.ci/prerequisites).
	@.ci/prerequisites

# A cold build of a kubelet chapter takes minutes on 2 cores, and some tests build chapters.
TIMEOUT     ?= 45m
# make verify runs go vet ./... (every analyzer, test files too); go test's own vet, a subset of
# them, would vet every package again in each stage.
VET         := -vet=off
# README_RUNS=N runs this host's README leg N times (hunting a flake); .ci/readmes says the legs.
README_RUNS ?= 1

verify: verify-platforms ## Static gates: gofmt, go mod tidy, go vet, pinned staging modules, the layout's import rules, the macOS and Windows builds.
	@.ci/gofmt-check
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^(TestStagingReplaces|TestImportRules|TestImportProblems|TestPlatforms|TestPlatformProblems|TestLayout|TestMarkdownLinks)$$' ./chapters/machinery/repocheck/

# What runs on macOS and Windows too (the one list; TestPlatforms holds README.md's table to it, and
# .ci/README.md says why the others need Linux).
CROSS_PLATFORM := chapters/01-entrypoint chapters/02-config chapters/06-static-pods chapters/11-client \
  chapters/12-node examples/kubelet-pods examples/workshop/check
CROSS_TARGETS  := darwin/arm64 windows/amd64

verify-platforms: ## Type-check for macOS (darwin/arm64) and Windows (windows/amd64), from source, every chapter that runs there (CROSS_PLATFORM).
	$(GO) run ./chapters/machinery/repocheck/typecheck $(CROSS_TARGETS:%=--platform %) $(CROSS_PLATFORM:%=./%)

# The lab's packages each start minikube: a stage of their own (test-lab), after test-unit (beside it: no faster, .ci/README.md).
LAB_PKGS    := chapters/machinery/lab chapters/machinery/e2e/clientnode
UNIT_PKGS    = $(filter-out $(LAB_PKGS:%=$(shell $(GO) list -m)/%),$(shell $(GO) list ./...))

test-unit: ## go test every package in random order but the lab's (the README runs and the workshop's rehearsal have their targets).
	.ci/clean-tmp $(GO) test -count=1 $(VET) -shuffle=on -timeout $(TIMEOUT) -skip '^(TestChapterREADMEs|TestRehearseWorkshop|TestRehearseOnThisMachine)$$' $(TEST_FLAGS) $(UNIT_PKGS)

test-lab: ## go test the lab's packages (LAB_PKGS: real minikube in labs; skipped, saying why, without root).
	.ci/clean-tmp $(GO) test -count=1 $(VET) -shuffle=on -timeout $(TIMEOUT) $(TEST_FLAGS) $(LAB_PKGS:%=./%)

test-rehearsal: ## The workshop, every command as its READMEs print it: on real minikube in the lab, then exercise 16 (Delve) on this machine; one after the other, since both reset examples/workshop/answers (-v: the log is the record INSTRUCTOR.md's timings come from).
	.ci/clean-tmp $(GO) test -count=1 $(VET) -v -timeout $(TIMEOUT) -run '^TestRehearseWorkshop$$' $(TEST_FLAGS) ./examples/workshop/rehearsal/
	.ci/clean-tmp $(GO) test -count=1 $(VET) -v -timeout $(TIMEOUT) -run '^TestRehearseOnThisMachine$$' $(TEST_FLAGS) ./examples/workshop/rehearsal/

test-race: ## go test -race on our concurrent code (not the packages that start the real kubelet).
	.ci/clean-tmp $(GO) test -count=1 $(VET) -race -shuffle=on -timeout $(TIMEOUT) -skip '^TestChapterREADMEs$$' $(TEST_FLAGS) $(RACE_PKGS)

test-node-components: ## Build the lab (real minikube, its base image and cache) when this machine can run it (root); say why not otherwise.
	@.ci/as-root "the lab (chapter 12, the client's node tests, the workshop's rehearsal: a Docker engine in namespaces of its own, debootstrap)" \
	  $(MAKE) --no-print-directory node-components minikube lab

test-readmes: ## Run every chapter README's commands and compare their output: as this host, as the other cgroup version's host, and with Docker Engine running (.ci/readmes).
	@GO='$(GO)' TIMEOUT='$(TIMEOUT)' README_RUNS='$(README_RUNS)' TEST_FLAGS='$(TEST_FLAGS)' .ci/readmes

test-%: ## Test one chapter and its packages, e.g. `make test-04-runkubelet`.
	$(GO) test -count=1 -shuffle=on -timeout $(TIMEOUT) $(TEST_FLAGS) ./chapters/$*/...

verify-notes: ## Check every source citation against the pinned module; K8S=v1.38.0 lists what an upgrade breaks.
	K8S_VERSION=$(K8S) $(GO) test -count=1 -timeout $(TIMEOUT) -v -run '^TestCitations$$' ./chapters/machinery/notescheck/
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^(TestCheckerFindsBrokenCitations|TestBrokenCopyFails)$$' ./chapters/machinery/notescheck/

update-golden: ## Rewrite the sample outputs in the chapter READMEs from real runs.
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestChapterREADMEs$$' ./chapters/machinery/repocheck/ -update

bench: BENCH_COUNT ?= 6
bench: ## Run the benchmarks BENCH_COUNT times (6), then judge each side-by-side ratio against its goal in notes/measurements.md.
	@mkdir -p $(BIN)
	$(GO) test -timeout $(TIMEOUT) -run '^$$' -bench '$(BENCH)' -count $(BENCH_COUNT) -benchmem $(TEST_FLAGS) ./... | tee $(BIN)/bench.txt
	@$(GO) run ./chapters/machinery/testsupport/benchratio/benchsummary --goals notes/measurements.md $(BIN)/bench.txt

##@ Next release

.PHONY: next
next: ## A look at another release, go.mod untouched: make next K8S=v1.38.0-beta.0 builds every chapter on it (with the Go it asks for) in a copy, runs the READMEs, checks the citations; one report in .bin/next/.
	@test -n "$(K8S)" || { echo "make next K8S=<a kubernetes tag the module proxy serves, e.g. v1.38.0-beta.0>"; exit 1; }
	$(GO) run ./chapters/machinery/repocheck/nextrelease --k8s $(K8S) $(ARGS)

include chapters/machinery/lab/lab.mk

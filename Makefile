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
# Packages tested with the race detector: those with tests whose own code is concurrent
# (.ci/race-packages). Those whose code or tests start the real kubelet (realkubelet, minicluster,
# and what imports them) are left out: the kubelet's own data races are not ours to fix. So are
# those whose tests start a minikube cluster in the lab (what imports labtest) and the workshop's
# rehearsal: once, in test-unit, is enough.
RACE_PKGS    = $(shell .ci/race-packages chapters/04-runkubelet/realkubelet chapters/07-minicluster/minicluster chapters/lab/labtest examples/workshop/rehearsal)
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
	@test -n "$(EX)" || { echo "make check EX=<exercise number>, 1 to 13"; exit 1; }
	@$(GO) build -o $(BIN)/check ./examples/workshop/check
	@$(BIN)/check $(EX) $(ARGS)

##@ Debug (chapter 11: Delve, pinned in chapters/support/delve)

# An editor attaches to DEBUG_ADDR (.vscode/launch.json and .run/ name it). The chapters' own
# packages are built without optimizations (-N -l), so every line and variable of theirs is
# there; Kubernetes' are built as go build builds them, so that no second full build is needed.
# DEBUG_BUILD_FLAGS= (empty) builds everything without optimizations, as dlv does by default.
DEBUG_ADDR        ?= 127.0.0.1:2345
DEBUG_BUILD_FLAGS ?= -gcflags=all= '-gcflags=github.com/kubelet-walkthrough/kubelet-walkthrough/...=-N -l'

.PHONY: dlv
dlv: ## Build .bin/dlv: Delve, from its pinned module chapters/support/delve.
	@cd chapters/support/delve && $(GO) build -o $(CURDIR)/$(BIN)/dlv github.com/go-delve/delve/cmd/dlv

.PHONY: debug-chain
debug-chain: dlv ## Stop the real kubelet at every step of its startup chain in Delve (chapter 11).
	@$(GO) run ./chapters/11-debugger --dlv $(BIN)/dlv $(ARGS)

debug-%: dlv ## Serve one chapter in a headless Delve on DEBUG_ADDR for an editor to attach: make debug-04-runkubelet ARGS=--once.
	@test -d chapters/$* || { echo "no chapter $* (have: $(CHAPTERS))"; exit 1; }
	@echo "Delve builds chapters/$* and waits on $(DEBUG_ADDR): attach your editor (\"Attach to make debug\") or run $(BIN)/dlv connect $(DEBUG_ADDR)."
	@$(BIN)/dlv debug ./chapters/$* --headless --api-version=2 --accept-multiclient --listen=$(DEBUG_ADDR) --build-flags="$(DEBUG_BUILD_FLAGS)" -- $(ARGS)

##@ Test

# make test's stages, in order; .ci/stages prints how long each took.
TEST_STAGES := prerequisites verify verify-notes test-node-components test-unit test-rehearsal+test-race test-readmes

.PHONY: test
test: ## Everything CI checks (.ci/run calls this), stage by stage, with a time summary at the end.
	@.ci/stages $(TEST_STAGES)

.PHONY: prerequisites
prerequisites: ## Check this machine has what make test needs, before building anything (.ci/prerequisites).
	@.ci/prerequisites

# A cold build of a kubelet chapter takes minutes on 2 cores, and some tests build chapters.
TIMEOUT     ?= 45m
# Every README but chapter 09's runs three times in make test: as this host, then as the other
# cgroup version's host and with Docker Engine running; a race shows as a flaky sample. Chapter 09's
# runs once: its commands start and delete a cluster, as the lab's tests and the workshop's
# rehearsal do again. README_RUNS=N runs this host's leg N times in a row (hunting a flake); more
# by default costs more than make test's time goal allows.
README_RUNS ?= 1

.PHONY: verify
verify: verify-deps verify-platforms ## Static gates: gofmt, go mod tidy, go vet, pinned staging modules, the layout's import rules, the macOS and Windows builds.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^(TestImportRules|TestImportProblems|TestPlatforms|TestPlatformProblems|TestSideBySideBenchmarksReportRatios|TestLayout|TestMarkdownLinks|TestMainShape)$$' ./chapters/repocheck/

# What runs on macOS and Windows as well as on Linux: the chapters that read files, parse flags,
# talk to a cluster or run minikube, and the workshop's checker. The others run the kubelet's node
# code in this process and need Linux (.ci/README.md says why; README.md's table "Where each chapter
# runs" says which, and TestPlatforms holds that table to this list, the one place it is kept).
CROSS_PLATFORM := chapters/01-entrypoint chapters/02-config chapters/06-static-pods chapters/08-client \
  chapters/09-node examples/workshop/check
CROSS_TARGETS  := darwin/arm64 windows/amd64

.PHONY: verify-platforms
verify-platforms: ## Type-check for macOS (darwin/arm64) and Windows (windows/amd64), from source, every chapter that runs there (CROSS_PLATFORM).
	$(GO) run ./chapters/repocheck/typecheck $(CROSS_TARGETS:%=--platform %) $(CROSS_PLATFORM:%=./%)

.PHONY: vet
vet: ## go vet every package.
	$(GO) vet ./...

.PHONY: test-unit
test-unit: ## go test every package in random order (the README runs and the workshop's rehearsal have their targets).
	.ci/clean-tmp $(GO) test -count=1 -shuffle=on -timeout $(TIMEOUT) -skip '^(TestChapterREADMEs|TestRehearseWorkshop)$$' $(TEST_FLAGS) ./...

.PHONY: test-rehearsal
test-rehearsal: ## The workshop, every command as its READMEs print it, on real minikube in the lab (alone: its timings are checked; -v: the log is the record INSTRUCTOR.md's timings come from).
	.ci/clean-tmp $(GO) test -count=1 -v -timeout $(TIMEOUT) -run '^TestRehearseWorkshop$$' $(TEST_FLAGS) ./examples/workshop/rehearsal/

.PHONY: test-race
test-race: ## go test -race on our concurrent code (not the packages that start the real kubelet).
	.ci/clean-tmp $(GO) test -count=1 -race -shuffle=on -timeout $(TIMEOUT) -skip '^TestChapterREADMEs$$' $(TEST_FLAGS) $(RACE_PKGS)

.PHONY: test-node-components
test-node-components: ## Build the lab (real minikube, its base image and cache) when this machine can run it (root); say why not otherwise.
	@if [ "$$(id -u)" = 0 ]; then \
	  $(MAKE) --no-print-directory node-components minikube lab; \
	elif [ "$${CI:-}" = true ]; then \
	  echo "CI=true: the lab's tier (chapter 09, the client's node tests, the workshop's rehearsal) needs root (a Docker engine in namespaces of its own, debootstrap)"; exit 1; \
	else \
	  echo "Skipped: the lab (chapter 09, the client's node tests and the workshop's rehearsal skip too): it needs root — sudo -E make test runs it."; \
	fi

.PHONY: test-readmes
test-readmes: ## Run every chapter README's commands and compare their output: as this host, as the other cgroup version's host, and with Docker Engine running (.ci/readmes).
	@GO='$(GO)' TIMEOUT='$(TIMEOUT)' README_RUNS='$(README_RUNS)' TEST_FLAGS='$(TEST_FLAGS)' .ci/readmes

test-%: ## Test one chapter and its packages, e.g. `make test-04-runkubelet`.
	$(GO) test -count=1 -shuffle=on -timeout $(TIMEOUT) $(TEST_FLAGS) ./chapters/$*/...

.PHONY: verify-deps
verify-deps: ## Check that go.mod pins every kubernetes staging module at the matching version.
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestStagingReplaces$$' ./chapters/repocheck/

.PHONY: verify-notes
verify-notes: ## Check every source citation against the pinned module; K8S=v1.38.0 lists what an upgrade breaks.
	K8S_VERSION=$(K8S) $(GO) test -count=1 -timeout $(TIMEOUT) -v -run '^TestCitations$$' ./notes/
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^(TestCheckerFindsBrokenCitations|TestBrokenCopyFails)$$' ./notes/

.PHONY: update-golden
update-golden: ## Rewrite the sample outputs in the chapter READMEs from real runs.
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestChapterREADMEs$$' ./chapters/repocheck/ -update

.PHONY: bench
bench: BENCH_COUNT ?= 6
bench: ## Run the benchmarks BENCH_COUNT times (6), then judge each side-by-side ratio against its goal in notes/measurements.md.
	@mkdir -p $(BIN)
	$(GO) test -timeout $(TIMEOUT) -run '^$$' -bench '$(BENCH)' -count $(BENCH_COUNT) -benchmem $(TEST_FLAGS) ./... | tee $(BIN)/bench.txt
	@$(GO) run ./chapters/testsupport/benchratio/benchsummary --goals notes/measurements.md $(BIN)/bench.txt

##@ Lab: real minikube on a real Docker engine, offline

# Chapter 09 and the workshop's rehearsal run real minikube (built from its module) on a real
# Docker engine (Debian's docker.io) in namespaces of its own: chapters/lab, whose README says
# what each part is for. What minikube would download — its base image, the Kubernetes binaries,
# the images kubeadm and minikube ask for — is made here from pinned sources into .bin/node; no
# registry, no prebuilt download. Each target is incremental: the go command relinks only what
# changed (the build cache), and a progress line shows when there is more than a relink to do.
# One place for the versions, each with its source; TestMakefileVersions (chapters/lab/images)
# holds them against those sources, so that a bump of go.mod cannot silently leave one behind.
# `make node-versions` lists them.
NODE            := $(BIN)/node
# The base image's Debian root filesystem: the shared libraries of the images' cgo-linked
# binaries and kube-proxy's iptables and nft come from there too.
NODE_ROOTFS     ?= $(NODE)/rootfs
# Every node binary is stripped of its symbol table and DWARF, as kubernetes' and containerd's
# release builds are (hack/lib/golang.sh, containerd's Makefile): a third smaller, a quicker link.
# Go's own tables stay, so a panic still names its functions.
NODE_STRIP      := -s -w
# Release builds stamp gitMajor, gitMinor and gitTreeState as well (hack/lib/version.sh); kubeadm
# refuses a version it cannot parse. The major and minor come from K8S_VERSION (go.mod). Unlike
# release builds, no -trimpath and no release build tags: those would change every package's
# build and give up the chapters' build cache (stamps and stripping change only the link).
K8S_MAJOR       := $(word 1,$(subst ., ,$(K8S_VERSION:v%=%)))
K8S_MINOR       := $(word 2,$(subst ., ,$(K8S_VERSION:v%=%)))
NODE_K8S_LDFLAGS := $(NODE_STRIP) $(GO_LDFLAGS) -X k8s.io/component-base/version.gitMajor=$(K8S_MAJOR) \
  -X k8s.io/component-base/version.gitMinor=$(K8S_MINOR) -X k8s.io/component-base/version.gitTreeState=clean
# go.mod: the etcd server the chapters link is the etcd the node runs.
ETCD_VERSION    := $(shell $(GO) list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# kubeadm's constants.go, DefaultEtcdVersion: etcd's version, then the image's revision (-0).
ETCD_IMAGE_TAG  := $(ETCD_VERSION:v%=%)-0
# kubeadm's constants.go, CoreDNSVersion (build/dependencies.yaml "coredns-kubeadm").
COREDNS_VERSION := v1.14.6
# kubeadm's constants.go, PauseVersion; the pause program is kubernetes' own build/pause/linux/pause.c.
PAUSE_VERSION   := 3.10.2
# containerd's RELEASES.md (Kubernetes support): 1.37 is supported by 2.4.0+ and 2.3.0+.
CONTAINERD_VERSION := v2.4.2
# containerd's script/setup/runc-version at CONTAINERD_VERSION: the runc containerd is tested with.
RUNC_VERSION    := v1.5.2
# kubernetes' build/dependencies.yaml, "crictl" (1.36.0; the module proxy serves it).
CRICTL_VERSION  := v1.36.0
# kubernetes' build/dependencies.yaml, "cni".
CNI_VERSION     := v1.9.1
# minikube's version: the require line of chapters/lab/minikube/go.mod (a module of its own, so
# that minikube builds with its own dependencies, not the chapters').
MINIKUBE_MODULE := chapters/lab/minikube
MINIKUBE_VERSION := $(shell sed -n 's|^require k8s.io/minikube \(v[^ ]*\).*|\1|p' $(MINIKUBE_MODULE)/go.mod)
# minikube's Makefile, STORAGE_PROVISIONER_TAG: the tag minikube's binary asks for.
STORAGE_PROVISIONER_VERSION := v5
# BuildKit's version: the require line of chapters/lab/buildkit/go.mod (a module of its own, as
# minikube's), the BUILDKIT_VERSION of minikube's deploy/kicbase/Dockerfile at MINIKUBE_VERSION.
BUILDKIT_MODULE := chapters/lab/buildkit
BUILDKIT_VERSION := $(shell sed -n 's|^require github.com/moby/buildkit \(v[^ ]*\).*|\1|p' $(BUILDKIT_MODULE)/go.mod)
# runc's Makefile builds with "seccomp urfave_cli_no_docs libpathrs"; libpathrs is a Rust library
# that Debian bookworm does not package, and runc works without it (its pure-Go fallback).
RUNC_TAGS       := seccomp urfave_cli_no_docs
# minikube's Makefile: the version and the storage-provisioner tag are stamped into the binary,
# and libvirt (the kvm2 driver) is loaded only when used.
MINIKUBE_LDFLAGS := $(NODE_STRIP) -X k8s.io/minikube/pkg/version.version=$(MINIKUBE_VERSION) \
  -X k8s.io/minikube/pkg/version.storageProvisionerVersion=$(STORAGE_PROVISIONER_VERSION)

.PHONY: node-versions
node-versions: ## Print the lab's component versions (one NAME=value a line).
	@printf '%s\n' K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) ETCD_IMAGE_TAG=$(ETCD_IMAGE_TAG) \
	  COREDNS_VERSION=$(COREDNS_VERSION) PAUSE_VERSION=$(PAUSE_VERSION) CONTAINERD_VERSION=$(CONTAINERD_VERSION) \
	  RUNC_VERSION=$(RUNC_VERSION) CRICTL_VERSION=$(CRICTL_VERSION) CNI_VERSION=$(CNI_VERSION) \
	  MINIKUBE_VERSION=$(MINIKUBE_VERSION) STORAGE_PROVISIONER_VERSION=$(STORAGE_PROVISIONER_VERSION) BUILDKIT_VERSION=$(BUILDKIT_VERSION)

.PHONY: minikube
minikube: ## Build .bin/minikube: real minikube, from module k8s.io/minikube at MINIKUBE_VERSION.
	@cd $(MINIKUBE_MODULE) && TAGS=libvirt_dlopen LDFLAGS='$(MINIKUBE_LDFLAGS)' $(CURDIR)/.ci/go-progress $(CURDIR)/$(BIN)/minikube k8s.io/minikube/cmd/minikube

.PHONY: node-kubernetes
node-kubernetes: ## kubeadm, kubelet, kubectl into .bin/node/bin, the control plane and kube-proxy into .bin/node/images (go.mod's kubernetes).
	@LDFLAGS='$(NODE_K8S_LDFLAGS)' .ci/go-progress $(NODE)/bin/ $(addprefix k8s.io/kubernetes/cmd/,kubeadm kubelet kubectl)
	@LDFLAGS='$(NODE_K8S_LDFLAGS)' .ci/go-progress $(NODE)/images/ \
	  $(addprefix k8s.io/kubernetes/cmd/,kube-apiserver kube-controller-manager kube-scheduler kube-proxy)

.PHONY: node-etcd
node-etcd: ## etcd into .bin/node/images (go.mod's go.etcd.io/etcd/server/v3).
	@LDFLAGS='$(NODE_STRIP)' .ci/go-progress $(NODE)/images/etcd go.etcd.io/etcd/server/v3

# The version as containerd's Makefile stamps it (git describe: v2.4.2). The commits the upstream
# Makefiles stamp too (containerd's Revision, runc's gitCommit, etcd's GitSHA, CoreDNS's GitCommit)
# are left empty: a module zip carries no commit, and the module cache does not always keep it.
CONTAINERD_LDFLAGS := $(NODE_STRIP) -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)

.PHONY: node-containerd
node-containerd: ## containerd, containerd-shim-runc-v2, ctr into .bin/node/bin.
	@TAGS=no_btrfs LDFLAGS='$(CONTAINERD_LDFLAGS)' .ci/go-progress $(NODE)/bin/ $(foreach c,containerd containerd-shim-runc-v2 ctr,github.com/containerd/containerd/v2/cmd/$(c)@$(CONTAINERD_VERSION))

.PHONY: node-runc
node-runc: ## runc into .bin/node/bin (cgo, with seccomp: needs Debian's libseccomp-dev), and the runc shim beside it.
	@pkg-config --exists libseccomp || { echo "runc's seccomp support needs libseccomp-dev and pkg-config: apt-get install libseccomp-dev pkg-config"; exit 1; }
	@CGO_ENABLED=1 TAGS='$(RUNC_TAGS)' LDFLAGS='$(NODE_STRIP)' .ci/go-progress $(NODE)/bin/ github.com/opencontainers/runc@$(RUNC_VERSION)
	@CGO_ENABLED=0 $(GO) build -ldflags '$(NODE_STRIP)' -o $(NODE)/bin/runcshim ./chapters/lab/runcshim/runc

.PHONY: node-crictl
node-crictl: ## crictl into .bin/node/bin.
	@LDFLAGS='$(NODE_STRIP) -X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION:v%=%)' \
	  .ci/go-progress $(NODE)/bin/ sigs.k8s.io/cri-tools/cmd/crictl@$(CRICTL_VERSION)

.PHONY: node-cni
node-cni: ## The CNI plugins of minikube's bridge configuration into .bin/node/cni.
	@LDFLAGS='$(NODE_STRIP) -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_VERSION)' \
	  .ci/go-progress $(NODE)/cni/ $(foreach p,main/bridge ipam/host-local main/loopback meta/portmap meta/firewall,github.com/containernetworking/plugins/plugins/$(p)@$(CNI_VERSION))

.PHONY: node-coredns
node-coredns: ## coredns into .bin/node/images.
	@LDFLAGS='$(NODE_STRIP)' .ci/go-progress $(NODE)/images/ github.com/coredns/coredns@$(COREDNS_VERSION)

.PHONY: node-buildkit
node-buildkit: ## BuildKit's buildkitd and buildctl into .bin/node/bin (minikube image build, with containerd).
	@cd $(BUILDKIT_MODULE) && CGO_ENABLED=0 LDFLAGS='$(NODE_STRIP) -X github.com/moby/buildkit/version.Version=$(BUILDKIT_VERSION)' \
	  $(CURDIR)/.ci/go-progress $(CURDIR)/$(NODE)/bin/ $(foreach c,buildkitd buildctl,github.com/moby/buildkit/cmd/$(c))

# kubernetes' build/pause/Makefile: CFLAGS = -Os -Wall -Werror -static -DVERSION=v$(TAG)-$(REV).
K8S_DIR = $(shell $(GO) list -m -f '{{.Dir}}' k8s.io/kubernetes)

.PHONY: node-pause
node-pause: ## The pause program, from kubernetes' own build/pause/linux/pause.c (static: needs libc6-dev), into .bin/node/images.
	@mkdir -p $(NODE)/images
	@gcc -Os -Wall -Werror -static -DVERSION=v$(PAUSE_VERSION)-$(K8S_VERSION) -o $(NODE)/images/pause $(K8S_DIR)/build/pause/linux/pause.c

.PHONY: node-storage-provisioner
node-storage-provisioner: ## minikube's storage-provisioner (static) into .bin/node/images.
	@cd $(MINIKUBE_MODULE) && CGO_ENABLED=0 LDFLAGS='$(NODE_STRIP)' $(CURDIR)/.ci/go-progress $(CURDIR)/$(NODE)/images/storage-provisioner k8s.io/minikube/cmd/storage-provisioner

.PHONY: node-binaries
node-binaries: node-kubernetes node-etcd node-containerd node-runc node-crictl node-cni node-coredns node-buildkit node-pause node-storage-provisioner ## Every binary of the lab.

.PHONY: lab
lab: ## Build .bin/lab, the lab's command (chapters/lab/cmd/lab).
	@$(GO) build -o $(BIN)/lab ./chapters/lab/cmd/lab

.PHONY: node-rootfs
node-rootfs: lab ## The base image's root file system in .bin/node/rootfs: Debian bookworm by debootstrap (root; a minute or two, once).
	@$(BIN)/lab rootfs --rootfs $(NODE_ROOTFS)

.PHONY: node-cache
node-cache: lab ## minikube's cache in .bin/node/minikube-cache: the images kubeadm and minikube ask for, kubeadm, kubelet, kubectl (needs NODE_ROOTFS).
	@$(BIN)/lab images --binaries $(NODE)/images --library-root $(NODE_ROOTFS) --kubernetes-binaries $(NODE)/bin --cache $(NODE)/minikube-cache \
	  --kubernetes-version $(K8S_VERSION) --etcd-version $(ETCD_IMAGE_TAG) --coredns-version $(COREDNS_VERSION) --pause-version $(PAUSE_VERSION) \
	  --storage-provisioner-version $(STORAGE_PROVISIONER_VERSION)

.PHONY: node-base-image
node-base-image: lab ## The base image minikube runs as its node, .bin/node/kicbase.tar (needs NODE_ROOTFS).
	@$(BIN)/lab base-image --rootfs $(NODE_ROOTFS) --bin $(NODE)/bin --cni $(NODE)/cni --out $(NODE)/kicbase.tar

.PHONY: node-components
node-components: node-binaries node-rootfs ## Every part of the lab: binaries, root filesystem, then the base image and minikube's cache.
	@$(MAKE) --no-print-directory node-base-image node-cache

# Chapter 09 here: its README's two commands, in a lab.
run-09-node: node-components minikube lab
	@LDFLAGS='$(GO_LDFLAGS)' .ci/build-progress ./chapters/09-node $(BIN)/09-node
	@$(BIN)/lab run --serve -- bash -c 'minikube start --driver=docker --container-runtime=containerd --kubernetes-version=$(K8S_VERSION) && $(BIN)/09-node'

.PHONY: node-clean
node-clean: ## Remove the lab's binaries, images and minikube's cache (not the root filesystem).
	rm -rf $(NODE)/bin $(NODE)/cni $(NODE)/images $(NODE)/minikube-cache $(NODE)/kicbase.tar $(NODE)/kicbase.tar.inputs $(BIN)/lab $(BIN)/minikube

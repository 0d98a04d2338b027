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
# The node's tests boot a whole node (a minute), and the workshop's rehearsal runs the whole
# workshop on one (minutes): once, in test-unit, is enough.
NODE_PKG    := chapters/09-node/node
REHEARSAL_PKG := examples/workshop/rehearsal
RACE_PKGS    = $(shell $(GO) list -f '{{.ImportPath}} {{join .Deps " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | grep -v -e '$(word 1,$(REAL))' -e '$(word 2,$(REAL))' -e '$(NODE_PKG)' -e '$(REHEARSAL_PKG)' | cut -d' ' -f1)
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

##@ Test

.PHONY: test
test: verify verify-notes test-node-components test-unit test-race test-rehearsal test-readmes ## Everything CI checks (.ci/run calls this).

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
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^(TestImportRules|TestImportProblems)$$' ./chapters/

.PHONY: vet
vet: ## go vet every package.
	$(GO) vet ./...

.PHONY: test-unit
test-unit: ## go test every package in random order (the README runs and the workshop's rehearsal have their targets).
	$(GO) test -count=1 -shuffle=on -timeout $(TIMEOUT) -skip '^(TestChapterREADMEs|TestRehearseWorkshop)$$' $(TEST_FLAGS) ./...

.PHONY: test-rehearsal
test-rehearsal: ## The workshop, every command as its READMEs print it, on chapter 09's node (alone: its timings are checked).
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestRehearseWorkshop$$' $(TEST_FLAGS) ./examples/workshop/rehearsal/

.PHONY: test-race
test-race: ## go test -race on our concurrent code (not the packages that start the real kubelet).
	$(GO) test -count=1 -race -shuffle=on -timeout $(TIMEOUT) -skip '^TestChapterREADMEs$$' $(TEST_FLAGS) $(RACE_PKGS)

.PHONY: test-node-components
test-node-components: ## Build chapter 09's node and its minikube command when this machine can run them (root); say why not otherwise.
	@if [ "$$(id -u)" = 0 ]; then \
	  $(MAKE) --no-print-directory node-components minikube; \
	elif [ "$${CI:-}" = true ]; then \
	  echo "CI=true: chapter 09's node tier and the workshop's rehearsal need root (namespaces, cgroups, debootstrap)"; exit 1; \
	else \
	  echo "Skipped: chapter 09's node (its tests and the workshop's rehearsal skip too): it needs root — sudo -E make test runs it."; \
	fi

.PHONY: test-readmes
test-readmes: ## Run every chapter README's commands and compare their output, as this host and as a cgroup v2 host.
	$(GO) test -count=$(README_RUNS) -timeout $(TIMEOUT) -run '^TestChapterREADMEs$$' $(TEST_FLAGS) ./chapters/
	@if [ "$$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then \
	  echo "This host is cgroup v2: the samples for cgroup v1 hosts are checked by CI."; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo ".ci/cgroup-v2 $(GO) test … ./chapters/   # the same READMEs as a cgroup v2 host (but chapter 09: its node needs the machine's own cgroups)"; \
	  .ci/cgroup-v2 $(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestChapterREADMEs$$' -skip '^TestChapterREADMEs/09-node$$' $(TEST_FLAGS) ./chapters/; \
	elif [ "$${CI:-}" = true ]; then \
	  echo "CI=true: the READMEs must also be run as a cgroup v2 host, which on this cgroup v1 host needs root"; exit 1; \
	else \
	  echo "Skipped: the READMEs as a cgroup v2 host (this host is cgroup v1; simulating v2 needs root)."; \
	fi

test-%: ## Test one chapter and its packages, e.g. `make test-04-runkubelet`.
	$(GO) test -count=1 -shuffle=on -timeout $(TIMEOUT) $(TEST_FLAGS) ./chapters/$*/...

.PHONY: verify-deps
verify-deps: ## Check that go.mod pins every kubernetes staging module at the matching version.
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestStagingReplaces$$' ./chapters/

.PHONY: verify-notes
verify-notes: ## Check every source citation against the pinned module; K8S=v1.38.0 lists what an upgrade breaks.
	K8S_VERSION=$(K8S) $(GO) test -count=1 -timeout $(TIMEOUT) -v -run '^TestCitations$$' ./notes/
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^(TestCheckerFindsBrokenCitations|TestBrokenCopyFails)$$' ./notes/

.PHONY: update-golden
update-golden: ## Rewrite the sample outputs in the chapter READMEs from real runs.
	$(GO) test -count=1 -timeout $(TIMEOUT) -run '^TestChapterREADMEs$$' ./chapters/ -update

.PHONY: bench
bench: ## Run the benchmarks (side-by-side comparisons, see the chapter notes).
	$(GO) test -timeout $(TIMEOUT) -run '^$$' -bench '$(BENCH)' -benchmem ./...

##@ Node

# Chapter 09's node, built from pinned sources into .bin/node: no prebuilt download, no registry.
# Each target is incremental: the go command relinks only what changed (the build cache), and a
# progress line shows when there is more than a relink to do. One place for the versions, each
# with its source; TestMakefileVersions (chapters/09-node/nodeimages) holds them against those
# sources, so that a bump of go.mod cannot silently leave one behind. `make node-versions` lists them.
NODE            := $(BIN)/node
# The node's Debian root filesystem (chapter 09 writes it): the shared libraries of the images'
# cgo-linked binaries and kube-proxy's iptables and nft tools come from there.
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
# kubeadm's constants.go, PauseVersion.
PAUSE_VERSION   := 3.10.2
# containerd's RELEASES.md (Kubernetes support): 1.37 is supported by 2.4.0+ and 2.3.0+.
CONTAINERD_VERSION := v2.4.2
# containerd's script/setup/runc-version at CONTAINERD_VERSION: the runc containerd is tested with.
RUNC_VERSION    := v1.5.2
# kubernetes' build/dependencies.yaml, "crictl" (1.36.0; the module proxy serves it).
CRICTL_VERSION  := v1.36.0
# kubernetes' build/dependencies.yaml, "cni".
CNI_VERSION     := v1.9.1
# runc's Makefile builds with "seccomp urfave_cli_no_docs libpathrs"; libpathrs is a Rust library
# that Debian bookworm does not package, and runc works without it (its pure-Go fallback).
RUNC_TAGS       := seccomp urfave_cli_no_docs

.PHONY: node-versions
node-versions: ## Print the node components' versions (one NAME=value a line).
	@printf '%s\n' K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) ETCD_IMAGE_TAG=$(ETCD_IMAGE_TAG) \
	  COREDNS_VERSION=$(COREDNS_VERSION) PAUSE_VERSION=$(PAUSE_VERSION) CONTAINERD_VERSION=$(CONTAINERD_VERSION) \
	  RUNC_VERSION=$(RUNC_VERSION) CRICTL_VERSION=$(CRICTL_VERSION) CNI_VERSION=$(CNI_VERSION)

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
node-runc: ## runc into .bin/node/bin (cgo, with seccomp: needs Debian's libseccomp-dev).
	@pkg-config --exists libseccomp || { echo "runc's seccomp support needs libseccomp-dev and pkg-config: apt-get install libseccomp-dev pkg-config"; exit 1; }
	@CGO_ENABLED=1 TAGS='$(RUNC_TAGS)' LDFLAGS='$(NODE_STRIP)' .ci/go-progress $(NODE)/bin/ github.com/opencontainers/runc@$(RUNC_VERSION)

.PHONY: node-crictl
node-crictl: ## crictl into .bin/node/bin.
	@LDFLAGS='$(NODE_STRIP) -X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION:v%=%)' \
	  .ci/go-progress $(NODE)/bin/ sigs.k8s.io/cri-tools/cmd/crictl@$(CRICTL_VERSION)

.PHONY: node-cni
node-cni: ## The CNI plugins bridge, host-local, loopback, portmap into .bin/node/cni.
	@LDFLAGS='$(NODE_STRIP) -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_VERSION)' \
	  .ci/go-progress $(NODE)/cni/ $(foreach p,main/bridge ipam/host-local main/loopback meta/portmap,github.com/containernetworking/plugins/plugins/$(p)@$(CNI_VERSION))

.PHONY: node-coredns
node-coredns: ## coredns into .bin/node/images.
	@LDFLAGS='$(NODE_STRIP)' .ci/go-progress $(NODE)/images/ github.com/coredns/coredns@$(COREDNS_VERSION)

.PHONY: node-pause
node-pause: ## Our pause program (chapters/09-node/pause), static, into .bin/node/images.
	@CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(NODE_STRIP) -X main.version=$(PAUSE_VERSION)' -o $(NODE)/images/pause ./chapters/09-node/pause

.PHONY: node-binaries
node-binaries: node-kubernetes node-etcd node-containerd node-runc node-crictl node-cni node-coredns node-pause ## Every binary of the node.

.PHONY: node-images
node-images: ## The images kubeadm asks for, as docker archives in .bin/node/image-archives (needs NODE_ROOTFS).
	@test -d $(NODE_ROOTFS)/usr/sbin || { echo "no root filesystem at $(NODE_ROOTFS): the images take their libraries and kube-proxy's iptables from it (set NODE_ROOTFS=…)"; exit 1; }
	@$(GO) build -o $(BIN)/buildimages ./chapters/09-node/buildimages
	@$(BIN)/buildimages --binaries $(NODE)/images --library-root $(NODE_ROOTFS) --out $(NODE)/image-archives \
	  --kubernetes-version $(K8S_VERSION) --etcd-version $(ETCD_IMAGE_TAG) --coredns-version $(COREDNS_VERSION) --pause-version $(PAUSE_VERSION)

.PHONY: node-rootfs
node-rootfs: ## The node's root filesystem in .bin/node/rootfs: Debian bookworm by debootstrap (root; about a minute, once).
	@$(GO) build -o $(BIN)/09-node ./chapters/09-node
	@$(BIN)/09-node rootfs --rootfs $(NODE_ROOTFS)

.PHONY: node-components
node-components: node-binaries node-rootfs ## Every binary of the node, its root filesystem, then its images.
	@$(MAKE) --no-print-directory node-images

.PHONY: minikube
minikube: ## Build .bin/minikube, the minikube command for chapter 09's node (next to .bin/node).
	@$(GO) build -o $(BIN)/minikube ./chapters/09-node/minikube

# Chapter 09 needs its components and root filesystem first.
run-09-node: node-components

.PHONY: node-clean
node-clean: ## Remove the node's binaries and images (not the root filesystem).
	rm -rf $(NODE)/bin $(NODE)/cni $(NODE)/images $(NODE)/image-archives $(BIN)/buildimages

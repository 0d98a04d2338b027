# The lab's builds (included by the repository's Makefile, run from the repository's root): real
# minikube on a real Docker engine, offline. chapters/machinery/lab/README.md says what each part is for.

##@ Lab: real minikube on a real Docker engine, offline

# Chapter 12 and the workshop's rehearsal run real minikube (built from its module) on a real
# Docker engine (Debian's docker.io) in namespaces of its own: chapters/machinery/lab, whose README says
# what each part is for. What minikube would download — its base image, the Kubernetes binaries,
# the images kubeadm and minikube ask for — is made here from pinned sources into .bin/node; no
# registry, no prebuilt download. Each target is incremental: the go command relinks only what
# changed (the build cache), and a progress line shows when there is more than a relink to do.
# One place for the versions, each with its source; TestMakefileVersions (chapters/machinery/lab/images)
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
ETCD_VERSION    := $(shell sed -n 's|^[[:space:]]*go\.etcd\.io/etcd/server/v3[[:space:]]\{1,\}\(v[^[:space:]]*\).*|\1|p' go.mod)
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
# kubernetes' build/dependencies.yaml, "crictl" (1.36.0). kicbase v0.0.50 ships v1.35.0, which the
# module proxy does not serve ("403 … not available"): the nearest it serves is kubernetes' own.
CRICTL_VERSION  := v1.36.0
# minikube's deploy/kicbase/Dockerfile at MINIKUBE_VERSION, CNI_PLUGINS_VERSION: kicbase v0.0.50's
# plugins (kubernetes' build/dependencies.yaml says v1.9.1).
CNI_VERSION     := v1.9.0
# minikube's version: the require line of chapters/machinery/lab/minikube/go.mod (a module of its own, so
# that minikube builds with its own dependencies, not the chapters').
MINIKUBE_MODULE := chapters/machinery/lab/minikube
MINIKUBE_VERSION := $(shell sed -n 's|^require k8s.io/minikube \(v[^ ]*\).*|\1|p' $(MINIKUBE_MODULE)/go.mod)
# minikube's Makefile, STORAGE_PROVISIONER_TAG: the tag minikube's binary asks for. Its build is a
# module of its own: v5's source in minikube, with the client libraries v5 was built with (its tools.go).
STORAGE_PROVISIONER_VERSION := v5
STORAGE_PROVISIONER_MODULE := chapters/machinery/lab/storageprovisioner
# BuildKit's version: the require line of chapters/machinery/lab/buildkit/go.mod (a module of its own, as
# minikube's), the BUILDKIT_VERSION of minikube's deploy/kicbase/Dockerfile at MINIKUBE_VERSION.
BUILDKIT_MODULE := chapters/machinery/lab/buildkit
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
	@CGO_ENABLED=0 $(GO) build -ldflags '$(NODE_STRIP)' -o $(NODE)/bin/runcshim ./chapters/machinery/lab/runcshim/runc

.PHONY: node-crictl
node-crictl: ## crictl into .bin/node/bin.
	@LDFLAGS='$(NODE_STRIP) -X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION:v%=%)' \
	  .ci/go-progress $(NODE)/bin/ sigs.k8s.io/cri-tools/cmd/crictl@$(CRICTL_VERSION)

.PHONY: node-cni
node-cni: ## The CNI plugins of kindnet's configuration (ptp) and minikube's bridge one into .bin/node/cni.
	@LDFLAGS='$(NODE_STRIP) -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_VERSION)' \
	  .ci/go-progress $(NODE)/cni/ $(foreach p,main/ptp main/bridge ipam/host-local main/loopback meta/portmap meta/firewall,github.com/containernetworking/plugins/plugins/$(p)@$(CNI_VERSION))

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
node-storage-provisioner: ## minikube's storage-provisioner v5 (static) into .bin/node/images.
	@cd $(STORAGE_PROVISIONER_MODULE) && CGO_ENABLED=0 LDFLAGS='$(NODE_STRIP)' \
	  $(CURDIR)/.ci/go-progress $(CURDIR)/$(NODE)/images/storage-provisioner k8s.io/minikube/cmd/storage-provisioner

.PHONY: node-binaries
node-binaries: node-kubernetes node-etcd node-containerd node-runc node-crictl node-cni node-coredns node-buildkit node-pause node-storage-provisioner ## Every binary of the lab.

.PHONY: lab
lab: ## Build .bin/lab, the lab's command (chapters/machinery/lab/cmd/lab).
	@$(GO) build -o $(BIN)/lab ./chapters/machinery/lab/cmd/lab

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

# The image .ci/in-docker runs the chapters in, where a reader's Docker builds .devcontainer/Dockerfile on
# the Go image: its equivalent, from Debian's packages and this machine's Go (images/runimage.go).
.PHONY: run-image
run-image: lab ## The run image's equivalent, .bin/docker/run-image.tar, named as .ci/in-docker names its image (root; debootstrap once).
	@$(BIN)/lab run-image --goroot "$$($(GO) env GOROOT)" --ref "$$(.ci/in-docker image)"

.PHONY: node-components
node-components: lab ## Every part of the lab: binaries and root filesystems (at the same time: debootstrap mostly waits on the mirror), then the base image and minikube's cache.
	@$(MAKE) --no-print-directory node-rootfs run-image & rootfs=$$!; rc=0; \
	  $(MAKE) --no-print-directory node-binaries || rc=$$?; wait $$rootfs || rc=$$?; exit $$rc
	@$(MAKE) --no-print-directory node-base-image node-cache

# Chapter 12 here: its README's two commands, in a lab.
run-12-node: node-components minikube lab
	@LDFLAGS='$(GO_LDFLAGS)' .ci/go-progress $(BIN)/12-node ./chapters/12-node
	@$(BIN)/lab run --serve -- bash -c 'minikube start --driver=docker --container-runtime=containerd --kubernetes-version=$(K8S_VERSION) --force && $(BIN)/12-node'

.PHONY: node-clean
node-clean: ## Remove the lab's binaries, images and minikube's cache (not the root filesystem).
	rm -rf $(NODE)/bin $(NODE)/cni $(NODE)/images $(NODE)/minikube-cache $(NODE)/kicbase.tar $(NODE)/kicbase.tar.inputs $(BIN)/lab $(BIN)/minikube

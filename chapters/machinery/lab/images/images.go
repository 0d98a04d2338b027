// Package images builds, without a registry, the container images real minikube loads into its
// node: those kubeadm asks for — the control plane, kube-proxy, etcd, CoreDNS and pause — and
// minikube's storage-provisioner, each from a binary built from pinned sources (make
// node-binaries), written as a docker archive where minikube's image cache keeps it
// (cache/images/amd64/<name>_<tag>). minikube copies each into the node and loads it with
// `ctr -n=k8s.io images import`, under exactly the name kubeadm's manifests and minikube's
// addon use. The package also makes the base image minikube runs as its node (kicbase.go).
//
// Which images, and their names: `kubeadm config images list --kubernetes-version v1.37.2`, that
// is cmd/kubeadm/app/images/images.go#L96-L126 (GetControlPlaneImages). What each image must
// hold is what the manifests that kubeadm writes run in it (and minikube's, for its two):
//   - kube-apiserver, kube-controller-manager, kube-scheduler: the command is the bare name,
//     found on PATH (cmd/kubeadm/app/phases/controlplane/manifests.go#L213 (command := []string{"kube-apiserver"}));
//   - etcd: "etcd" on PATH (cmd/kubeadm/app/phases/etcd/local.go#L282 (command := []string{"etcd"}));
//   - kube-proxy: /usr/local/bin/kube-proxy (cmd/kubeadm/app/phases/addons/proxy/manifests.go#L79 (- /usr/local/bin/kube-proxy)),
//     and the iptables and nft programs it runs (pkg/util/iptables, sigs.k8s.io/knftables);
//   - CoreDNS: no command, only args (cmd/kubeadm/app/phases/addons/dns/manifests.go#L109 (args: [ "-conf", "/etc/coredns/Corefile" ])):
//     the image's entrypoint is /coredns, as in CoreDNS's own Dockerfile;
//   - pause: /pause, run as 65535:65535 (build/pause/Dockerfile).
//
// Each image has no /etc/passwd (everything runs as root, or as a numeric user) and no shell.
// The binaries that link libc dynamically (cgo: the kubernetes commands share the chapters'
// build cache, which is built with cgo) get their shared libraries and the dynamic loader from
// a Debian root filesystem, the node's own: the ELF's PT_INTERP and DT_NEEDED entries, resolved
// the way the loader does, recursively. kube-proxy's iptables and nft come from there too.
//
// Build is incremental: an archive whose inputs (binaries, libraries, versions, layout) have not
// changed is left as it is.
package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
)

// Repository is kubeadm's default image repository
// (cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go#L44 (DefaultImageRepository = "registry.k8s.io")).
const Repository = "registry.k8s.io"

// Versions are the tags of the images, as kubeadm v1.37.2 names them.
type Versions struct {
	// Kubernetes tags kube-apiserver, kube-controller-manager, kube-scheduler and kube-proxy: the
	// kubernetes version itself, v1.37.2 (go.mod).
	Kubernetes string
	// Etcd is kubeadm's DefaultEtcdVersion, 3.7.0-0: etcd's version, then the image's revision.
	Etcd string
	// CoreDNS is kubeadm's CoreDNSVersion, v1.14.6.
	CoreDNS string
	// Pause is kubeadm's PauseVersion, 3.10.2.
	Pause string
	// StorageProvisioner is minikube's storage-provisioner tag, v5 (its Makefile's
	// STORAGE_PROVISIONER_TAG, stamped into minikube's binary).
	StorageProvisioner string
}

// Spec says what goes into one image.
type Spec struct {
	// Name names the image's binary in Options.Binaries.
	Name string
	// Ref is the image's name and tag, as kubeadm prints it.
	Ref string
	// Path is where the binary goes in the image.
	Path string
	// Entrypoint and User are the image's config; Env is always PATH.
	Entrypoint []string
	User       string
	// Tools are programs of the library root that the binary runs, taken with their libraries.
	// Each name is tried in order; Required ones must exist.
	Tools []Tool
}

// Tool is a program of the library root that goes into an image.
type Tool struct {
	Path     string
	Required bool
}

// PATH is the images' search path, Debian's default for root.
const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// kubeProxyTools are the programs kube-proxy runs: iptables mode runs iptables, iptables-save
// and iptables-restore (and ip6tables… for IPv6), nftables mode runs nft. The -legacy and -nft
// variants come along where the root has them, so that iptables can be pointed at either
// backend; the plain names point where the root's alternatives point (Debian bookworm: nft).
var kubeProxyTools = func() []Tool {
	var tools []Tool
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			tools = append(tools, Tool{Path: "/usr/sbin/" + family + suffix, Required: true})
			for _, backend := range []string{"-legacy", "-nft"} {
				tools = append(tools, Tool{Path: "/usr/sbin/" + family + backend + suffix})
			}
		}
	}
	return append(tools, Tool{Path: "/usr/sbin/nft", Required: true})
}()

// Specs are the images kubeadm asks for, in the order `kubeadm config images list` prints them
// (GetControlPlaneImages): the control plane, kube-proxy, CoreDNS, pause, etcd; then minikube's:
// storage-provisioner (its default addon).
func Specs(v Versions) []Spec {
	kube := func(name string) Spec {
		path := "/usr/local/bin/" + name
		return Spec{Name: name, Ref: Repository + "/" + name + ":" + v.Kubernetes, Path: path, Entrypoint: []string{path}}
	}
	proxy := kube("kube-proxy")
	proxy.Tools = kubeProxyTools
	return []Spec{
		kube("kube-apiserver"),
		kube("kube-controller-manager"),
		kube("kube-scheduler"),
		proxy,
		// GetDNSImage: the default repository gets a /coredns path ("registry.k8s.io/coredns/coredns").
		{Name: "coredns", Ref: Repository + "/coredns/coredns:" + v.CoreDNS, Path: "/coredns", Entrypoint: []string{"/coredns"}},
		{Name: "pause", Ref: Repository + "/pause:" + v.Pause, Path: "/pause", Entrypoint: []string{"/pause"}, User: "65535:65535"},
		{Name: "etcd", Ref: Repository + "/etcd:" + v.Etcd, Path: "/usr/local/bin/etcd", Entrypoint: []string{"/usr/local/bin/etcd"}},
		// minikube's addon (deploy/storage-provisioner/Dockerfile: FROM scratch, the static binary).
		{Name: "storage-provisioner", Ref: MinikubeRepository + "/storage-provisioner:" + v.StorageProvisioner, Path: "/storage-provisioner", Entrypoint: []string{"/storage-provisioner"}},
	}
}

// MinikubeRepository is where minikube's own images live (pkg/minikube/bootstrapper/images).
const MinikubeRepository = "gcr.io/k8s-minikube"

// CachePath is where minikube's image cache keeps an image, relative to cache/images/<arch>:
// its name with each ':' made '_' (pkg/minikube/localpath: SanitizeCacheDir).
func CachePath(ref string) string { return strings.ReplaceAll(ref, ":", "_") }

// Options says where Build finds its inputs and writes the archives.
type Options struct {
	// Binaries holds one binary per image, named as the Spec (kube-apiserver, …, etcd, coredns,
	// pause, storage-provisioner): make node-binaries writes them to .bin/node/images.
	Binaries string
	// LibraryRoot is a Debian root filesystem (the node's, .bin/node/rootfs): the dynamic loader
	// and shared libraries of cgo-linked binaries, and kube-proxy's iptables and nft, come from it.
	LibraryRoot string
	// Out is the directory of the archives: minikube's cache/images/<arch>, each archive at
	// CachePath(ref) under it.
	Out string
	// Versions tag the images.
	Versions Versions
}

// Image is one archive Build wrote or found up to date.
type Image struct {
	Spec
	// Archive is the docker archive's path, Size its size in bytes.
	Archive string
	Size    int64
	// Built is false when the archive was up to date and left alone.
	Built bool
}

// String is the image's line in a table: its name, its archive, its size, and whether it was
// built or up to date.
func (i Image) String() string {
	state := "up to date"
	if i.Built {
		state = "built"
	}
	return fmt.Sprintf("%s\t%s\t%d MB\t%s", i.Ref, i.Archive, (i.Size+1<<19)>>20, state)
}

func (o Options) validate() error {
	var errs []error
	for flag, value := range map[string]string{
		"binaries directory": o.Binaries, "library root": o.LibraryRoot, "output directory": o.Out,
		"kubernetes version": o.Versions.Kubernetes, "etcd version": o.Versions.Etcd,
		"CoreDNS version": o.Versions.CoreDNS, "pause version": o.Versions.Pause,
		"storage-provisioner version": o.Versions.StorageProvisioner,
	} {
		if value == "" {
			errs = append(errs, fmt.Errorf("no %s", flag))
		}
	}
	return errors.Join(errs...)
}

// Build writes the archive of every image in Specs(opts.Versions) to opts.Out, skipping those
// whose inputs have not changed, and returns them in kubeadm's order.
func Build(ctx context.Context, opts Options) ([]Image, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	specs := Specs(opts.Versions)
	images := make([]Image, len(specs))
	// Compressing the layers is most of the work: one image per core.
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, spec := range specs {
		g.Go(func() error {
			image, err := build(ctx, spec, opts)
			if err != nil {
				return fmt.Errorf("image %s: %w", spec.Ref, err)
			}
			images[i] = image
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return images, nil
}

// layoutVersion changes whenever this package changes what it puts in an image, so that the
// archives written before are rebuilt.
const layoutVersion = "images/2"

// build writes one image's archive unless its stamp (the digest of all its inputs) says the
// archive there is up to date.
func build(ctx context.Context, spec Spec, opts Options) (Image, error) {
	logger := klog.FromContext(ctx).WithValues("image", spec.Ref)
	image := Image{Spec: spec, Archive: filepath.Join(opts.Out, CachePath(spec.Ref))}
	layers, err := plan(spec, opts)
	if err != nil {
		return image, err
	}
	config := configFile(spec)
	key, err := inputsDigest(spec, config, layers)
	if err != nil {
		return image, err
	}
	if size, ok := upToDate(image.Archive, key); ok {
		logger.V(2).Info("Archive up to date", "archive", image.Archive)
		image.Size = size
		return image, nil
	}

	start := time.Now()
	var made []madeLayer
	for _, l := range layers {
		layer, err := tarball.LayerFromOpener(l.opener(), tarball.WithCompressedCaching)
		if err != nil {
			return image, fmt.Errorf("layer %s: %w", l.name, err)
		}
		made = append(made, madeLayer{layer, l.name})
	}
	if image.Size, err = writeImage(image.Archive, key, spec.Ref, config, made); err != nil {
		return image, err
	}
	image.Built = true
	logger.V(1).Info("Built image", "archive", image.Archive, "bytes", image.Size, "took", time.Since(start))
	return image, nil
}

// upToDate says whether the archive at path was written from the inputs whose digest is key (its
// stamp, path.inputs, holds key), and its size.
func upToDate(path, key string) (int64, bool) {
	if old, err := os.ReadFile(path + ".inputs"); err != nil || string(old) != key {
		return 0, false
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	return st.Size(), true
}

// madeLayer is a layer, and what made it (the image's history says it).
type madeLayer struct {
	layer v1.Layer
	name  string
}

// writeImage writes the image of config and layers as a docker archive tagged ref, beside path
// and renamed over it — a reader never sees half an archive — then the stamp of its inputs
// (key), only once the archive is whole. It returns the archive's size.
func writeImage(path, key, ref string, config *v1.ConfigFile, layers []madeLayer) (int64, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return 0, err
	}
	img, err := mutate.ConfigFile(empty.Image, config)
	if err != nil {
		return 0, err
	}
	for _, l := range layers {
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l.layer, History: v1.History{
			Created: v1.Time{Time: epoch}, CreatedBy: "kubelet-walkthrough lab: " + l.name, Comment: layoutVersion,
		}}); err != nil {
			return 0, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, err
	}
	if err := os.WriteFile(path+".inputs", []byte(key), 0o644); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// epoch dates the images and their files, so that the same inputs give the same archive.
var epoch = time.Unix(0, 0).UTC()

// configFile is the image's config: where it runs, what, as whom, with which PATH.
func configFile(spec Spec) *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: spec.Entrypoint,
			Env:        []string{"PATH=" + PATH},
			User:       spec.User,
			WorkingDir: "/",
		},
	}
}

// inputsDigest is the digest of everything an archive is made from: the spec (with the image's
// name), the config, and each file of each layer with its mode and its content's digest.
func inputsDigest(spec Spec, config *v1.ConfigFile, layers []layer) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	if err := enc.Encode([]any{layoutVersion, spec, config}); err != nil {
		return "", err
	}
	for _, l := range layers {
		if err := digestEntries(enc, l.name, l.entries); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digestEntries adds each entry of a layer, with its mode and its content's digest, to a digest.
func digestEntries(enc *json.Encoder, layerName string, entries []entry) error {
	for _, e := range entries {
		sum, err := e.contentDigest()
		if err != nil {
			return err
		}
		if err := enc.Encode([]any{layerName, e.Path, uint32(e.Mode), e.Link, sum}); err != nil {
			return err
		}
	}
	return nil
}

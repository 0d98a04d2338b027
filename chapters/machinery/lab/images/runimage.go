package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The run image: the Linux that .ci/in-docker runs the chapters in (`make run` off Linux, and
// RUN_IN=docker anywhere) and the dev container. A reader's Docker builds it from
// .devcontainer/Dockerfile: the official Go image golang:1.26-bookworm — Debian bookworm,
// buildpack-deps' curl and scm tools, gcc and make for cgo, Go from go.dev — with the packages
// and changes the chapters add. Registries cannot be reached here, so the lab makes its
// equivalent as it makes its other images: debootstrap's bookworm with the same packages (less
// those no chapter uses: gnupg, sq, mercurial, subversion, git-lfs, g++), this machine's Go in
// /usr/local/go, the same changes and environment, under the name .ci/in-docker gives the image
// it builds, so that it finds the image built.

// runImagePackages are the packages of the Go image and of the Dockerfile.
var runImagePackages = []string{
	// buildpack-deps:bookworm-curl and bookworm-scm, which golang:1.26-bookworm is built on
	"ca-certificates", "curl", "netbase", "wget", "git", "openssh-client", "procps",
	// golang:1.26-bookworm: cgo (the race detector)
	"gcc", "libc6-dev", "make", "pkg-config",
	// .devcontainer/Dockerfile (TestRunImageIsTheDockerfiles holds this list to it)
	"iproute2", "socat",
}

// runImageChanges are the Go image's and the Dockerfile's commands after their packages.
var runImageChanges = []string{
	// golang:1.26-bookworm
	`mkdir -p "/go/src" "/go/bin" && chmod -R 1777 "/go"`,
	// .devcontainer/Dockerfile (TestRunImageIsTheDockerfiles holds these to it)
	"mkdir -p /go/pkg/mod /go/cache",
	"chmod 1777 /go/pkg/mod /go/cache",
	"git config --system --add safe.directory '*'",
	"useradd --create-home --shell /bin/bash walkthrough",
	// What the images' `rm -rf /var/lib/apt/lists/*` leaves out, and debootstrap's downloads.
	"rm -rf /var/cache/apt/archives/*.deb /var/lib/apt/lists/*",
}

// RunImageRecipe is the run image's root file system.
func RunImageRecipe() Recipe {
	return Recipe{Image: "the run image", Packages: runImagePackages, Changes: runImageChanges}
}

// runImageEnv is the Go image's environment (GOLANG_VERSION aside) and the Dockerfile's.
var runImageEnv = []string{
	"PATH=/go/bin:/usr/local/go/bin:" + PATH,
	"GOTOOLCHAIN=local",
	"GOPATH=/go",
	"GOCACHE=/go/cache",
}

// RunImageOptions say where BuildRunImage finds its inputs and writes the archive.
type RunImageOptions struct {
	// Rootfs is the root file system RunImageRecipe made; GoRoot the Go to copy into
	// /usr/local/go (this machine's: go env GOROOT).
	Rootfs, GoRoot string
	// Out is the docker archive to write; Ref the image's name.
	Out, Ref string
}

// runImageConfig is the Go image's config: bash in /go.
func runImageConfig() *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Cmd:        []string{"bash"},
			Env:        runImageEnv,
			WorkingDir: "/go",
		},
	}
}

// BuildRunImage writes the run image's archive, unless its inputs have not changed since it was
// last written.
func BuildRunImage(ctx context.Context, opts RunImageOptions) (Image, error) {
	image := Image{Spec: Spec{Name: "run", Ref: opts.Ref}, Archive: opts.Out}
	for what, value := range map[string]string{"root file system": opts.Rootfs, "Go": opts.GoRoot, "archive": opts.Out, "image name": opts.Ref} {
		if value == "" {
			return image, fmt.Errorf("the run image needs its %s", what)
		}
	}
	if _, err := name.NewTag(opts.Ref); err != nil {
		return image, fmt.Errorf("the run image's name: %w", err)
	}
	recipe := RunImageRecipe()
	if !recipe.Ready(opts.Rootfs) {
		return image, fmt.Errorf("no root file system at %s made with the run image's recipe (make run-image)", opts.Rootfs)
	}
	made, err := os.Stat(filepath.Join(opts.Rootfs, rootfsDone))
	if err != nil {
		return image, err
	}
	// Go's VERSION file names the release (go1.26.8), and changes with it.
	version, err := os.ReadFile(filepath.Join(opts.GoRoot, "VERSION"))
	if err != nil {
		return image, fmt.Errorf("the run image's Go: %w", err)
	}
	config := runImageConfig()
	h := sha256.New()
	if err := json.NewEncoder(h).Encode([]any{layoutVersion, opts.Ref, config, recipe.text(), made.ModTime().UnixNano(), opts.GoRoot, string(version)}); err != nil {
		return image, err
	}
	key := hex.EncodeToString(h.Sum(nil))
	if size, ok := upToDate(opts.Out, key); ok {
		image.Size = size
		return image, nil
	}
	rootfs, err := rootfsLayer(opts.Rootfs)
	if err != nil {
		return image, err
	}
	goLayer, err := tarLayer("--owner=0", "--group=0", "--transform=s,^\\.,usr/local/go,", "-C", opts.GoRoot, ".") // as a release archive unpacked there as root
	if err != nil {
		return image, err
	}
	if image.Size, err = writeImage(opts.Out, key, opts.Ref, config, []madeLayer{
		{rootfs, "debootstrap " + Suite + ", the Go image's packages and the Dockerfile's"},
		{goLayer, "Go " + strings.TrimSpace(strings.SplitN(string(version), "\n", 2)[0])},
	}); err != nil {
		return image, err
	}
	image.Built = true
	return image, ctx.Err()
}

package images

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// repoRoot is the module's root, where the Makefile is.
var repoRoot = repo.Root()

// makefileVersions runs `make node-versions`: the versions the node is built with.
func makefileVersions(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("make", "-s", "--no-print-directory", "node-versions")
	cmd.Dir, cmd.Env = repoRoot, repo.MakeEnv()
	out, err := cmd.Output()
	require.NoError(t, err, "make node-versions")
	versions := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), "=")
		require.True(t, ok, "make node-versions printed %q", sc.Text())
		versions[key] = value
	}
	return versions
}

// versionSources are what the Makefile's versions must agree with, read from where each comes from.
type versionSources struct {
	// goMod has the versions go.mod requires, by module.
	goMod map[string]string
	// kubeadm has the string constants of kubeadm's constants.go (CoreDNSVersion, …).
	kubeadm map[string]string
	// dependencies has kubernetes' build/dependencies.yaml versions, by name ("cni", "crictl").
	dependencies map[string]string
	// runc is containerd's script/setup/runc-version at CONTAINERD_VERSION.
	runc string
	// containerdReleases is containerd's RELEASES.md cell listing the containerd releases that
	// support the kubernetes minor version ("2.4.0+, 2.3.0+").
	containerdReleases string
	// minikubeGoMod is the k8s.io/minikube version chapters/machinery/lab/minikube/go.mod requires,
	// buildkitGoMod the github.com/moby/buildkit version chapters/machinery/lab/buildkit/go.mod requires.
	minikubeGoMod, buildkitGoMod string
	// storageProvisionerTag is minikube's Makefile's STORAGE_PROVISIONER_TAG at MINIKUBE_VERSION.
	storageProvisionerTag string
	// kicbaseBuildkit is the BUILDKIT_VERSION of minikube's deploy/kicbase/Dockerfile at
	// MINIKUBE_VERSION: the BuildKit kicbase ships; kicbaseCNI its CNI_PLUGINS_VERSION.
	kicbaseBuildkit, kicbaseCNI string
}

// versionProblems compares the Makefile's versions with their sources; one line per problem.
func versionProblems(mk map[string]string, src versionSources) []string {
	var problems []string
	check := func(variable, want, source string) {
		if mk[variable] != want {
			problems = append(problems, fmt.Sprintf("%s=%s, but %s says %s", variable, mk[variable], source, want))
		}
	}
	check("K8S_VERSION", src.goMod["k8s.io/kubernetes"], "go.mod (k8s.io/kubernetes)")
	check("ETCD_VERSION", src.goMod["go.etcd.io/etcd/server/v3"], "go.mod (go.etcd.io/etcd/server/v3)")
	check("ETCD_IMAGE_TAG", src.kubeadm["DefaultEtcdVersion"], "kubeadm's DefaultEtcdVersion")
	if etcd, _, _ := strings.Cut(src.kubeadm["DefaultEtcdVersion"], "-"); "v"+etcd != mk["ETCD_VERSION"] {
		problems = append(problems, fmt.Sprintf("ETCD_VERSION=%s (go.mod), but kubeadm runs etcd %s (DefaultEtcdVersion)", mk["ETCD_VERSION"], etcd))
	}
	check("COREDNS_VERSION", src.kubeadm["CoreDNSVersion"], "kubeadm's CoreDNSVersion")
	check("PAUSE_VERSION", src.kubeadm["PauseVersion"], "kubeadm's PauseVersion")
	check("CNI_VERSION", src.kicbaseCNI, "minikube's deploy/kicbase/Dockerfile (CNI_PLUGINS_VERSION)")
	check("CRICTL_VERSION", "v"+src.dependencies["crictl"], `build/dependencies.yaml ("crictl")`)
	check("RUNC_VERSION", src.runc, "containerd's script/setup/runc-version")
	check("MINIKUBE_VERSION", src.minikubeGoMod, "chapters/machinery/lab/minikube/go.mod (k8s.io/minikube)")
	check("STORAGE_PROVISIONER_VERSION", src.storageProvisionerTag, "minikube's Makefile (STORAGE_PROVISIONER_TAG)")
	check("BUILDKIT_VERSION", src.buildkitGoMod, "chapters/machinery/lab/buildkit/go.mod (github.com/moby/buildkit)")
	check("BUILDKIT_VERSION", src.kicbaseBuildkit, "minikube's deploy/kicbase/Dockerfile (BUILDKIT_VERSION)")

	supported := false
	for _, release := range strings.Split(src.containerdReleases, ",") {
		min := "v" + strings.TrimSuffix(strings.TrimSpace(release), "+")
		if semver.IsValid(min) && semver.MajorMinor(min) == semver.MajorMinor(mk["CONTAINERD_VERSION"]) &&
			semver.Compare(mk["CONTAINERD_VERSION"], min) >= 0 {
			supported = true
		}
	}
	if !supported {
		problems = append(problems, fmt.Sprintf("CONTAINERD_VERSION=%s, but containerd's RELEASES.md lists %q for kubernetes %s",
			mk["CONTAINERD_VERSION"], src.containerdReleases, semver.MajorMinor(mk["K8S_VERSION"])))
	}
	return problems
}

// moduleDir is a module's directory in the module cache (downloaded by the go command if needed).
func moduleDir(t *testing.T, module, version string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	require.NoError(t, err, "go mod download %s@%s", module, version)
	var info struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &info))
	return info.Dir
}

// minikubeDir is minikube's module at version in the module cache. The module is not a
// requirement of this module but of chapters/machinery/lab/minikube, so it is downloaded from there when
// missing: the module proxy serves exact versions of minikube (its version list it refuses), and
// chapters/machinery/lab/minikube/go.sum holds its checksum.
func minikubeDir(t *testing.T, version string) string {
	t.Helper()
	require.NotEmpty(t, version, "make node-versions prints MINIKUBE_VERSION")
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err, "go env GOMODCACHE")
	escapedPath, err := module.EscapePath("k8s.io/minikube")
	require.NoError(t, err)
	escapedVersion, err := module.EscapeVersion(version)
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), escapedPath+"@"+escapedVersion)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return dir
	}
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/minikube@"+version)
	cmd.Dir = filepath.Join(repoRoot, "chapters/machinery/lab/minikube")
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GONOSUMDB=k8s.io/minikube")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	require.NoError(t, err, "go mod download k8s.io/minikube@%s: %s%s", version, out, stderr.String())
	var info struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &info))
	require.NotEmpty(t, info.Dir, "go mod download k8s.io/minikube@%s: %s", version, out)
	return info.Dir
}

// requiredVersion is the version of module that the go.mod file requires directly.
func requiredVersion(t *testing.T, goMod, module string) string {
	t.Helper()
	data, err := os.ReadFile(goMod)
	require.NoError(t, err)
	f, err := modfile.Parse(goMod, data, nil)
	require.NoError(t, err)
	for _, r := range f.Require {
		if r.Mod.Path == module && !r.Indirect {
			return r.Mod.Version
		}
	}
	return ""
}

// submatch is the first group of re in the file, "" when re does not match.
func submatch(t *testing.T, file string, re *regexp.Regexp) string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	if m := re.FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return ""
}

var (
	// storageProvisionerTag is the line of minikube's Makefile: STORAGE_PROVISIONER_TAG ?= v5.
	storageProvisionerTag = regexp.MustCompile(`(?m)^STORAGE_PROVISIONER_TAG\s*\??=\s*(\S+)\s*$`)
	// kicbaseBuildkit is the line of minikube's deploy/kicbase/Dockerfile: ARG BUILDKIT_VERSION="v0.26.3".
	kicbaseBuildkit = regexp.MustCompile(`(?m)^ARG\s+BUILDKIT_VERSION="?([^"\s]+)"?\s*$`)
	// kicbaseCNI is its line ARG CNI_PLUGINS_VERSION="v1.9.0".
	kicbaseCNI = regexp.MustCompile(`(?m)^ARG\s+CNI_PLUGINS_VERSION="?([^"\s]+)"?\s*$`)
)

// stringConstants returns the string constants of a Go file, parsed (not compiled: this package
// does not import kubernetes).
func stringConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					break
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					value, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					consts[name.Name] = value
				}
			}
		}
	}
	return consts
}

func readSources(t *testing.T, mk map[string]string) versionSources {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	require.NoError(t, err)
	gomod, err := modfile.Parse("go.mod", data, nil)
	require.NoError(t, err)
	src := versionSources{goMod: map[string]string{}, dependencies: map[string]string{}}
	for _, r := range gomod.Require {
		src.goMod[r.Mod.Path] = r.Mod.Version
	}

	kubernetes := moduleDir(t, "k8s.io/kubernetes", src.goMod["k8s.io/kubernetes"])
	src.kubeadm = stringConstants(t, filepath.Join(kubernetes, "cmd/kubeadm/app/constants/constants.go"))
	data, err = os.ReadFile(filepath.Join(kubernetes, "build/dependencies.yaml"))
	require.NoError(t, err)
	var deps struct {
		Dependencies []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"dependencies"`
	}
	require.NoError(t, yaml.Unmarshal(data, &deps))
	for _, d := range deps.Dependencies {
		src.dependencies[d.Name] = d.Version
	}

	containerd := moduleDir(t, "github.com/containerd/containerd/v2", mk["CONTAINERD_VERSION"])
	data, err = os.ReadFile(filepath.Join(containerd, "script/setup/runc-version"))
	require.NoError(t, err)
	src.runc = strings.TrimSpace(string(data))
	data, err = os.ReadFile(filepath.Join(containerd, "RELEASES.md"))
	require.NoError(t, err)
	// The "Kubernetes Support" table: | 1.37 | 2.4.0+, 2.3.0+ | v1 |
	row := regexp.MustCompile(`(?m)^\|\s*` + regexp.QuoteMeta(strings.TrimPrefix(semver.MajorMinor(src.goMod["k8s.io/kubernetes"]), "v")) + `\s*\|\s*([^|]*?)\s*\|`)
	if m := row.FindSubmatch(data); m != nil {
		src.containerdReleases = string(m[1])
	}

	src.minikubeGoMod = requiredVersion(t, filepath.Join(repoRoot, "chapters/machinery/lab/minikube/go.mod"), "k8s.io/minikube")
	src.buildkitGoMod = requiredVersion(t, filepath.Join(repoRoot, "chapters/machinery/lab/buildkit/go.mod"), "github.com/moby/buildkit")
	minikube := minikubeDir(t, mk["MINIKUBE_VERSION"])
	src.storageProvisionerTag = submatch(t, filepath.Join(minikube, "Makefile"), storageProvisionerTag)
	src.kicbaseBuildkit = submatch(t, filepath.Join(minikube, "deploy/kicbase/Dockerfile"), kicbaseBuildkit)
	src.kicbaseCNI = submatch(t, filepath.Join(minikube, "deploy/kicbase/Dockerfile"), kicbaseCNI)
	return src
}

// TestMakefileVersions holds the Makefile's node versions against their sources, so that a bump
// of go.mod (or of one version) cannot leave another behind unnoticed.
func TestMakefileVersions(t *testing.T) {
	mk := makefileVersions(t)
	src := readSources(t, mk)
	require.NotEmpty(t, src.kubeadm["CoreDNSVersion"], "kubeadm's constants.go has CoreDNSVersion")
	require.NotEmpty(t, src.kicbaseCNI, "minikube's deploy/kicbase/Dockerfile has ARG CNI_PLUGINS_VERSION")
	require.NotEmpty(t, src.containerdReleases, "containerd's RELEASES.md has a row for this kubernetes minor")
	require.NotEmpty(t, src.minikubeGoMod, "chapters/machinery/lab/minikube/go.mod requires k8s.io/minikube")
	require.NotEmpty(t, src.buildkitGoMod, "chapters/machinery/lab/buildkit/go.mod requires github.com/moby/buildkit")
	require.NotEmpty(t, src.storageProvisionerTag, "minikube's Makefile sets STORAGE_PROVISIONER_TAG")
	require.NotEmpty(t, src.kicbaseBuildkit, "minikube's deploy/kicbase/Dockerfile has ARG BUILDKIT_VERSION")
	t.Logf("make node-versions: %v", mk)
	assert.Empty(t, versionProblems(mk, src))
}

// TestSpecsAreWhatKubeadmAsksFor compares Specs with what the node is asked for, for the
// Makefile's versions: the first seven with what the real kubeadm, built by make
// node-kubernetes, prints; the eighth with the storage-provisioner image minikube's source names.
func TestSpecsAreWhatKubeadmAsksFor(t *testing.T) {
	mk := makefileVersions(t)
	specs := Specs(Versions{
		Kubernetes: mk["K8S_VERSION"], Etcd: mk["ETCD_IMAGE_TAG"], CoreDNS: mk["COREDNS_VERSION"], Pause: mk["PAUSE_VERSION"],
		StorageProvisioner: mk["STORAGE_PROVISIONER_VERSION"],
	})
	require.Len(t, specs, 8, "kubeadm's seven images, then minikube's storage-provisioner")

	t.Run("kubeadm config images list", func(t *testing.T) {
		kubeadm, err := filepath.Abs(filepath.Join(repoRoot, ".bin/node/bin/kubeadm"))
		require.NoError(t, err)
		if _, err := os.Stat(kubeadm); err != nil {
			tier.Unavailable(t, "node", fmt.Errorf("kubeadm is not built (make node-kubernetes): %w", err))
		}
		out, err := exec.Command(kubeadm, "version", "-o", "short").Output()
		require.NoError(t, err)
		if got := strings.TrimSpace(string(out)); got != mk["K8S_VERSION"] {
			tier.Unavailable(t, "node", errors.New(kubeadm+" is "+got+", not go.mod's "+mk["K8S_VERSION"]+" (make node-kubernetes)"))
		}

		cmd := exec.Command(kubeadm, "config", "images", "list", "--kubernetes-version", mk["K8S_VERSION"])
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err = cmd.Output()
		require.NoError(t, err, "kubeadm config images list: %s", stderr.String())

		var refs []string
		for _, spec := range specs[:7] {
			refs = append(refs, spec.Ref)
		}
		assert.Equal(t, strings.Fields(string(out)), refs, "kubeadm's images, in kubeadm's order")
	})

	t.Run("minikube's storage-provisioner", func(t *testing.T) {
		minikube := minikubeDir(t, mk["MINIKUBE_VERSION"])
		spec := specs[7]
		assert.Equal(t, minikubeStorageProvisionerImage(t, minikube), spec.Ref)
		// The image minikube builds: deploy/storage-provisioner/Dockerfile copies the binary to
		// one path, which the addon's manifest runs as its command.
		dest := submatch(t, filepath.Join(minikube, "deploy/storage-provisioner/Dockerfile"), regexp.MustCompile(`(?m)^COPY\s+\S+\s+(\S+)\s*$`))
		assert.Equal(t, dest, spec.Path, "deploy/storage-provisioner/Dockerfile's COPY")
		command := submatch(t, filepath.Join(minikube, "deploy/addons/storage-provisioner/storage-provisioner.yaml.tmpl"),
			regexp.MustCompile(`(?m)^\s*command:\s*\["([^"]+)"\]`))
		assert.Equal(t, []string{command}, spec.Entrypoint, "the addon's command")
	})
}

// minikubeStorageProvisionerImage is the storage-provisioner image minikube's binary asks for
// with the default mirror: pkg/minikube/bootstrapper/images/images.go (storageProvisioner) joins
// the mirror "gcr.io" and "k8s-minikube/storage-provisioner:" + the version its Makefile stamps
// into the binary (-X …/pkg/version.storageProvisionerVersion=$(STORAGE_PROVISIONER_TAG)).
func minikubeStorageProvisionerImage(t *testing.T, minikube string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(minikube, "pkg/minikube/bootstrapper/images/images.go"))
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(data), "\nfunc storageProvisioner(")
	require.True(t, ok, "images.go has func storageProvisioner")
	body, _, _ = strings.Cut(body, "\n}\n")
	require.Contains(t, body, "cv := version.GetStorageProvisionerVersion()")
	name := regexp.MustCompile(`in := "([^"]+)" \+ cv\n`).FindStringSubmatch(body)
	require.NotNil(t, name, "storageProvisioner names the image: %s", body)
	mirror := regexp.MustCompile(`case "":\s*mirror = "([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, mirror, "storageProvisioner has a default mirror: %s", body)

	makefile := filepath.Join(minikube, "Makefile")
	data, err = os.ReadFile(makefile)
	require.NoError(t, err)
	require.Contains(t, string(data), "-X k8s.io/minikube/pkg/version.storageProvisionerVersion=$(STORAGE_PROVISIONER_TAG)")
	tag := submatch(t, makefile, storageProvisionerTag)
	require.NotEmpty(t, tag, "minikube's Makefile sets STORAGE_PROVISIONER_TAG")
	return path.Join(mirror[1], name[1]+tag)
}

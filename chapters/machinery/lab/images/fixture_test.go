package images

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// fixture is a small world for Build: fake binaries (tiny ELF programs made by the C compiler,
// dynamic like our cgo-linked commands, or static like pause and storage-provisioner) and a fake Debian root with the
// layout of bookworm's (merged /usr, the loader reached through /lib64, iptables through
// /etc/alternatives, xtables extensions loaded by dlopen).
type fixture struct {
	binaries, root string
	// interp is the loader the C compiler's programs ask for, triplet the multiarch directory.
	interp, triplet string
}

// cc compiles C source into out with the C compiler; args go last (libraries to link).
func cc(t *testing.T, out, source string, args ...string) {
	t.Helper()
	src := out + ".c"
	require.NoError(t, os.WriteFile(src, []byte(source), 0o644))
	cmd := exec.Command("cc", append([]string{"-o", out, src}, args...)...)
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "cc: %s", output)
	require.NoError(t, os.Remove(src))
}

// sharedLib builds a shared library with the given soname that needs the libraries given as
// files (their sonames become its DT_NEEDED), and no libc: none of the fake libraries is ever run.
func sharedLib(t *testing.T, out, soname string, needs ...string) {
	t.Helper()
	args := []string{"-shared", "-nostdlib", "-fPIC", "-Wl,-soname," + soname, "-Wl,--no-as-needed"}
	cc(t, out, "int "+strings.NewReplacer(".", "_", "-", "_").Replace(soname)+";\n", append(args, needs...)...)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, err := exec.LookPath("cc")
	tier.Require(t, "node", err) // the node's runc is built with cgo: a C compiler is there
	dir := t.TempDir()
	f := &fixture{binaries: filepath.Join(dir, "binaries"), root: filepath.Join(dir, "root")}
	require.NoError(t, os.MkdirAll(f.binaries, 0o755))

	// A dynamic program: the compiler's default loader and libc.
	program := filepath.Join(dir, "program")
	cc(t, program, "int main(void) { return 0; }\n")
	exe, err := elf.Open(program)
	require.NoError(t, err)
	for _, p := range exe.Progs {
		if p.Type == elf.PT_INTERP {
			data, err := io.ReadAll(p.Open())
			require.NoError(t, err)
			f.interp = strings.TrimRight(string(data), "\x00")
		}
	}
	dirs, err := libraryDirs(exe.Machine)
	require.NoError(t, exe.Close())
	require.NoError(t, err)
	require.NotEmpty(t, f.interp, "the C compiler's programs have a loader")
	f.triplet = strings.TrimPrefix(dirs[0], "/lib/")

	// The root: merged /usr as debootstrap makes it for bookworm.
	for _, d := range []string{"usr/lib/" + f.triplet + "/xtables", "usr/lib64", "usr/sbin", "usr/bin", "etc/alternatives"} {
		require.NoError(t, os.MkdirAll(filepath.Join(f.root, d), 0o755))
	}
	for link, target := range map[string]string{"lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin", "bin": "usr/bin"} {
		require.NoError(t, os.Symlink(target, filepath.Join(f.root, link)))
	}
	libdir := filepath.Join(f.root, "usr/lib", f.triplet)
	// The loader lives in the multiarch directory; its PT_INTERP path is an absolute link to it.
	loaderName := filepath.Base(f.interp)
	sharedLib(t, filepath.Join(libdir, loaderName), loaderName)
	interpDir := filepath.Join(f.root, filepath.Dir(f.interp))
	if _, err := os.Lstat(filepath.Join(f.root, f.interp)); os.IsNotExist(err) {
		require.NoError(t, os.MkdirAll(interpDir, 0o755))
		require.NoError(t, os.Symlink("/lib/"+f.triplet+"/"+loaderName, filepath.Join(f.root, f.interp)))
	}
	sharedLib(t, filepath.Join(libdir, "libc.so.6"), "libc.so.6", filepath.Join(libdir, loaderName))
	sharedLib(t, filepath.Join(libdir, "libmnl.so.0"), "libmnl.so.0", filepath.Join(libdir, "libc.so.6"))
	sharedLib(t, filepath.Join(libdir, "libxtables.so.12"), "libxtables.so.12", filepath.Join(libdir, "libc.so.6"))
	sharedLib(t, filepath.Join(libdir, "libnftables.so.1"), "libnftables.so.1", filepath.Join(libdir, "libmnl.so.0"), filepath.Join(libdir, "libc.so.6"))
	sharedLib(t, filepath.Join(libdir, "xtables", "libxt_comment.so"), "libxt_comment.so", filepath.Join(libdir, "libxtables.so.12"))

	// iptables as Debian installs it: multi-call binaries, the backends' names linked to them,
	// the plain names through /etc/alternatives (which points at nft).
	sbin := filepath.Join(f.root, "usr/sbin")
	for _, multi := range []string{"xtables-nft-multi", "xtables-legacy-multi"} {
		cc(t, filepath.Join(sbin, multi), "int main(void) { return 0; }\n", "-Wl,--no-as-needed", filepath.Join(libdir, "libxtables.so.12"))
	}
	cc(t, filepath.Join(sbin, "nft"), "int main(void) { return 0; }\n", "-Wl,--no-as-needed", filepath.Join(libdir, "libnftables.so.1"))
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			name := family + suffix
			require.NoError(t, os.Symlink("xtables-nft-multi", filepath.Join(sbin, family+"-nft"+suffix)))
			require.NoError(t, os.Symlink("xtables-legacy-multi", filepath.Join(sbin, family+"-legacy"+suffix)))
			require.NoError(t, os.Symlink("/usr/sbin/"+family+"-nft"+suffix, filepath.Join(f.root, "etc/alternatives", name)))
			require.NoError(t, os.Symlink("/etc/alternatives/"+name, filepath.Join(sbin, name)))
		}
	}

	// The binaries: dynamic ones like our cgo builds, static ones like pause.
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd"} {
		data, err := os.ReadFile(program)
		require.NoError(t, err)
		// Each binary differs (a trailing name), as real ones do.
		require.NoError(t, os.WriteFile(filepath.Join(f.binaries, name), append(data, name...), 0o755))
	}
	// Static like the real ones: pause, CoreDNS, and minikube's storage-provisioner (its Makefile's
	// PROVISIONER_LDFLAGS link it with -extldflags '-static').
	for _, name := range []string{"coredns", "pause", "storage-provisioner"} {
		cc(t, filepath.Join(f.binaries, name), fmt.Sprintf("void _start(void) { for (;;); } /* %s */\n", name), "-static", "-nostdlib")
	}
	return f
}

func (f *fixture) options(out string) Options {
	return Options{
		Binaries: f.binaries, LibraryRoot: f.root, Out: out,
		Versions: Versions{Kubernetes: "v1.37.2", Etcd: "3.7.0-0", CoreDNS: "v1.14.6", Pause: "3.10.2", StorageProvisioner: "v5"},
	}
}

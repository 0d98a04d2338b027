//go:build unix

package kubeletclient

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinks is as many symbolic links as a path may go through (Linux's MAXSYMLINKS).
const maxSymlinks = 40

// CheckPodsAPISocket vouches for a Pods API socket before the client connects: the socket takes
// no credentials either way, so what answers there is believed, and whoever could put a socket of
// their own in the kubelet's place would be. It walks the path from / as the kernel resolves it,
// each symbolic link included, and holds every directory and the socket to this: owned by root or
// by this process's user, and no directory writable by anyone else — unless it is sticky (/tmp),
// where others may add entries but not replace one of ours, whose owner is checked next. The last
// entry must be a socket. A directory it cannot read, or an entry that is not there, is returned
// as the error the system gave (fs.ErrPermission, fs.ErrNotExist), its path named.
func CheckPodsAPISocket(path string) error {
	_, err := trustedSocket(path)
	return err
}

// trustedSocket is CheckPodsAPISocket, and the path it checked with every link resolved: the
// client connects there, so that no link can change between the check and the connection.
func trustedSocket(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	me := uint32(os.Getuid())
	trusted := func(p string, st *syscall.Stat_t) error {
		if st.Uid != 0 && st.Uid != me {
			return &PodsAPIError{Socket: path, Refused: true,
				Reason: fmt.Sprintf("%s belongs to the user %d, neither root nor you (%d)", p, st.Uid, me),
				Fix:    "A kubelet's socket and its directories are root's (yours for a kubelet you run yourself); whoever owns " + p + " could have put any socket there"}
		}
		return nil
	}
	lstat := func(p string) (fs.FileInfo, *syscall.Stat_t, error) {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, nil, err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil, nil, fmt.Errorf("%s: no owner to check", p)
		}
		return fi, st, trusted(p, st)
	}
	dir := "/"
	fi, _, err := lstat(dir)
	if err != nil {
		return "", err
	}
	if err := writableByOthers(path, dir, fi.Mode()); err != nil {
		return "", err
	}
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(abs), "/"), "/")
	links := 0
	for len(rest) > 0 {
		next := filepath.Join(dir, rest[0])
		rest = rest[1:]
		fi, _, err := lstat(next)
		if err != nil {
			return "", err
		}
		switch mode := fi.Mode(); {
		case mode&fs.ModeSymlink != 0:
			// Owned by root or by us, in a directory only we can change: it points where we
			// (or root) said. Follow it, from / or from its directory, and check that way too.
			if links++; links > maxSymlinks {
				return "", fmt.Errorf("%s: too many levels of symbolic links", path)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			rest = append(strings.Split(strings.TrimPrefix(filepath.Clean(target), "/"), "/"), rest...)
			dir = "/"
		case len(rest) == 0 && mode&fs.ModeSocket == 0:
			return "", &PodsAPIError{Socket: path, Refused: true, Reason: next + " is not a socket (" + mode.String() + ")",
				Fix: "The kubelet's Pods API is a unix socket, <root-dir>/pods-api/pods-api.sock"}
		case len(rest) == 0:
			return next, nil
		case !mode.IsDir():
			return "", fmt.Errorf("%s: %w (not a directory)", next, fs.ErrNotExist)
		default:
			if err := writableByOthers(path, next, mode); err != nil {
				return "", err
			}
			dir = next
		}
	}
	return dir, nil // only for "/", which is no socket: refused above
}

// writableByOthers refuses a directory its group or everyone may write, unless it is sticky.
func writableByOthers(socket, dir string, mode fs.FileMode) error {
	if mode.Perm()&0o022 == 0 || mode&fs.ModeSticky != 0 {
		return nil
	}
	return &PodsAPIError{Socket: socket, Refused: true,
		Reason: fmt.Sprintf("%s is writable by other users (%s)", dir, mode.String()),
		Fix:    "Whoever can write there could put a socket of their own in the kubelet's place. The kubelet makes its directories 0750, root's: chmod go-w " + dir}
}

//go:build unix

package kubeletlog

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func redirectStderr(f *os.File) (*os.File, error) {
	saved, err := unix.Dup(int(os.Stderr.Fd()))
	if err != nil {
		return nil, fmt.Errorf("keep standard error: %w", err)
	}
	unix.CloseOnExec(saved)
	if err := unix.Dup2(int(f.Fd()), int(os.Stderr.Fd())); err != nil {
		_ = unix.Close(saved)
		return nil, fmt.Errorf("point standard error at the log: %w", err)
	}
	return os.NewFile(uintptr(saved), "/dev/stderr"), nil
}

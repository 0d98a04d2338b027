// Package terminal opens pseudo-terminals for tests that run a command as a reader does at a
// terminal: typing to a program's prompt, or pressing Ctrl-C (typing "\x03", which the terminal
// turns into SIGINT for its foreground process group, or passes on to a program that reads it raw,
// as `docker run --tty` does).
package terminal

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Open opens a pseudo-terminal: the side a test types into and reads from, and the side the
// command gets as its terminal (with SysProcAttr Setsid and Setctty).
func Open() (typist, command *os.File, err error) {
	typist, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(typist.Fd()), unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		typist.Close()
		return nil, nil, fmt.Errorf("unlock the terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(int(typist.Fd()), unix.TIOCGPTN) // ptsname
	if err != nil {
		typist.Close()
		return nil, nil, fmt.Errorf("name the terminal: %w", err)
	}
	command, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		typist.Close()
		return nil, nil, err
	}
	return typist, command, nil
}

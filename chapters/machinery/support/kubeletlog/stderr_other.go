//go:build !unix

package kubeletlog

import "os"

// redirectStderr leaves standard error alone where file descriptors cannot be duplicated.
func redirectStderr(*os.File) (*os.File, error) { return os.Stderr, nil }

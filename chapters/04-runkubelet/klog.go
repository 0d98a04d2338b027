package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/klog/v2"
)

// redirectKlog sends klog's output to path ("-" keeps stderr; "" makes a temporary file that
// the returned function removes). It returns the file's name for the reader.
func redirectKlog(path string) (string, func(), error) {
	if path == "-" {
		return "stderr", func() {}, nil
	}
	var f *os.File
	var err error
	temporary := path == ""
	if temporary {
		f, err = os.CreateTemp("", "kubelet-walkthrough-*.log")
	} else {
		f, err = os.Create(path)
	}
	if err != nil {
		return "", nil, fmt.Errorf("kubelet log: %w", err)
	}
	setStderrThreshold("FATAL") // errors too go to the file, not only to stderr
	klog.LogToStderr(false)
	klog.SetOutput(f)
	return f.Name(), func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
		setStderrThreshold("ERROR")
		_ = f.Close()
		if temporary {
			_ = os.Remove(f.Name())
		}
	}, nil
}

// setStderrThreshold sets klog's -stderrthreshold, which has no setter function.
func setStderrThreshold(level string) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("stderrthreshold", level)
}

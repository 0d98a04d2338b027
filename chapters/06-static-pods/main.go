// Chapter 06 is static pods: how the kubelet turns a directory of manifests into pods, and how
// its file source and PodConfig turn each change to that directory into pod updates
// (pkg/kubelet/config/file.go#L62-L69 (func NewSourceFile), pkg/kubelet/config/config.go#L146-L179 (func (s *podStorage) Merge)).
//
// The toy's own source, package staticpods, does the same in fewer lines and is proved equal to
// the real one by differential tests. This chapter runs it:
//
//	go run ./chapters/06-static-pods load --manifests examples/static-pods
//	go run ./chapters/06-static-pods watch --manifests examples/static-pods
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewStaticPodsCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}

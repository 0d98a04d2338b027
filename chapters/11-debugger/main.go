// Chapter 11 stops the real kubelet at every step of its startup chain in Delve, the Go
// debugger: what it prints, how to run it and how to do it by hand is in README.md; what the
// debugger shows about the kubelet is in notes/11-debugger.md.
//
// Run it:
//
//	go run ./chapters/11-debugger
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewDebuggerCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}

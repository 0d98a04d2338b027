// The runc shim's program: runc's arguments in, runc run with a spec this machine can give
// (see package runcshim).
package main

import "github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/runcshim"

func main() { runcshim.Main() }

// benchsummary prints what `make bench` ends with: every ratio the side-by-side benchmarks
// reported (the "x-" metrics of package benchratio), computed from each side's runs, against the
// goals of notes/measurements.md, on one screen.
//
//	go test -run '^$' -bench . -count 6 ./... | tee .bin/bench.txt
//	go run ./chapters/machinery/testsupport/benchratio/benchsummary .bin/bench.txt
package main

import (
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
)

func main() {
	command := benchratio.NewSummaryCommand()
	code := program.Run(command)
	os.Exit(code)
}

// benchsummary prints what `make bench` ends with: every ratio the side-by-side benchmarks
// reported (the "x-" metrics of package benchratio), computed from each side's runs, against the
// goals of notes/measurements.md, on one screen.
//
//	go test -run '^$' -bench . -count 6 ./... | tee .bin/bench.txt
//	go run ./chapters/testsupport/benchratio/benchsummary .bin/bench.txt
package main

import (
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/testsupport/benchratio"
)

func main() {
	os.Exit(program.Run(benchratio.NewSummaryCommand()))
}

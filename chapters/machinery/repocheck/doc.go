// Package repocheck holds the checks that keep the repository together — tests, run by
// `make test` (most of them by `make verify`):
//
//   - readme_test.go: every chapter README's commands run for real, their output compared with
//     the README's samples (TestChapterREADMEs; `make update-golden` rewrites the samples, which
//     is `go test ./chapters/machinery/repocheck -run TestChapterREADMEs -update`), with the normalisers
//     each pinned by a case they must leave alone;
//   - makerun_test.go: the README's first command, `make run`, run as a reader runs it;
//   - bad_input_test.go: every row of .ci/bad-input.md, a command run with a bad input, refused at
//     once with what the row says, nothing left behind and the reader's file unchanged;
//   - deps_test.go: the import rules of the layout the README describes, the pinned staging
//     modules, the client's light dependency graph;
//   - layout_test.go: the README's layout section and the tree agree;
//   - linkname_test.go: every //go:linkname declaration against the pinned source;
//   - makefile_test.go, platforms_test.go, prerequisites_test.go: the scripts of .ci the Makefile
//     runs, where each chapter runs, make test's prerequisites;
//   - rootdirs_test.go: every package whose tests can start a kubelet removes what its stopped
//     kubelets' pod workers leave in TMPDIR (nothing left behind);
//   - skips_test.go: every skip goes through chapters/machinery/testsupport/tier (which fails under CI=true
//     what CI promises), but for the few listed, each saying why it is not a tier's: a bare skip
//     would pass in CI what CI promises to run.
//
// Two commands live here too: typecheck (chapters/machinery/repocheck/typecheck), which type-checks the
// chapters that run on macOS and Windows for those platforms, from source (make verify-platforms), and
// nextrelease (chapters/machinery/repocheck/nextrelease), which looks at another kubernetes release in a
// copy of the module and writes what it found into one report (make next K8S=v1.38.0-beta.0; not part
// of make test, which runs its test on a made-up release).
//
// The notes' citations of the kubelet's source are checked by the notes' own checks
// (chapters/machinery/notescheck/citations.go, `make verify-notes`).
package repocheck

// Package testsupport is not a lesson either: its sub-packages are what only tests use. Each
// imports no chapter.
//
//   - tier: a test that cannot run here skips saying why, or fails under CI=true;
//   - reviewserver: a TokenReview and SubjectAccessReview server, for kubelets with webhook auth;
//   - fakecluster: a fake apiserver and fake kubelets that record what reaches them (chapter 11);
//   - journeynote: chapter 07's printed journey held to the steps notes/07-syncloop.md teaches;
//   - benchratio: side-by-side benchmarks' ratios, and the `make bench` summary (benchsummary);
//   - syncbuf: a buffer a running command writes while a test reads it;
//   - satoken: a ServiceAccount's token from the TokenRequest API, for a test to present to a kubelet;
//   - nobody: a test run again as the user nobody when the tests run as root, for what root's rights would pass.
//   - modproxy: a Go module proxy in a directory, for the go command on made-up modules.
package testsupport

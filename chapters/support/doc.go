// Package support is not a lesson: its sub-packages hold what several chapters use but none of
// them teaches — the kubectl-style pod table (podtable), a test certificate authority (pki),
// klog capture (kubeletlog), a TokenReview/SubjectAccessReview server for tests
// (reviewserver) and the side-by-side benchmarks' ratios (benchratio). A chapter imports earlier chapters' packages and these, never a later chapter.
package support

// Package support is not a lesson: its sub-packages hold what several chapters use at run time
// but none of them teaches. Each imports no chapter.
//
//   - podtable: pods printed as `kubectl get pods` lays them out (chapters 04, 05, 08, 11);
//   - kubeletlog: klog, the kubelet's process-wide logger, pointed at a file or a terminal, and
//     what a program does when the kubelet ends it with os.Exit(1) (AtExit, LastWords);
//   - program: a command run as kubectl reports errors ("error: …", exit 1);
//   - pki: a throwaway certificate authority for the walkthrough's kubelets and apiservers;
//   - netns: a program run again in a private network namespace (chapter 08's node address);
//   - relay: TCP connections joined (chapter 08 publishes its apiserver with it);
//   - kubeconfig: a cluster's kubeconfig merged into the reader's, and taken out again (chapter
//     08's --kubeconfig).
//
// What only tests use is in chapters/machinery/testsupport; the lab's machinery (real minikube and Docker,
// offline) in chapters/machinery/lab.
package support

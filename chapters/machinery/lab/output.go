package lab

import (
	"regexp"
	"strings"
)

// What minikube prints in the lab that it does not print on a reader's laptop, each with why:
// the lab's settings (its environment, which minikube echoes), running as root (a lab without
// Options.Attendee; the rehearsal's runs as the attendee, and minikube prints none of it there),
// and being offline. The warning of `--force` is not one: every start readers type carries it. Nor is
// "Using Docker driver with root privileges": minikube prints it for any Docker that is not
// rootless (cmd/minikube/cmd/start_flags.go), whoever runs minikube. ReaderView removes these
// lines, and only these, from what a command printed, so that a README or the workshop shows what
// readers see; everything else is compared as printed.
var labOnly = []struct {
	why  string
	line *regexp.Regexp
}{
	{"minikube echoes the MINIKUBE_* settings and KUBECONFIG it finds in its environment: the lab's (Settings)",
		regexp.MustCompile(`^  - (MINIKUBE_[A-Z_]+|KUBECONFIG)=.*$`)},
	{"a lab without Options.Attendee runs minikube as root (readers are a user in the docker group; --force lets root go on)",
		regexp.MustCompile(`^\* (The "docker" driver should not be used with root privileges\. .*|If you are running minikube within a VM, consider using --driver=none:|  https://minikube\.sigs\.k8s\.io/docs/reference/drivers/none/|Tip: To remove this root owned cluster, run: sudo minikube delete.*)$`)},
	{"the lab is offline: minikube's check of registry.k8s.io fails",
		regexp.MustCompile(`^(! Failing to connect to https://registry\.k8s\.io/ from both inside the minikube container and host machine|\* To pull new external images, you may need to configure a proxy: https://minikube\.sigs\.k8s\.io/docs/reference/networking/proxy/)$`)},
}

// ReaderView removes from a command's output the lines minikube prints only in the lab.
func ReaderView(output string) string {
	lines := strings.SplitAfter(output, "\n")
	kept := lines[:0]
	for _, line := range lines {
		text := strings.TrimRight(line, "\r\n")
		drop := false
		for _, l := range labOnly {
			if l.line.MatchString(text) {
				drop = true
				break
			}
		}
		if !drop {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "")
}

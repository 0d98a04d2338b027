package rehearsal

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// run is a command as the rehearsal ran it, and what it printed.
type run struct {
	cmd     Command
	out     string // what a reader sees (lab.ReaderView)
	printed string // as printed in the lab
	failed  bool
}

// runs are an exercise's commands so far, for the answers: each answer is read from what a
// command printed, as an attendee reads it off the screen — never a constant.
type runs []run

// of returns the output lines of the nth (0-based; -1: the last) command whose text holds what.
func (rs runs) of(what string, nth int) ([]string, error) {
	var found []run
	for _, r := range rs {
		if strings.Contains(r.cmd.Text, what) {
			found = append(found, r)
		}
	}
	if nth < 0 {
		nth += len(found)
	}
	if nth < 0 || nth >= len(found) {
		return nil, fmt.Errorf("no command %d holding %q ran (%d did)", nth, what, len(found))
	}
	return Lines(found[nth].out), nil
}

// line returns the first output line of a command that matches re, and re's first group.
func (rs runs) line(what string, nth int, re string) (string, error) {
	lines, err := rs.of(what, nth)
	if err != nil {
		return "", err
	}
	exp := regexp.MustCompile(re)
	for _, l := range lines {
		if m := exp.FindStringSubmatch(l); m != nil {
			if len(m) > 1 {
				return m[1], nil
			}
			return m[0], nil
		}
	}
	return "", fmt.Errorf("the output of the command holding %q has no line like %s:\n%s", what, re, strings.Join(lines, "\n"))
}

// after returns the output line after the one that matches re (openssl prints the names of
// subjectAltName on the next line).
func (rs runs) after(what string, nth int, re string) (string, error) {
	lines, err := rs.of(what, nth)
	if err != nil {
		return "", err
	}
	exp := regexp.MustCompile(re)
	for i, l := range lines {
		if exp.MatchString(l) && i+1 < len(lines) {
			return strings.TrimSpace(lines[i+1]), nil
		}
	}
	return "", fmt.Errorf("no line like %s, followed by another, in:\n%s", re, strings.Join(lines, "\n"))
}

// errText is the err="…" of a kubelet log line, as journald shows it (quotes escaped).
const errText = `err="((?:[^"\\]|\\.)*)"`

// answersFor writes the answers a correct attendee would write after exercise n's commands,
// from what those commands printed: file name → content.
func answersFor(n int, rs runs) (map[string]string, error) {
	var a map[string]any
	var err error
	must := func(s string, e error) string {
		if err == nil && e != nil {
			err = e
		}
		return s
	}
	switch n {
	case 1:
		path, e := rs.line("configz", 0, `^(/\S*)$`)
		must(path, e)
		lines, e := rs.of("custom-columns", 0)
		must("", e)
		var mirrors []string
		for _, l := range lines {
			if f := strings.Fields(l); len(f) == 3 && f[0] != "NAMESPACE" && f[2] != "<none>" {
				mirrors = append(mirrors, f[0]+"/"+f[1])
			}
		}
		a = map[string]any{"staticPodPath": path, "mirrorPods": mirrors}
	case 2:
		// Three times "HASH UID": before the edit, after it, after the mirror's deletion.
		var hash, uid [3]string
		for i := range 3 {
			l := must(rs.line("config\\.hash", i, `^[0-9a-f]{32} [0-9a-f-]{36}$`))
			if f := strings.Fields(l); len(f) == 2 {
				hash[i], uid[i] = f[0], f[1]
			}
		}
		a = map[string]any{"hashBefore": hash[0], "hashAfter": hash[1], "mirrorUIDBefore": uid[1], "mirrorUIDAfter": uid[2]}
	case 3:
		reason := must(rs.line("journalctl", 0, `"Could not process manifest file" `+errText))
		return map[string]string{"03-reason.txt": reason + "\n"}, err
	case 4:
		a = map[string]any{
			"error": must(rs.line("journalctl -u kubelet -f", 0, `"command failed" `+errText)),
			// The second reading, once the Node was NotReady: the Lease had not moved.
			"leaseRenewTime": must(rs.line("get lease minikube", 1, `^(\d{4}-\d\d-\d\dT\S+)$`)),
		}
	case 5:
		v, e := strconv.Atoi(must(rs.line("kubeletconfig.logging.verbosity", -1, `^(\d+)$`)))
		must("", e)
		a = map[string]any{"verbosity": v, "logLine": must(rs.line("SyncPod enter", 0, `^.*"SyncPod enter".*$`))}
	case 6:
		a = map[string]any{
			"error":           must(rs.line("crictl logs $(sudo crictl ps -a", 0, `^Error: .*$`)),
			"exitedContainer": must(rs.line("crictl ps -a --name kube-apiserver", 0, `^([0-9a-f]{12,})\s+\S+\s+.*\sExited\s`)),
		}
	case 7:
		var addresses []struct{ Address, Type string }
		var endpoints struct {
			KubeletEndpoint struct{ Port int }
		}
		lines, e := rs.of("daemonEndpoints", 0)
		must("", e)
		for _, l := range lines {
			if strings.HasPrefix(l, "[") {
				must("", json.Unmarshal([]byte(l), &addresses))
			} else if strings.HasPrefix(l, "{") {
				must("", json.Unmarshal([]byte(l), &endpoints))
			}
		}
		address := ""
		for _, ad := range addresses { // the client's first preferred type: InternalIP
			if ad.Type == "InternalIP" && address == "" {
				address = ad.Address
			}
		}
		// The way past the certificate the commands showed working: the certificate as its
		// own CA, checked by its name.
		fix := "insecure-skip-tls-verify"
		if l, _ := rs.line("https://minikube:10250/healthz", 0, `^Unauthorized$`); l != "" {
			fix = "kubelet-ca-file + kubelet-tls-server-name=Hostname"
		}
		a = map[string]any{
			"address": address, "port": endpoints.KubeletEndpoint.Port,
			"issuer": must(rs.line("openssl x509", 0, `^issuer=.*$`)),
			"sans":   must(rs.after("openssl x509", 0, `X509v3 Subject Alternative Name`)),
			"fix":    fix,
		}
	case 8:
		forbidden := must(rs.line("Authorization: Bearer", 0, `^Forbidden \(.*\)$`))
		sub := regexp.MustCompile(`subresource\(s\)=\[(\w+)`).FindStringSubmatch(forbidden)
		narrowest := ""
		if sub != nil { // the kubelet asks for the narrowest first
			narrowest = "nodes/" + sub[1]
		}
		before, e := strconv.Atoi(must(rs.line("Authorization: Bearer", 0, `^(\d{3})$`)))
		must("", e)
		after, e := strconv.Atoi(must(rs.line("Authorization: Bearer", 1, `^(\d{3})$`)))
		must("", e)
		a = map[string]any{"beforeRBAC": before, "afterRBAC": after, "forbidden": forbidden, "narrowest": narrowest}
	case 9:
		a = map[string]any{
			"csr":    must(rs.line("certificate approve", 0, `^certificatesigningrequest\.certificates\.k8s\.io/(\S+) approved$`)),
			"issuer": must(rs.line("kubelet-server-current.pem", 0, `^issuer=.*$`)),
			"sans":   must(rs.after("kubelet-server-current.pem", 0, `X509v3 Subject Alternative Name`)),
		}
	case 10:
		// The path is the one the first command asked for; the count, what jq said; what the
		// proxy needs, what the refusal named.
		path := regexp.MustCompile(`/api/v1/nodes/[^/ ]+/proxy/pods`).FindString(rs[0].cmd.Text)
		pods, e := strconv.Atoi(must(rs.line("proxy/pods", 0, `^(\d+)$`)))
		must("", e)
		a = map[string]any{"path": path, "pods": pods,
			"proxyNeeds": must(rs.line("--as=system:serviceaccount", 0, `cannot get resource "([^"]+)"`))}
	case 14:
		// The event that lasts (not the first ones, from before CoreDNS listened), the plugin its
		// log named, and the EndpointSlice's line before the fix (the first of the two).
		a = map[string]any{
			"event":          must(rs.line("reason=Unhealthy", 0, `\sUnhealthy\s+pod/dns\s+(Readiness probe failed: HTTP probe failed with statuscode: \d+)$`)),
			"notReady":       must(rs.line("logs dns", 0, `Plugins not ready: "([^"]+)"`)),
			"endpointBefore": must(rs.line("endpointslices", 0, `^(dns \S+ ready=false)$`)),
		}
	case 15:
		// The Ready condition as the second reading printed it (containerd stopped), and how long
		// after containerd's stop its lastTransitionTime is.
		down := regexp.MustCompile(`^False (\S+) (\S+) (.+)$`).FindStringSubmatch(must(rs.line("lastTransitionTime", 1, `^False .*$`)))
		stopped := must(rs.line("InactiveEnterTimestamp", 0, `^InactiveEnterTimestamp=(.+)$`))
		if down == nil {
			return nil, fmt.Errorf("no NotReady condition in the second reading of the Ready condition (%v)", err)
		}
		since, e := time.Parse(time.RFC3339, down[2])
		must("", e)
		stop, e := time.Parse("Mon 2006-01-02 15:04:05 MST", stopped)
		must("", e)
		a = map[string]any{"reason": down[1], "message": down[3], "notReadySince": down[2],
			"secondsToNotReady": int(since.Sub(stop).Round(time.Second).Seconds())}
	case 16:
		a, err = workerAnswers(rs)
	case 17:
		// The refusals of pods-reader, as each way printed them (the kubelet's from inside the node,
		// the path every machine takes); the verb, as the kubelet's names it.
		kubelet := must(rs.line("--via=kubelet --token-file pods-reader.token", 0, `(Forbidden \(user=.*\))$`))
		verb := regexp.MustCompile(`verb=(\w+)`).FindStringSubmatch(kubelet)
		if verb == nil {
			verb = []string{"", ""}
		}
		a = map[string]any{"kubeletRefused": kubelet, "verb": verb[1],
			"apiserverRefused": must(rs.line("--via=apiserver --token-file examples/workshop/answers/pods-reader.token", 0, `^error: (.*cannot get resource "nodes/proxy".*)$`)),
			"throughTheProxy":  must(rs.line("--via=apiserver --token-file examples/workshop/answers/proxy-getter.token", 0, `^error: (.*400 Bad Request.*)$`))}
	case 18:
		// Each pod's class, cgroup and score as the three listings printed them, by the pod's name.
		pods := map[string]any{}
		for _, name := range []string{"besteffort", "burstable", "guaranteed"} {
			score, e := strconv.Atoi(must(rs.line("oomScoreAdj", 0, `^`+name+` (-?\d+)$`)))
			must("", e)
			pods[name] = map[string]any{
				"qosClass":    must(rs.line("custom-columns", 0, `^`+name+`\s+(\S+)\s`)),
				"cgroup":      must(rs.line("cgroup_parent", 0, `^`+name+` (\S+)$`)),
				"oomScoreAdj": score,
			}
		}
		pods["cgroupDriver"] = must(rs.line("cgroupDriver", 0, `^(cgroupfs|systemd)$`))
		a = pods
	case 19:
		// The threshold in the kubelet's message, the first of the two pods its journal says it
		// evicted, the BestEffort pod's event, the condition's reason.
		a = map[string]any{
			"threshold":    must(rs.line("DisruptionTarget\")]}", 0, `Threshold quantity: ([^,\s]+),`)),
			"evictedFirst": must(rs.line("evicted successfully", 0, `pod is evicted successfully" pod="qos/(burstable|guaranteed)"`)),
			"besteffort":   must(rs.line("involvedObject.name=besteffort", 0, `^kubelet\s+(The node .*?)\s*$`)),
			"pressure":     must(rs.line("MemoryPressure", 0, `^True (\S+) `)),
		}
	case 20:
		// The waits, as the journal's lines gave them, in order; the BackOff event.
		lines, e := rs.of("restarting failed container=pause", 0)
		must("", e)
		var waits []string
		for _, l := range lines {
			if m := regexp.MustCompile(`^back-off (\S+) restarting failed container=pause`).FindStringSubmatch(l); m != nil {
				waits = append(waits, m[1])
			}
		}
		a = map[string]any{"backOffs": waits, "event": must(rs.line("reason=BackOff", 0, `^kubelet\s+(Back-off .*?)\s*$`))}
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(a)
	if err != nil {
		return nil, err
	}
	return map[string]string{answerFile(n): string(data)}, nil
}

// The answers of exercises 14 and 15 are read from the lines the rehearsal's commands printed
// (these, as minikube printed them): the event that lasts, not the first; the second reading of
// the Node's Ready condition, the one taken while containerd was stopped.
func TestAnswersReadFromOutput(t *testing.T) {
	ran := func(text, out string) run { return run{cmd: Command{Text: text}, out: out} }
	files, err := answersFor(14, runs{
		ran("kubectl -n probes get events --field-selector reason=Unhealthy -w", "LAST SEEN   TYPE      REASON      OBJECT    MESSAGE\n"+
			"4s          Warning   Unhealthy   pod/dns   Readiness probe failed: Get \"http://10.244.0.9:8181/ready\": dial tcp 10.244.0.9:8181: connect: connection refused\n"+
			"0s          Warning   Unhealthy   pod/dns   Readiness probe failed: HTTP probe failed with statuscode: 503\n"),
		ran("kubectl -n probes logs dns -f", "[INFO] plugin/ready: Plugins not ready: \"kubernetes\"\n"),
		ran("kubectl -n probes get endpointslices -l kubernetes.io/service-name=dns -o jsonpath=…", "dns 10.244.0.9 ready=false\n"),
		ran("kubectl -n probes get endpointslices -l kubernetes.io/service-name=dns -o jsonpath=…", "dns 10.244.0.9 ready=true\n"),
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"14-readiness-probe.yaml": "endpointBefore: dns 10.244.0.9 ready=false\n" +
		"event: 'Readiness probe failed: HTTP probe failed with statuscode: 503'\nnotReady: kubernetes\n"}, files)

	jsonpath := "kubectl get node minikube -o jsonpath='{range .status.conditions[?(@.type==\"Ready\")]}{.status} {.reason} {.lastTransitionTime} {.message}{\"\\n\"}{end}'"
	files, err = answersFor(15, runs{
		ran(jsonpath, "True KubeletReady 2026-12-02T08:50:01Z kubelet is posting ready status\n"),
		ran("minikube ssh -- sudo systemctl stop containerd", ""),
		ran(jsonpath, "False KubeletNotReady 2026-12-02T09:31:40Z container runtime is down\n"),
		ran("minikube ssh -- sudo systemctl show containerd --property=InactiveEnterTimestamp", "InactiveEnterTimestamp=Wed 2026-12-02 09:31:05 UTC\r\n"),
		ran(jsonpath, "True KubeletReady 2026-12-02T09:32:10Z kubelet is posting ready status\n"),
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"15-node-not-ready.yaml": "message: container runtime is down\nnotReadySince: \"2026-12-02T09:31:40Z\"\n" +
		"reason: KubeletNotReady\nsecondsToNotReady: 35\n"}, files)

	files, err = answersFor(18, runs{
		ran("kubectl -n qos get pods -o custom-columns=NAME:.metadata.name,QOS:.status.qosClass,UID:.metadata.uid", "NAME         QOS          UID\n"+
			"besteffort   BestEffort   91a31231-abf5-42cd-a496-f80bed725afd\nburstable    Burstable    d6db6e50-2203-4566-9ec5-57908340d237\nguaranteed   Guaranteed   c46156aa-ad78-479c-9b6b-45f1b6d88c74\n"),
		ran("kubectl get --raw /api/v1/nodes/minikube/proxy/configz | jq -r .kubeletconfig.cgroupDriver", "systemd\n"),
		ran("minikube ssh -- 'for p in … {{.info.config.linux.cgroup_parent}} …'", "besteffort /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod91a31231_abf5_42cd_a496_f80bed725afd.slice\r\n"+
			"burstable /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podd6db6e50_2203_4566_9ec5_57908340d237.slice\r\nguaranteed /kubepods.slice/kubepods-podc46156aa_ad78_479c_9b6b_45f1b6d88c74.slice\r\n"),
		ran("minikube ssh -- 'for p in … {{.info.runtimeSpec.process.oomScoreAdj}} …'", "besteffort 1000\r\nburstable 993\r\nguaranteed -997\r\n"),
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"18-qos-on-the-node.yaml": "besteffort:\n  cgroup: /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod91a31231_abf5_42cd_a496_f80bed725afd.slice\n  oomScoreAdj: 1000\n  qosClass: BestEffort\n" +
		"burstable:\n  cgroup: /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podd6db6e50_2203_4566_9ec5_57908340d237.slice\n  oomScoreAdj: 993\n  qosClass: Burstable\ncgroupDriver: systemd\n" +
		"guaranteed:\n  cgroup: /kubepods.slice/kubepods-podc46156aa_ad78_479c_9b6b_45f1b6d88c74.slice\n  oomScoreAdj: -997\n  qosClass: Guaranteed\n"}, files)

	files, err = answersFor(19, runs{
		ran("kubectl get node minikube -o jsonpath='{range .status.conditions[?(@.type==\"MemoryPressure\")]}…'", "True KubeletHasInsufficientMemory kubelet has insufficient memory available\n"),
		ran("minikube ssh -- 'sudo journalctl -u kubelet --no-pager | grep -e \"pods ranked for eviction\" -e \"evicted successfully\" | grep qos/'",
			"Dec 07 03:42:43 minikube kubelet[6432]: I1207 03:42:43.011675    6432 eviction_manager.go:658] \"Eviction manager: pod is evicted successfully\" pod=\"qos/besteffort\"\r\n"+
				"Dec 07 03:42:44 minikube kubelet[6432]: I1207 03:42:44.411675    6432 eviction_manager.go:658] \"Eviction manager: pod is evicted successfully\" pod=\"qos/guaranteed\"\r\n"+
				"Dec 07 03:42:45 minikube kubelet[6432]: I1207 03:42:45.702498    6432 eviction_manager.go:658] \"Eviction manager: pod is evicted successfully\" pod=\"qos/burstable\"\r\n"),
		ran("kubectl -n qos get pod guaranteed -o jsonpath='{range .status.conditions[?(@.type==\"DisruptionTarget\")]}{.reason}: {.message}{\"\\n\"}{end}'",
			"TerminationByKubelet: The node was low on resource: memory. Threshold quantity: 23700Mi, available: 24032800Ki. \n"),
		ran("kubectl -n qos get events --field-selector involvedObject.name=besteffort,reason=Evicted -o custom-columns=FROM:.source.component,MESSAGE:.message",
			"FROM      MESSAGE\nkubelet   The node had condition: [MemoryPressure]. \n"),
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"19-eviction.yaml": "besteffort: 'The node had condition: [MemoryPressure].'\nevictedFirst: guaranteed\n" +
		"pressure: KubeletHasInsufficientMemory\nthreshold: 23700Mi\n"}, files)

	files, err = answersFor(20, runs{
		ran("minikube ssh -- 'sudo journalctl -u kubelet --no-pager | grep -o \"back-off [0-9ms]* restarting failed container=pause pod=crashloop_crashloop([0-9a-f-]*)\" | uniq'",
			"back-off 10s restarting failed container=pause pod=crashloop_crashloop(c0ffee00-0000-4000-8000-000000000001)\r\n"+
				"back-off 20s restarting failed container=pause pod=crashloop_crashloop(c0ffee00-0000-4000-8000-000000000001)\r\n"+
				"back-off 40s restarting failed container=pause pod=crashloop_crashloop(c0ffee00-0000-4000-8000-000000000001)\r\n"),
		ran("kubectl -n crashloop get events --field-selector reason=BackOff -o custom-columns=FROM:.source.component,MESSAGE:.message",
			"FROM      MESSAGE\nkubelet   Back-off restarting failed container pause in pod crashloop_crashloop(c0ffee00-0000-4000-8000-000000000001)\n"),
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"20-crashloop.yaml": "backOffs:\n- 10s\n- 20s\n- 40s\nevent: Back-off restarting failed container pause in pod crashloop_crashloop(c0ffee00-0000-4000-8000-000000000001)\n"}, files)

	exec := "go run ./examples/workshop/17-nodes-proxy-exec --node minikube "
	files, err = answersFor(17, runs{
		ran(exec+"--via=kubelet --token-file examples/workshop/answers/proxy-getter.token -n exercise-17 -c monitor target -- nft add table inet via-kubelet", ""),
		ran(exec+"--via=apiserver --token-file examples/workshop/answers/proxy-getter.token -n exercise-17 -c monitor target -- nft add table inet via-apiserver",
			"error: unable to upgrade streaming request: websocket: bad handshake (400 Bad Request): you must specify at least 1 of stdin, stdout, stderr\n"),
		ran("minikube ssh -- sudo ./nodes-proxy-exec --kubeconfig /etc/kubernetes/admin.conf --node minikube --via=kubelet --token-file pods-reader.token --kubelet-ca-file kubelet-cas.crt --kubelet-tls-server-name=Hostname -n exercise-17 -c monitor target -- nft add table inet refused",
			"error: unable to upgrade streaming request: websocket: bad handshake (403 Forbidden): Forbidden (user=system:serviceaccount:exercise-17:pods-reader, verb=get, resource=nodes, subresource(s)=[proxy])\r\nssh: Process exited with status 1\n"),
		ran(exec+"--via=apiserver --token-file examples/workshop/answers/pods-reader.token -n exercise-17 -c monitor target -- nft add table inet refused",
			"error: unable to upgrade streaming request: nodes \"minikube\" is forbidden: User \"system:serviceaccount:exercise-17:pods-reader\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope\n"),
	})
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, yaml.Unmarshal([]byte(files["17-nodes-proxy-exec.yaml"]), &got))
	assert.Equal(t, map[string]string{
		"kubeletRefused":   "Forbidden (user=system:serviceaccount:exercise-17:pods-reader, verb=get, resource=nodes, subresource(s)=[proxy])",
		"apiserverRefused": `unable to upgrade streaming request: nodes "minikube" is forbidden: User "system:serviceaccount:exercise-17:pods-reader" cannot get resource "nodes/proxy" in API group "" at the cluster scope`,
		"verb":             "get",
		"throughTheProxy":  "unable to upgrade streaming request: websocket: bad handshake (400 Bad Request): you must specify at least 1 of stdin, stdout, stderr"}, got)
}

// workerAnswers reads exercise 16's answers from its Delve session, as an attendee reads them off
// the terminal: the "Go:" line of each `goroutine` (the sync loop's at UpdatePod, then the
// worker's), frame 1 of `stack`, the case above the line `frame 2 list` marks, and what `frame 2
// print` printed.
func workerAnswers(rs runs) (map[string]any, error) {
	lines, err := rs.of("dlv exec", 0)
	if err != nil {
		return nil, err
	}
	goLine := regexp.MustCompile(`^\s*Go: (\S+:\d+) (\S+) \(0x[0-9a-f]+\)$`)
	caller := regexp.MustCompile(`^1\s+0x[0-9a-f]+ in (\S+)$`)
	channel := regexp.MustCompile(`^\s*\d+:\s*case .*<-\s*(\w+):`)
	var gos [][]string
	a := map[string]any{}
	for i, l := range lines {
		if m := goLine.FindStringSubmatch(l); m != nil {
			gos = append(gos, m)
		}
		if m := caller.FindStringSubmatch(l); m != nil {
			a["handler"] = m[1]
		}
		if strings.HasPrefix(l, "=>") {
			for j := i - 1; j >= 0 && a["channel"] == nil; j-- {
				if m := channel.FindStringSubmatch(lines[j]); m != nil {
					a["channel"] = m[1]
				}
			}
		}
		if i+1 < len(lines) {
			switch l {
			case prompt + "frame 2 print u.Op":
				a["op"] = strings.Fields(lines[i+1] + " ")[0]
			case prompt + "frame 2 print u.Source":
				a["source"] = strings.Trim(lines[i+1], `"`)
			}
		}
	}
	if len(gos) != 2 {
		return nil, fmt.Errorf("%d \"Go:\" lines in the Delve session, not 2 (the sync loop's, then the worker's):\n%s", len(gos), strings.Join(lines, "\n"))
	}
	a["creator"] = gos[0][1]
	a["goStatement"] = gos[1][2] + " at " + gos[1][1]
	for _, k := range []string{"handler", "channel", "op", "source"} {
		if a[k] == nil || a[k] == "" {
			return nil, fmt.Errorf("no %s in the Delve session:\n%s", k, strings.Join(lines, "\n"))
		}
	}
	return a, nil
}

// Exercise 16's answers are read from its Delve session as the terminal showed it: the "Go:" line
// of each `goroutine`, frame 1 of `stack`, the case above the line `frame 2 list` marks, what
// `frame 2 print` printed. The session is in Delve's format, its places made up (no kubelet has
// them): the answers are the checker's to compare with the running kubelet, not this file's.
func TestWorkerAnswersReadFromSession(t *testing.T) {
	session := strings.Join([]string{
		"(dlv) goroutine",
		"Thread 4242 at /mod/example.com/k@v1.0.0/pkg/w/pool.go:30",
		"Goroutine 17:",
		"\tRuntime: /mod/example.com/k@v1.0.0/pkg/w/pool.go:30 example.com/k/pkg/w.(*pool).Add (0x28f03f6)",
		"\tGo: /mod/example.com/k@v1.0.0/cmd/app/start.go:7 example.com/k/cmd/app.start (0x29019a5)",
		"\tStart: /mod/example.com/k@v1.0.0/cmd/app/start.go:7 example.com/k/cmd/app.start.gowrap1 (0x2901e60)",
		"(dlv) stack",
		"0  0x00000000028f03f6 in example.com/k/pkg/w.(*pool).Add",
		"   at /mod/example.com/k@v1.0.0/pkg/w/pool.go:30",
		"1  0x00000000028b4471 in example.com/k/pkg/w.(*Loop).HandleNew",
		"   at /mod/example.com/k@v1.0.0/pkg/w/loop.go:90",
		"(dlv) frame 2 list",
		"  55:		select {",
		"  56:		case msg, ok := <-inbox:",
		"  58:			case types.NEW:",
		"=>60:				handler.HandleNew(ctx, msg.Items)",
		"  70:		case e := <-ticks:",
		"(dlv) frame 2 print u.Op",
		"NEW (3)",
		"(dlv) frame 2 print u.Source",
		`"disk"`,
		"(dlv) goroutine",
		"Goroutine 18:",
		"\tGo: /mod/example.com/k@v1.0.0/pkg/w/pool.go:42 example.com/k/pkg/w.(*pool).Add (0x28f1af9)",
		"\tStart: /mod/example.com/k@v1.0.0/pkg/w/pool.go:42 example.com/k/pkg/w.(*pool).Add.func1 (0x28f2360)",
	}, "\r\n")
	files, err := answersFor(16, runs{{cmd: Command{Text: ".bin/dlv exec .bin/kubelet-16 -- --once"}, out: session}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"16-worker-in-delve.yaml": "channel: inbox\n" +
		"creator: /mod/example.com/k@v1.0.0/cmd/app/start.go:7\n" +
		"goStatement: example.com/k/pkg/w.(*pool).Add at /mod/example.com/k@v1.0.0/pkg/w/pool.go:42\n" +
		"handler: example.com/k/pkg/w.(*Loop).HandleNew\nop: NEW\nsource: disk\n"}, files)
}

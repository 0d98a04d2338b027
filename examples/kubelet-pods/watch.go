package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
)

// watcher turns successive polls into the changes an agent's pod cache sees: ADD for a pod
// not seen before (or seen with another UID: a static pod whose manifest changed is a new
// pod), UPDATE when what kubectl's columns say changed, REMOVE when a node that answered no
// longer lists it. A node that did not answer removes nothing: not knowing is not gone.
type watcher struct {
	seen map[string]watched // by node/namespace/name
}

type watched struct {
	node, uid string
	summary   podtable.Summary // without "(5m ago)", which changes every poll
	ip        string
}

func (w *watcher) report(out io.Writer, rows []podtable.Row, answered map[string]bool) {
	now := map[string]watched{}
	for _, r := range rows {
		key := r.Node + "/" + r.Pod.Namespace + "/" + r.Pod.Name
		now[key] = watched{node: r.Node, uid: string(r.Pod.UID), summary: podtable.Summarize(r.Pod, time.Time{}), ip: r.Pod.Status.PodIP}
	}
	var lines []string
	name := func(key string) string { _, nsName, _ := strings.Cut(key, "/"); return nsName }
	for key, p := range now {
		old, ok := w.seen[key]
		switch {
		case !ok || old.uid != p.uid:
			if ok {
				lines = append(lines, fmt.Sprintf("REMOVE %s %s (uid %s replaced)", old.node, name(key), old.uid))
			}
			lines = append(lines, fmt.Sprintf("ADD    %s %s %s %s %s", p.node, name(key), p.summary.Ready, p.summary.Status, p.summary.Restarts))
		case old.summary != p.summary || old.ip != p.ip:
			var what []string
			for _, d := range [][3]string{{"READY", old.summary.Ready, p.summary.Ready}, {"STATUS", old.summary.Status, p.summary.Status},
				{"RESTARTS", old.summary.Restarts, p.summary.Restarts}, {"IP", old.ip, p.ip}} {
				if d[1] != d[2] {
					what = append(what, d[0]+" "+orNone(d[1])+" → "+orNone(d[2]))
				}
			}
			lines = append(lines, fmt.Sprintf("UPDATE %s %s %s", p.node, name(key), strings.Join(what, ", ")))
		}
	}
	for key, old := range w.seen {
		if _, ok := now[key]; !ok && answered[old.node] {
			lines = append(lines, fmt.Sprintf("REMOVE %s %s", old.node, name(key)))
		} else if !ok {
			now[key] = old // its node did not answer: keep it
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i][7:] < lines[j][7:] }) // by node and pod, not by kind
	for _, l := range lines {
		fmt.Fprintln(out, kubeletclient.Printable(l, false)) // names and states are the kubelet's text
	}
	w.seen = now
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// watchPodsAPI is --watch on the Pods API: no poll, the kubelet's own stream (WatchPods). Its
// events keep a copy of the node's pods, and each change to it is printed as a poll's would be:
// ADD, UPDATE (when a column changed: the kubelet also sends a MODIFIED for what no column shows),
// REMOVE. After a broken stream the kubelet sends every pod again; what went meanwhile is removed
// once it has (INITIAL_SYNC_COMPLETE).
func (o *clientOptions) watchPodsAPI(ctx context.Context, client *kubeletclient.Client) error {
	pods := map[string]*corev1.Pod{} // by UID, as this watch has received them
	synced, said := false, false
	err := client.WatchPods(ctx, o.node, func(e kubeletclient.PodEvent) {
		switch e.Type {
		case kubeletclient.PodsBroken:
			fmt.Fprintln(o.errOut, "error:", redact(e.Err))
			pods, synced = map[string]*corev1.Pod{}, false // the next watch starts over
			return
		case kubeletclient.PodAdded, kubeletclient.PodModified:
			pods[string(e.Pod.UID)] = e.Pod
		case kubeletclient.PodDeleted:
			delete(pods, string(e.Pod.UID))
		case kubeletclient.PodsSynced:
			synced = true
		}
		if !synced {
			return // still receiving the pods the kubelet had when the watch (re)started
		}
		rows := make([]podtable.Row, 0, len(pods))
		for _, p := range pods {
			rows = append(rows, podtable.Row{Node: o.node, Pod: p})
		}
		o.watcher.report(o.out, rows, map[string]bool{o.node: true})
		if !said { // once the pods it has are printed
			fmt.Fprintf(o.errOut, "Watching %s's pods through its kubelet's Pods API socket, %s (WatchPods), until Ctrl-C.\n", redactText(o.node), redactText(client.Options().PodsAPISocket))
			said = true
		}
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

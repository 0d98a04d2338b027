package staticpods

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Source watches a static pod path and sends its complete set of pods whenever it may have
// changed: at start, on every change inotify reports, and every Period — the kubelet's file
// source does both, because inotify can miss things (the directory is replaced, the watch
// fails) (pkg/kubelet/config/file.go#L91-L114 (func (s *sourceFile) run)).
//
// Where the kubelet's source applies a watch event to the one file it names and keeps a store
// of pods between events, this one lists the whole path again. It is simpler, and it never
// holds a stale pod: the kubelet can, until its next re-list (after a manifest is broken, a
// pod renamed inside its file, or every manifest removed). After a quiet moment both send the
// same pods; the notes list the moments in between where they differ.
type Source struct {
	Path     string
	NodeName types.NodeName
	// Period is the re-list period, the kubelet's fileCheckFrequency (20s by default).
	Period time.Duration
	// Report, if set, sees every listing (to print rejected files, say).
	Report func(Listing, error)
}

// Run sends sets until ctx ends. The first set is sent before Run waits for anything.
func (s *Source) Run(ctx context.Context, sets chan<- []*v1.Pod) {
	logger := klog.FromContext(ctx).WithValues("path", s.Path)
	ticker := time.NewTicker(s.Period)
	defer ticker.Stop()
	var watcher *fsnotify.Watcher
	defer func() {
		if watcher != nil {
			_ = watcher.Close()
		}
	}()
	relist := true
	for {
		// (Re)start the watch whenever there is none: the path may appear later, and a watch
		// dies with the directory it watches.
		if watcher == nil {
			w, err := watch(s.Path)
			if err != nil {
				logger.V(2).Info("Cannot watch the static pod path yet; re-listing every period", "err", err)
			}
			watcher = w
		}
		if relist && !s.send(ctx, logger, sets) {
			return
		}
		relist = true
		var events chan fsnotify.Event
		var errs chan error
		if watcher != nil {
			events, errs = watcher.Events, watcher.Errors
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case err, ok := <-errs:
			logger.Error(err, "Watching the static pod path failed; watching again")
			if ok || err == nil {
				_ = watcher.Close()
			}
			watcher = nil
		case e, ok := <-events:
			switch {
			case !ok:
				watcher = nil
			case strings.HasPrefix(filepath.Base(e.Name), "."):
				relist = false // hidden files are not manifests; the kubelet ignores their events too
			case e.Has(fsnotify.Remove) && filepath.Clean(e.Name) == filepath.Clean(s.Path):
				_ = watcher.Close()
				watcher = nil
			}
		}
	}
}

// send lists the path and sends its pods. A path that is missing or unreadable counts as empty,
// as in the kubelet; a single manifest file that is invalid sends nothing, so its last good pod
// stays, as in the kubelet. It returns false when ctx ended first.
func (s *Source) send(ctx context.Context, logger klog.Logger, sets chan<- []*v1.Pod) bool {
	listing, err := List(s.Path, s.NodeName)
	if s.Report != nil {
		s.Report(listing, err)
	}
	switch {
	case err != nil:
		logger.V(2).Info("Unable to read the static pod path; it counts as empty", "err", err)
	case listing.SingleFile && len(listing.Pods) == 0:
		return true
	}
	for _, r := range listing.Rejected {
		logger.V(2).Info("Manifest skipped", "file", r.File, "reason", r.Reason)
	}
	select {
	case sets <- listing.Pods:
		return true
	case <-ctx.Done():
		return false
	}
}

func watch(path string) (*fsnotify.Watcher, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(path); err != nil {
		return nil, errors.Join(err, w.Close())
	}
	return w, nil
}

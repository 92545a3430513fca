package e2b

import (
	"context"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// watchDirRequest is filesystem.WatchDirRequest.
type watchDirRequest struct {
	Path               string `json:"path"`
	Recursive          bool   `json:"recursive"`
	IncludeEntry       bool   `json:"includeEntry"`
	AllowNetworkMounts bool   `json:"allowNetworkMounts"`
}

// fsEvent is filesystem.FilesystemEvent.
type fsEvent struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Entry is what the changed path is, when the watch asked for it
	// (includeEntry, envd 0.6.3; withEntries).
	Entry *entryInfo `json:"entry,omitempty"`
}

// watchMessage is filesystem.WatchDirResponse: one of its fields is set.
type watchMessage struct {
	Start      *struct{} `json:"start,omitempty"`
	Filesystem *fsEvent  `json:"filesystem,omitempty"`
	Keepalive  *struct{} `json:"keepalive,omitempty"`
}

// eventTypes are E2B's EventType names of the runtime's changes.
var eventTypes = map[string]string{
	"create": "EVENT_TYPE_CREATE", "write": "EVENT_TYPE_WRITE", "remove": "EVENT_TYPE_REMOVE",
	"rename": "EVENT_TYPE_RENAME", "chmod": "EVENT_TYPE_CHMOD",
}

// watchDir is envd's WatchDir (files.watchDir): a start event once the
// watch is in place, then each change of the directory's entries (with
// recursive, its tree) named relative to it, keepalives between, until
// the caller leaves, Connect-Timeout-Ms passes (deadline_exceeded) or
// the sandbox stops (unavailable). Only /workspace and the home can be
// watched: the agent's watcher of file activity covers those trees. A
// watch that fell behind ends with data_loss rather than skip changes
// silently.
func (s *Server) watchDir(w http.ResponseWriter, r *http.Request) {
	st := newStream(w)
	var req watchDirRequest
	if rerr := readStreamRequest(r, &req); rerr != nil {
		st.end(rerr)
		return
	}
	timeout, terr := connectTimeout(r)
	if terr != nil {
		st.end(terr.(*rpcError))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(r.Context(), timeout)
	}
	defer cancel()
	dir, events, rerr := s.startWatch(ctx, r, req)
	if rerr != nil {
		st.end(rerr)
		return
	}
	if st.send(watchMessage{Start: &struct{}{}}) != nil {
		return
	}
	var f runtime.Files // stats the events' paths (includeEntry)
	if req.IncludeEntry {
		f, _ = s.files(r) // (startWatch had it)
	}
	s.followWatch(ctx, r, st, dir, events, f)
}

// startWatch finds the directory (a symlink to one is watched where it
// leads) and starts its watch.
func (s *Server) startWatch(ctx context.Context, r *http.Request, req watchDirRequest) (string, <-chan runtime.WatchBatch, *rpcError) {
	f, err := s.files(r)
	if err != nil {
		return "", nil, rpcErr(err)
	}
	dir := resolve(req.Path)
	fi, err := f.Stat(ctx, dir)
	if err != nil {
		return "", nil, fileRPCErr(err)
	}
	if fi.Type == "symlink" {
		real, tfi, ok := resolveLinks(ctx, f, dir)
		if !ok {
			return "", nil, errorf(codeNotFound, "%s is a symlink that leads nowhere", dir)
		}
		dir, fi = real, tfi
	}
	if fi.Type != "dir" {
		return "", nil, errorf(codeInvalidArgument, "path %s not a directory", dir)
	}
	dw, ok := f.(runtime.DirWatcher)
	if !ok {
		return "", nil, errorf(codeUnimplemented, "unsupported by airlock: directory watches on this sandbox's file access")
	}
	events, err := dw.WatchDir(ctx, dir, req.Recursive)
	if err != nil {
		return "", nil, rpcErr(err)
	}
	return dir, events, nil
}

// followWatch streams the watch's changes until it ends; f, if not nil,
// describes each changed path (includeEntry).
func (s *Server) followWatch(ctx context.Context, r *http.Request, st *stream, dir string, events <-chan runtime.WatchBatch, f runtime.Files) {
	interval := s.cfg.KeepaliveMax
	if v, err := strconv.ParseInt(r.Header.Get("Keepalive-Ping-Interval"), 10, 64); err == nil && v > 0 && v < int64(interval/time.Second) {
		interval = time.Duration(v) * time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-events:
			switch {
			case !ok && ctx.Err() == context.DeadlineExceeded:
				st.end(errorf(codeDeadlineExceeded, "the watch of %s ran past its timeout", dir))
				return
			case !ok && r.Context().Err() != nil:
				return
			case !ok:
				st.end(errorf(codeUnavailable, "the sandbox stopped: the watch of %s ended", dir))
				return
			case b.Lost:
				st.end(errorf("data_loss", "the watch of %s fell behind and lost changes: watch again (and list the directory)", dir))
				return
			}
			for _, e := range withEntries(ctx, f, dir, fsEvents(dir, b)) {
				if st.send(watchMessage{Filesystem: &e}) != nil {
					return
				}
			}
		case <-tick.C:
			if st.send(watchMessage{Keepalive: &struct{}{}}) != nil {
				return
			}
		}
	}
}

// fsEvents are a batch's changes as E2B's events of dir: named relative
// to it.
func fsEvents(dir string, b runtime.WatchBatch) []fsEvent {
	var out []fsEvent
	for _, e := range b.Events {
		name := strings.TrimPrefix(e.Path, dir+"/")
		if dir == "/" {
			name = strings.TrimPrefix(e.Path, "/")
		}
		t, ok := eventTypes[e.Op]
		if !ok || name == e.Path || path.IsAbs(name) {
			continue
		}
		out = append(out, fsEvent{Name: name, Type: t})
	}
	return out
}

// withEntries gives each event the entry of the path it names, as
// envd's includeEntry does: what Stat answers of it when the event is
// sent (a file changed again since is described as it is now). A
// removal, or a path gone or unreadable by then, has none. f nil: evs
// as they are.
func withEntries(ctx context.Context, f runtime.Files, dir string, evs []fsEvent) []fsEvent {
	if f == nil {
		return evs
	}
	for i, e := range evs {
		if e.Type == "EVENT_TYPE_REMOVE" {
			continue
		}
		fi, err := f.Stat(ctx, path.Join(dir, e.Name))
		if err != nil {
			continue
		}
		entry := entryOf(ctx, f, fi)
		evs[i].Entry = &entry
	}
	return evs
}

package e2b

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// The polled watchers (CreateWatcher, GetWatcherEvents, RemoveWatcher:
// what the Python SDK's watch_dir calls): a WatchDir the door keeps
// running between polls, its changes held until the next poll.

// Bounds of the polled watchers: how many a sandbox holds, how many
// changes one holds between polls (more: the watch lost changes), and
// how long one lives unpolled (then it is removed, as a client that
// went away would leave it).
const (
	maxWatchers     = 32
	maxHeldEvents   = 10000
	watcherIdleTime = 10 * time.Minute
)

// pollWatch is one polled watcher of a sandbox.
type pollWatch struct {
	sandbox string
	cancel  context.CancelFunc

	mu     sync.Mutex
	events []fsEvent
	lost   bool
	ended  *rpcError // why the watch ended (nil: it runs)
	polled time.Time
}

type watcherRequest struct {
	Path         string `json:"path"`
	Recursive    bool   `json:"recursive"`
	IncludeEntry bool   `json:"includeEntry"`
	WatcherID    string `json:"watcherId"`
}

func (s *Server) watcherRoutes() {
	s.handleEnvd("POST /filesystem.Filesystem/CreateWatcher", s.createWatcher)
	s.handleEnvd("POST /filesystem.Filesystem/GetWatcherEvents", s.getWatcherEvents)
	s.handleEnvd("POST /filesystem.Filesystem/RemoveWatcher", s.removeWatcher)
}

func (s *Server) createWatcher(w http.ResponseWriter, r *http.Request) {
	var req watcherRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	id := sandboxOf(r)
	s.wmu.Lock()
	n := 0
	for _, pw := range s.watchers {
		if pw.sandbox == id {
			n++
		}
	}
	s.wmu.Unlock()
	if n >= maxWatchers {
		writeUnary(w, nil, errorf(codeResourceExhaust, "sandbox %s has %d watchers: remove one first", id, n))
		return
	}
	// The watch outlives this call, until removed, idle or the sandbox
	// stops.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	dir, events, rerr := s.startWatch(ctx, r, watchDirRequest{Path: req.Path, Recursive: req.Recursive})
	if rerr != nil {
		cancel()
		writeUnary(w, nil, rerr)
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	wid := hex.EncodeToString(b[:])
	pw := &pollWatch{sandbox: id, cancel: cancel, polled: time.Now()}
	s.wmu.Lock()
	s.watchers[wid] = pw
	s.wmu.Unlock()
	var f runtime.Files // stats the events' paths (includeEntry)
	if req.IncludeEntry {
		f, _ = s.files(r)
	}
	go s.holdWatch(ctx, wid, pw, dir, events, f)
	writeUnary(w, map[string]any{"watcherId": wid}, nil)
}

// holdWatch keeps a polled watcher's changes until it ends.
func (s *Server) holdWatch(ctx context.Context, wid string, pw *pollWatch, dir string, events <-chan runtime.WatchBatch, f runtime.Files) {
	idle := time.NewTicker(time.Minute)
	defer idle.Stop()
	for {
		select {
		case b, ok := <-events:
			var evs []fsEvent
			if ok && !b.Lost { // (before the lock: Stat reaches the sandbox)
				evs = withEntries(ctx, f, dir, fsEvents(dir, b))
			}
			pw.mu.Lock()
			switch {
			case !ok:
				if pw.ended == nil {
					pw.ended = errorf(codeUnavailable, "the sandbox stopped: the watch of %s ended", dir)
				}
				pw.mu.Unlock()
				return
			case b.Lost || len(pw.events)+len(b.Events) > maxHeldEvents:
				pw.lost = true
			default:
				pw.events = append(pw.events, evs...)
			}
			pw.mu.Unlock()
		case <-idle.C:
			pw.mu.Lock()
			stale := time.Since(pw.polled) > watcherIdleTime
			pw.mu.Unlock()
			if stale {
				s.dropWatcher(wid)
			}
		}
	}
}

// watcher finds a polled watcher of the request's sandbox.
func (s *Server) watcher(r *http.Request, wid string) (*pollWatch, *rpcError) {
	s.wmu.Lock()
	pw := s.watchers[wid]
	s.wmu.Unlock()
	// (another sandbox's watcher is as unknown as one never made)
	if pw == nil || pw.sandbox != sandboxOf(r) {
		return nil, errorf(codeNotFound, "watcher %q not found", wid)
	}
	return pw, nil
}

func (s *Server) dropWatcher(wid string) {
	s.wmu.Lock()
	pw := s.watchers[wid]
	delete(s.watchers, wid)
	s.wmu.Unlock()
	if pw != nil {
		pw.cancel()
	}
}

// getWatcherEvents answers the changes held since the last poll; a
// watcher that lost changes, or whose watch ended, says so (and is
// removed) rather than answer what it has as if it were all.
func (s *Server) getWatcherEvents(w http.ResponseWriter, r *http.Request) {
	var req watcherRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	pw, rerr := s.watcher(r, req.WatcherID)
	if rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	pw.mu.Lock()
	evs, lost, ended := pw.events, pw.lost, pw.ended
	pw.events, pw.polled = nil, time.Now()
	pw.mu.Unlock()
	switch {
	case lost:
		s.dropWatcher(req.WatcherID)
		writeUnary(w, nil, errorf("data_loss", "watcher %s fell behind and lost changes: create it again (and list the directory)", req.WatcherID))
		return
	case ended != nil && len(evs) == 0:
		s.dropWatcher(req.WatcherID)
		writeUnary(w, nil, ended)
		return
	}
	if evs == nil {
		evs = []fsEvent{}
	}
	writeUnary(w, map[string]any{"events": evs}, nil)
}

func (s *Server) removeWatcher(w http.ResponseWriter, r *http.Request) {
	var req watcherRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	if _, rerr := s.watcher(r, req.WatcherID); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	s.dropWatcher(req.WatcherID)
	writeUnary(w, struct{}{}, nil)
}

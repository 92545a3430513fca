package agent

import (
	"path"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/runtime/agent/watch"
)

// Directory watches for the host (OpWatch): the watcher of the file
// activity already sees every change beneath its roots, so a watch is a
// filter on what it hands on, sent to the host as OpWatchEvents. Nothing
// here touches the files: the host has checked the directory.

// maxDirWatches bounds the watches the host holds at once.
const maxDirWatches = 64

// watchBatch bounds the events of one message (the channel's messages
// stay well under their 1 MiB bound).
const watchBatch = 512

// dirWatch is one host watch: the records that match go to its queue,
// which its sender empties; a full queue loses events (and says so).
type dirWatch struct {
	id        uint64
	dir       string
	recursive bool

	mu      sync.Mutex
	queue   []proto.WatchEvent
	lost    bool
	stopped bool
	wake    chan struct{} // 1-buffered: there is something to send
}

type dirWatches struct {
	mu   sync.Mutex
	byID map[uint64]*dirWatch
}

// match says whether p is a change the watch reports: an entry of its
// directory, or with recursive anything beneath it.
func (w *dirWatch) match(p string) bool {
	if w.recursive {
		return strings.HasPrefix(p, w.dir+"/")
	}
	return path.Dir(p) == w.dir
}

// add queues the records that match; it never blocks (the watcher's
// lock is held).
func (w *dirWatch) add(recs []watch.Rec, lost bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if lost {
		w.lost = true
	}
	n := len(w.queue)
	for _, r := range recs {
		ev := r.Event()
		if ev == "" || !w.match(r.Path()) {
			continue
		}
		if len(w.queue) >= 16*watchBatch {
			w.lost = true
			break
		}
		w.queue = append(w.queue, proto.WatchEvent{Op: ev, Path: r.Path()})
	}
	if len(w.queue) > n || w.lost {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// send sends the queue to the host as it fills, until the watch stops.
func (s *Server) sendWatch(w *dirWatch) {
	for range w.wake {
		for {
			w.mu.Lock()
			if w.stopped {
				w.mu.Unlock()
				return
			}
			n := min(len(w.queue), watchBatch)
			evs := append([]proto.WatchEvent(nil), w.queue[:n]...)
			w.queue = append(w.queue[:0], w.queue[n:]...)
			lost := w.lost
			w.lost = false
			w.mu.Unlock()
			if len(evs) == 0 && !lost {
				break
			}
			s.reply(&proto.Message{Op: proto.OpWatchEvents, ID: w.id, Events: evs, Lost: lost})
		}
	}
}

// startWatch is OpWatch: a directory beneath the watched roots,
// absolute and clean, no more than maxDirWatches at once.
func (s *Server) startWatch(m *proto.Message) {
	fail := func(code, msg string) {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: code, Error: msg})
	}
	if m.File == nil || !path.IsAbs(m.File.Path) || path.Clean(m.File.Path) != m.File.Path {
		fail("invalid", "watch needs an absolute, clean path")
		return
	}
	dir := m.File.Path
	if s.watch == nil || s.watch.Missing() {
		fail("unsupported", "file watching is not available in this sandbox (no inotify watch of its files)")
		return
	}
	if !s.watchable(dir) {
		fail("unsupported", "only directories beneath "+strings.Join(s.watchRoots, " and ")+" can be watched (airlock watches those trees)")
		return
	}
	w := &dirWatch{id: m.ID, dir: dir, recursive: m.File.Recursive, wake: make(chan struct{}, 1)}
	s.dirWatches.mu.Lock()
	if s.dirWatches.byID == nil {
		s.dirWatches.byID = map[uint64]*dirWatch{}
	}
	if len(s.dirWatches.byID) >= maxDirWatches {
		s.dirWatches.mu.Unlock()
		fail("limit_exceeded", "too many directory watches at once")
		return
	}
	s.dirWatches.byID[m.ID] = w
	s.dirWatches.mu.Unlock()
	// In place before the answer: a change the host makes on hearing it
	// is reported.
	s.watch.Drain()
	go s.sendWatch(w)
	s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID})
}

// watchable says whether dir is one of the watched roots or beneath one.
func (s *Server) watchable(dir string) bool {
	for _, r := range s.watchRoots {
		if dir == r || strings.HasPrefix(dir, r+"/") {
			return true
		}
	}
	return false
}

// stopWatch is OpUnwatch.
func (s *Server) stopWatch(m *proto.Message) {
	s.dirWatches.mu.Lock()
	w := s.dirWatches.byID[m.ID]
	delete(s.dirWatches.byID, m.ID)
	s.dirWatches.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		close(w.wake)
	}
	s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID})
}

// watchEvents hands the watcher's records to the host's watches.
func (s *Server) watchEvents(recs []watch.Rec, lost bool) {
	s.dirWatches.mu.Lock()
	defer s.dirWatches.mu.Unlock()
	for _, w := range s.dirWatches.byID {
		w.add(recs, lost)
	}
}

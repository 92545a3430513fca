package agent

import "github.com/airlock-dev/airlock/internal/runtime/agent/watch"

// WatchFiles makes every command's exit report what it did to the files
// beneath roots (ExitInfo.Files): absolute, clean directories without
// symlinks, watched recursively from now on. Reads beneath noReads are
// not reported (a git repository's objects). Call it once, before Serve;
// on error the reports are there but incomplete.
func (s *Server) WatchFiles(roots, noReads []string) error {
	s.trackFiles = true
	s.watchRoots = roots
	w, err := watch.New(roots, noReads, s.fileEvents)
	if err != nil {
		return err
	}
	s.watch = w
	return nil
}

// fileEvents is the watcher's sink: every record goes to every command
// running now, and to the host's directory watches.
func (s *Server) fileEvents(recs []watch.Rec, lost bool) {
	s.mu.Lock()
	for _, p := range s.procs {
		p.act.Add(recs, lost)
	}
	s.mu.Unlock()
	s.watchEvents(recs, lost)
}

// noteStart sets up a new command's activity; s.mu is held and p is
// already among s.procs.
func (s *Server) noteStart(p *proc) {
	if s.watch == nil || s.watch.Missing() {
		p.act.MarkIncomplete()
	}
	if s.hostOps > 0 {
		p.act.MarkShared()
	}
	if len(s.procs) > 1 {
		for _, q := range s.procs {
			q.act.MarkShared()
		}
	}
}

// hostOp marks a file operation of the host's that changes or reads files
// (its events go to the commands running, which are then shared). The
// returned func ends it, after reading its events: call it before the
// answer, so that a command started on the answer does not get them.
func (s *Server) hostOp() (end func()) {
	if !s.trackFiles {
		return func() {}
	}
	s.mu.Lock()
	s.hostOps++
	for _, p := range s.procs {
		p.act.MarkShared()
	}
	s.mu.Unlock()
	return func() {
		if s.watch != nil {
			s.watch.Drain()
		}
		s.mu.Lock()
		s.hostOps--
		s.mu.Unlock()
	}
}

package watch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/pathwalk"
)

// File activity: the agent watches the command user's directories
// (/workspace and the home directory) with inotify, which works in a user
// namespace, and hands every event to the commands running when it reads
// the event. One goroutine reads the events through the runtime's poller
// (no thread of its own, none per event, so a fork bomb changes nothing);
// when a command exits, the queue is drained without blocking before its
// exit is reported: the events of the command's own system calls are
// queued before wait4 returns, so none of them is missed.
//
// inotify watches directories, not trees: every directory gets a watch of
// its own, added when its creation is read (or found by walking a new
// tree: a directory's first entries can be made before its watch exists,
// so each new directory is walked, and what it holds counts as written).
//
// Limits (inotify's): events name paths, not processes, so everything
// done beneath the watched directories while a command runs is the
// command's (its background children, earlier commands' orphans, host
// file operations — these mark it shared); writes through a shared mmap
// show only when the file is closed; a hard link is one path of several;
// attribute events also cover times and link counts; a name that is not
// valid UTF-8 is reported with U+FFFD in place of the bad bytes.

// MaxWatches is the most directories the agent watches: beyond it, file
// activity is incomplete (as when the kernel refuses more watches). A
// watch pins its directory's inode in memory.
const MaxWatches = 1 << 16

// watchMask is what every directory is watched for. IN_EXCL_UNLINK: no
// events for files already unlinked (they have no name any more).
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO |
	unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_CLOSE_NOWRITE |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// Watcher keeps inotify watches on every directory beneath its roots and
// turns events into Recs for its sink.
type Watcher struct {
	f  *os.File // keeps fd open (and in the runtime's poller)
	fd int

	// mu is held while events are read and handed to the sink, so that
	// whoever drains sees every event queued before it was handed on.
	mu      sync.Mutex
	roots   []string
	noReads []string         // reads beneath these are not reported
	byWD    map[int32]string // watched directory by watch descriptor
	byPath  map[string]int32 // watch descriptor by directory
	buf     []byte           // events read
	recs    []Rec            // not yet handed on
	lost    bool             // events were lost since the last hand-on
	retryAt time.Time        // next try to watch what could not be
	backoff time.Duration    // between tries
	// uploadCookie pairs the rename of an upload's temporary file with
	// the name it is moved to (UploadPrefix)
	uploadCookie uint32
	sink         func([]Rec, bool)
	max          int // most watches (MaxWatches)

	// missing: some directory beneath the roots is not watched (out of
	// watches, an error, the reader stopped): every command is incomplete.
	missing atomic.Bool
	closed  atomic.Bool
}

// File is the watcher's inotify instance, for the host to keep a
// descriptor of (see Server.WatchFile); reading it is the watcher's.
func (w *Watcher) File() *os.File { return w.f }

// Close stops the watcher (the agent's never stops).
func (w *Watcher) Close() {
	w.closed.Store(true)
	w.f.Close()
}

// New watches roots (absolute, clean, no symlinks on the way) and
// everything beneath them. sink gets the records in order, and true when
// events were lost; it is called with w.mu held.
func New(roots, noReads []string, sink func(recs []Rec, lost bool)) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &Watcher{
		f: os.NewFile(uintptr(fd), "inotify"), fd: fd, roots: roots, noReads: noReads,
		byWD: map[int32]string{}, byPath: map[string]int32{}, buf: make([]byte, 64<<10), sink: sink,
		max: MaxWatches,
	}
	w.mu.Lock()
	w.rescan()
	w.lost = false // nobody to tell yet
	w.mu.Unlock()
	go w.run()
	return w, nil
}

// Missing says some directory beneath the roots is not watched now (out
// of watches, an error, the reader stopped): a command starting now may
// miss things.
func (w *Watcher) Missing() bool { return w.missing.Load() }

// run reads events as they come, until the descriptor fails.
func (w *Watcher) run() {
	rc, err := w.f.SyscallConn()
	if err == nil {
		// The callback drains the queue and asks to wait again: the
		// goroutine parks in the poller between events.
		err = rc.Read(func(uintptr) bool {
			w.Drain()
			return false
		})
	}
	if !w.closed.Load() {
		fmt.Fprintf(os.Stderr, "airlock agent: file activity: reading events: %v\n", err)
	}
	// No reader: from now on nothing is complete.
	w.mu.Lock()
	w.setMissing()
	w.flush()
	w.mu.Unlock()
}

// Drain reads and hands on every event queued so far, never waiting.
// Only those queued when it starts: a flood of new events cannot keep it
// (and whoever waits for w.mu) going. (The poller wakes the reader again
// for the events queued meanwhile.)
func (w *Watcher) Drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	queued, err := unix.IoctlGetInt(w.fd, unix.TIOCINQ) // FIONREAD: bytes queued
	if err != nil {
		queued = len(w.buf)
	}
	for queued > 0 {
		n, err := unix.Read(w.fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break // EAGAIN: empty
		}
		w.parse(w.buf[:n])
		queued -= n
	}
	if w.missing.Load() && time.Now().After(w.retryAt) {
		w.rescan()
		if w.missing.Load() {
			w.backoff = min(max(2*w.backoff, time.Second), time.Minute)
		} else {
			w.backoff = 0
		}
		w.retryAt = time.Now().Add(w.backoff)
	}
	w.flush()
}

// flush hands the records on.
func (w *Watcher) flush() {
	if len(w.recs) == 0 && !w.lost {
		return
	}
	w.sink(w.recs, w.lost)
	clear(w.recs)
	w.recs, w.lost = w.recs[:0], false
}

func (w *Watcher) emit(kind uint8, p string, ev uint8) {
	w.recs = append(w.recs, Rec{kind, p, ev})
	if len(w.recs) >= 4096 {
		w.flush()
	}
}

// setMissing notes a directory that is not watched.
func (w *Watcher) setMissing() {
	w.missing.Store(true)
	w.lost = true
}

// parse handles the events in b (whole events: inotify never splits one).
func (w *Watcher) parse(b []byte) {
	var lastWD int32
	var lastMask uint32
	var lastName []byte
	for off := 0; off+unix.SizeofInotifyEvent <= len(b); {
		wd := int32(binary.NativeEndian.Uint32(b[off:]))
		mask := binary.NativeEndian.Uint32(b[off+4:])
		cookie := binary.NativeEndian.Uint32(b[off+8:])
		n := int(binary.NativeEndian.Uint32(b[off+12:]))
		off += unix.SizeofInotifyEvent
		if n > len(b)-off {
			return
		}
		name := b[off : off+n]
		off += n
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		// A run of the same event (a loop of writes) is one. (Watch
		// descriptors start at 1.)
		if wd == lastWD && mask == lastMask && bytes.Equal(name, lastName) {
			continue
		}
		lastWD, lastMask, lastName = wd, mask, name
		w.event(wd, mask, cookie, name)
	}
}

// UploadPrefix starts the temporary names the agent's whole-file writes
// are made under before they are renamed into place (package fileops):
// a directory watch sees such a write as the file's creation and write,
// not as the temporary file's life.
const UploadPrefix = ".airlock-upload-"

func (w *Watcher) event(wd int32, mask, cookie uint32, name []byte) {
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		// Events were dropped, creations of directories among them:
		// watch everything again.
		w.lost = true
		w.rescan()
		return
	case mask&unix.IN_IGNORED != 0:
		if p, ok := w.byWD[wd]; ok {
			delete(w.byWD, wd)
			if w.byPath[p] == wd {
				delete(w.byPath, p)
			}
		}
		return
	}
	dir, ok := w.byWD[wd]
	if !ok {
		return
	}
	p := dir
	if len(name) > 0 {
		p = dir + "/" + string(name)
	}
	isDir := mask&unix.IN_ISDIR != 0
	// An upload's temporary file has no watch events of its own; its
	// rename into place is the file's creation and write.
	upload := !isDir && bytes.HasPrefix(name, []byte(UploadPrefix))
	ev := func(e uint8) uint8 {
		if upload {
			return evNone
		}
		return e
	}
	switch {
	case upload && mask&unix.IN_MOVED_FROM != 0:
		w.uploadCookie = cookie
	case mask&unix.IN_MOVED_TO != 0 && cookie != 0 && cookie == w.uploadCookie:
		w.uploadCookie = 0
		defer w.emit(actWritten, p, evWrite) // after its creation, below
	}
	switch {
	case mask&unix.IN_MOVED_FROM != 0:
		w.emit(actDeleted, p, ev(evRename))
		if isDir {
			w.unwatchTree(p)
		}
	case mask&unix.IN_DELETE != 0:
		w.emit(actDeleted, p, ev(evRemove))
		if isDir {
			// Its watch goes with it (IN_IGNORED). A directory made at p
			// again is new: its creation, read next, watches and walks it.
			delete(w.byPath, p)
		}
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		w.emit(actWritten, p, ev(evCreate))
		if _, watched := w.byPath[p]; isDir && !watched {
			w.watchTree(p, true)
		}
	case mask&unix.IN_MODIFY != 0:
		w.emit(actWritten, p, ev(evWrite))
	case mask&unix.IN_CLOSE_WRITE != 0:
		w.emit(actWritten, p, evNone) // (the writes were reported)
	case mask&unix.IN_ATTRIB != 0:
		w.emit(actChmod, p, ev(evChmod))
	case mask&unix.IN_CLOSE_NOWRITE != 0:
		if !isDir && !w.noRead(p) {
			w.emit(actRead, p, evNone)
		}
	}
}

func (w *Watcher) noRead(p string) bool {
	for _, d := range w.noReads {
		if within(p, d) {
			return true
		}
	}
	return false
}

// watchTree watches top and every directory beneath it; with record,
// everything beneath top counts as written.
func (w *Watcher) watchTree(top string, record bool) {
	stack := []string{top}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		stack = append(stack, w.watchDir(d, record)...)
	}
}

// watchDir watches d and returns its subdirectories.
func (w *Watcher) watchDir(d string, record bool) []string {
	// Opened without following any symlink, and watched through the
	// descriptor: a directory swapped for a symlink meanwhile is not
	// followed out of the tree.
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := pathwalk.Openat2(unix.AT_FDCWD, d, &how)
	if err != nil {
		// gone, or not a directory (any more): nothing to watch
		if err != unix.ENOENT && err != unix.ENOTDIR && err != unix.ELOOP {
			w.setMissing()
		}
		return nil
	}
	f := os.NewFile(uintptr(fd), d)
	defer f.Close()
	if _, watched := w.byPath[d]; !watched && len(w.byWD) >= w.max {
		w.setMissing() // out of watches of our own
		return nil
	}
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		w.setMissing() // ENOSPC: out of watches
		return nil
	}
	w.setWatch(int32(wd), d)
	var subdirs []string
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			p := d + "/" + e.Name()
			if record {
				// made before its directory was watched: new, as far as
				// anyone watching can tell
				w.emit(actWritten, p, evCreate)
			}
			if e.IsDir() {
				subdirs = append(subdirs, p)
			}
		}
		if err != nil || len(ents) == 0 {
			break
		}
	}
	return subdirs
}

func (w *Watcher) setWatch(wd int32, d string) {
	if old, ok := w.byWD[wd]; ok && old != d && w.byPath[old] == wd {
		delete(w.byPath, old) // the directory moved
	}
	w.byWD[wd] = d
	w.byPath[d] = wd
}

// unwatchTree drops the watches of top and everything beneath it: it
// was renamed, perhaps out of the roots; its new name, if inside, is
// watched afresh.
func (w *Watcher) unwatchTree(top string) {
	for wd, p := range w.byWD {
		if within(p, top) {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.byWD, wd)
			if w.byPath[p] == wd {
				delete(w.byPath, p)
			}
		}
	}
}

// rescan watches every directory beneath the roots again (watching a
// watched directory again keeps its descriptor) and drops the watches of
// directories no longer there.
func (w *Watcher) rescan() {
	old := w.byWD
	w.byWD, w.byPath = map[int32]string{}, map[string]int32{}
	w.missing.Store(false)
	for _, r := range w.roots {
		w.watchTree(r, false)
	}
	for wd := range old {
		if _, ok := w.byWD[wd]; !ok {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
}

// within says whether p is dir or beneath it (the agent's write scopes
// have the same three lines: not worth a package of their own).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

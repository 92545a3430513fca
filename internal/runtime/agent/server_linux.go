package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/landlock"
	"github.com/airlock-dev/airlock/internal/kernel/seccomp"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/runtime/agent/watch"
)

// Hardening is what every command gets before it execs.
type Hardening struct {
	UID, GID int
	Writable []string // Landlock read-write paths; everything else read-only
	// Scratch are the Writable paths that stay writable under a write
	// scope (RestrictWrites); ScopeRoots are where a scope's paths may lie.
	Scratch, ScopeRoots []string
	// Landlock: apply it when the kernel has it. RequireLandlock makes its
	// absence an error instead of ABI 0.
	RequireLandlock bool
	// NoCgroupNS skips the cgroup namespace of the spawner thread: for a
	// kernel whose cgroup file system shows nothing of the host's (gVisor,
	// which may not implement cgroup namespaces at all).
	NoCgroupNS bool
}

// Server serves one host channel. It must run as PID 1 of the sandbox's
// pid namespace, as root of the sandbox's user namespace.
type Server struct {
	conn    *proto.Conn
	hard    Hardening
	prog    []unix.SockFilter
	lastCap int
	// DiskPaths are checked with statfs after each command to report a full
	// disk.
	DiskPaths []string

	ruleset *landlock.Ruleset // prepared once; nil when Landlock is absent
	spawnc  chan spawnReq
	// spawnerTID is the spawner thread's id in the sandbox's pid namespace.
	spawnerTID int
	// oomAdj is /proc/self/oom_score_adj, opened once. Commands are
	// started with the highest OOM score (1000) so that an OOM in the
	// sandbox kills them before the agent: the agent raises its own score
	// only while it forks, then returns to its old value (always allowed:
	// it is not below the minimum it inherited). Writing through a
	// descriptor opened before Landlock works from a restricted thread.
	oomAdj    *os.File
	oomAdjOld []byte

	// restrictMu serializes write scope changes; scopeMu guards what they
	// publish: the write layers enforced on the spawner thread, oldest
	// first, which every file operation's thread applies too, and the
	// scope they make (nil: none yet).
	restrictMu sync.Mutex
	scopeMu    sync.Mutex
	layers     []*landlock.Ruleset
	scope      []string

	// File activity (WatchFiles): trackFiles once asked for; watch is
	// nil when inotify could not be had (every report is incomplete then).
	trackFiles bool
	watch      *watch.Watcher
	watchRoots []string
	// dirWatches are the host's directory watches (OpWatch)
	dirWatches dirWatches

	// net is the network forwarding (StartNetwork); nil: none.
	net *netState

	mu      sync.Mutex
	procs   map[int]*proc     // live commands by pid
	early   map[int]earlyExit // statuses reaped before the pid was registered
	byID    map[uint64]*proc  // live commands by request id
	hostOps int               // file operations of the host's running
	landABI int
}

type proc struct {
	id       uint64
	pid      int
	tty      *os.File // a relayed command's terminal (master side)
	start    time.Time
	timer    *time.Timer
	timedOut bool
	act      watch.Activity // guarded by Server.mu while the command is live
}

type earlyExit struct {
	ws syscall.WaitStatus
	ru syscall.Rusage
	at time.Time
}

// NewServer prepares a server; it loads the seccomp program and checks the
// Landlock ABI so that a missing feature fails here, not per command.
func NewServer(conn *proto.Conn, h Hardening) (*Server, error) {
	prog, err := seccomp.Program()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	abi, err := landlock.ABI()
	if err != nil {
		if h.RequireLandlock {
			return nil, fmt.Errorf("landlock required: %w", err)
		}
		abi = 0
	}
	var rs *landlock.Ruleset
	if abi > 0 {
		if rs, err = landlock.Prepare(landlock.Config{ReadOnly: []string{"/"}, ReadWrite: h.Writable, Scope: true}); err != nil {
			return nil, fmt.Errorf("landlock: %w", err)
		}
	}
	oldAdj, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return nil, fmt.Errorf("read oom_score_adj: %w", err)
	}
	oomAdj, err := os.OpenFile("/proc/self/oom_score_adj", os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open oom_score_adj: %w", err)
	}
	lastCap := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			lastCap = n
		}
	}
	srv := &Server{
		conn: conn, hard: h, prog: prog, lastCap: lastCap, landABI: abi, ruleset: rs, oomAdj: oomAdj, oomAdjOld: []byte(strings.TrimSpace(string(oldAdj))),
		procs: map[int]*proc{}, early: map[int]earlyExit{}, byID: map[uint64]*proc{},
		spawnc: make(chan spawnReq),
	}
	ready := make(chan error, 1)
	go srv.spawner(ready)
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("harden spawner thread: %w", err)
	}
	return srv, nil
}

// SpawnerTID is the id (in the sandbox's pid namespace) of the thread all
// commands are forked from: a host that moves it into a cgroup moves every
// future command there.
func (s *Server) SpawnerTID() int { return s.spawnerTID }

// WatchFile is the file-activity watcher's inotify instance (nil: none),
// which the init hands to the host with its ready: the instance then
// outlives the sandbox's processes, so that its release (an RCU grace
// period of the kernel's, 0.4-60 ms measured) is not in the last one's
// exit, which a Destroy waits for, but in the host's close after it.
func (s *Server) WatchFile() *os.File {
	if s.watch == nil {
		return nil
	}
	return s.watch.File()
}

// LandlockABI is the ABI applied to commands (0: none).
func (s *Server) LandlockABI() int { return s.landABI }

// Serve handles requests until the host closes the channel or asks for
// shutdown. It never returns normally: when the channel is gone the
// process exits, which kills every process in the pid namespace.
func (s *Server) Serve() {
	sigc := make(chan os.Signal, 16)
	signal.Notify(sigc, unix.SIGCHLD)
	// Terminal signals are caught and dropped, not left to their default
	// (which ends a Go program, PID 1 or not, once the runtime handles
	// them): no terminal should ever reach the agent, and if one did, its
	// owner could not stop or end the agent with it. Caught, not
	// ignored: an ignored disposition would pass to every command.
	termc := make(chan os.Signal, 8)
	signal.Notify(termc, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	go func() {
		for range termc {
		}
	}()
	go s.reap(sigc)
	for {
		m, files, err := s.conn.Recv()
		if err != nil {
			os.Exit(0)
		}
		switch m.Op {
		case proto.OpExec:
			s.exec(m, files)
		case proto.OpSignal:
			closeAll(files)
			s.signal(m)
		case proto.OpResize:
			closeAll(files)
			s.resize(m)
		case proto.OpUntar:
			go s.untar(m, files)
		case proto.OpFile:
			go s.file(m, files)
		case proto.OpRestrictWrites:
			closeAll(files)
			go s.restrictWrites(m)
		case proto.OpSweep:
			closeAll(files)
			go s.sweep(m)
		case proto.OpWatch:
			closeAll(files)
			go s.startWatch(m)
		case proto.OpUnwatch:
			closeAll(files)
			go s.stopWatch(m)
		case proto.OpShutdown:
			os.Exit(0)
		case proto.OpNetConn, proto.OpDNS:
			// the host's answer to a network request of ours
			if !s.netAnswer(m, files) {
				closeAll(files)
			}
		default:
			closeAll(files)
			s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "invalid", Error: "unknown op " + strconv.Quote(m.Op)})
		}
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

func (s *Server) reply(m *proto.Message, files ...*os.File) {
	err := s.conn.Send(m, files...)
	if errors.Is(err, proto.ErrTooLarge) {
		// The answer does not fit: an exit report goes without its file
		// activity (marked incomplete); anything else becomes an error.
		// The host must hear of it either way.
		if m.Exit != nil && m.Exit.Files != nil {
			short := *m
			ex := *m.Exit
			ex.Files = &proto.FileActivity{Incomplete: true, Shared: m.Exit.Files.Shared}
			short.Exit = &ex
			err = s.conn.Send(&short, files...)
		} else {
			err = s.conn.Send(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "limit_exceeded", Error: "the answer is too large for the agent channel: " + err.Error()}, files...)
		}
	}
	if err != nil {
		os.Exit(0) // the host is gone
	}
}

func (s *Server) exec(m *proto.Message, files []*os.File) {
	want := 3
	if m.Exec != nil && m.Exec.TTY {
		want = 0
		if m.Exec.Relay {
			want = 1
		}
	}
	if m.Exec == nil || len(m.Exec.Argv) == 0 || len(files) != want {
		closeAll(files)
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "invalid", Error: "exec needs argv and 3 descriptors (none with a terminal, one with a relayed terminal)"})
		return
	}
	spec := m.Exec
	var master, relay *os.File
	if spec.TTY {
		if spec.Relay {
			relay = files[0]
		}
		var slave *os.File
		var err error
		if master, slave, err = s.openPTY(spec.Rows, spec.Cols); err != nil {
			closeAll(files)
			s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "internal", Error: "terminal: " + err.Error()})
			return
		}
		files = []*os.File{slave, slave, slave}
	}
	go func() {
		if master != nil && relay == nil {
			defer master.Close()
		}
		if relay != nil {
			// until the relay owns them
			defer func() {
				if relay != nil {
					relay.Close()
					master.Close()
				}
			}()
		}
		path, err := lookPath(spec.Argv[0], spec.Env)
		if err != nil {
			closeAll(files)
			s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: errCode(err), Error: err.Error()})
			return
		}
		// Hold the lock from fork until "started" is sent: the reaper
		// cannot report the exit before the host has heard of the start.
		s.mu.Lock()
		pid, err := s.spawn(path, spec, files)
		closeAll(files)
		if err != nil {
			s.mu.Unlock()
			s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: errCode(err), Error: err.Error()})
			return
		}
		p := &proc{id: m.ID, pid: pid, start: time.Now()}
		if relay != nil {
			p.tty = master
			go relayTerminal(master, relay)
			relay = nil
		}
		s.procs[pid] = p
		s.byID[m.ID] = p
		if s.trackFiles {
			s.noteStart(p)
		}
		if spec.TimeoutMS > 0 {
			p.timer = time.AfterFunc(time.Duration(spec.TimeoutMS)*time.Millisecond, func() { s.timeout(p) })
		}
		if master != nil && p.tty == nil {
			s.reply(&proto.Message{Op: proto.OpStarted, ID: m.ID, PID: pid}, master)
		} else {
			s.reply(&proto.Message{Op: proto.OpStarted, ID: m.ID, PID: pid})
		}
		e, early := s.early[pid]
		delete(s.early, pid)
		s.mu.Unlock()
		if early {
			s.finish(p, e.ws, e.ru)
		}
	}()
}

func errCode(err error) string {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, errNotFound):
		return "not_found"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EISDIR):
		return "not_executable"
	case errors.Is(err, unix.ENOTDIR):
		return "bad_dir"
	}
	return "internal"
}

var errNotFound = errors.New("command not found")

// lookPath resolves name against PATH from env (or the default path).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			pathEnv = kv[5:]
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, errNotFound)
}

type spawnReq struct {
	path  string
	spec  *proto.ExecSpec
	files []*os.File
	// restrict, when set, is enforced on the spawner thread instead of a
	// fork: every command forked afterwards inherits it.
	restrict *landlock.Ruleset
	reply    chan spawnRes
}

type spawnRes struct {
	pid int
	err error
}

// spawner is the one OS thread every command is forked from. It is
// hardened once, exactly as every command must be (cgroup namespace, no
// capabilities, no_new_privs, Landlock, seccomp), and stays locked for the
// agent's life, so the Go runtime never runs anything else on it and never
// clones a thread from it. Forking from a long-lived thread also means the
// agent needs no new thread per command, not even while a fork bomb holds
// every pid.
func (s *Server) spawner(ready chan<- error) {
	runtime.LockOSThread()
	s.spawnerTID = unix.Gettid()
	if err := s.harden(); err != nil {
		ready <- err
		return // the thread dies with the goroutine (still locked)
	}
	ready <- nil
	for req := range s.spawnc {
		if req.restrict != nil {
			_, err := req.restrict.RestrictThread()
			req.reply <- spawnRes{err: err}
			continue
		}
		pid, err := s.forkExec(req.path, req.spec, req.files)
		req.reply <- spawnRes{pid, err}
	}
}

// spawn forks and execs a command on the spawner thread.
func (s *Server) spawn(path string, spec *proto.ExecSpec, files []*os.File) (int, error) {
	reply := make(chan spawnRes, 1)
	s.spawnc <- spawnReq{path: path, spec: spec, files: files, reply: reply}
	r := <-reply
	return r.pid, r.err
}

// harden applies to the calling, locked thread everything a command must
// run under. It cannot be undone.
func (s *Server) harden() error {
	// A cgroup namespace rooted at the sandbox's cgroup.
	if !s.hard.NoCgroupNS {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			return fmt.Errorf("unshare cgroup ns: %w", err)
		}
	}
	for c := 0; c <= s.lastCap; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	// EINVAL: a kernel without ambient capabilities (gVisor before 2023)
	// has none to clear.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if s.ruleset != nil {
		if _, err := s.ruleset.RestrictThread(); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if err := seccomp.InstallThread(s.prog); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// forkExec runs on the hardened spawner thread.
func (s *Server) forkExec(path string, spec *proto.ExecSpec, files []*os.File) (int, error) {
	dir := spec.Dir
	if dir == "" {
		dir = "/workspace"
	}
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   spec.Env,
		Files: []uintptr{files[0].Fd(), files[1].Fd(), files[2].Fd()},
		Sys: &syscall.SysProcAttr{
			Setsid:     true,
			Setctty:    spec.TTY, // the terminal (child fd 0) becomes the session's
			Credential: &syscall.Credential{Uid: uint32(s.hard.UID), Gid: uint32(s.hard.GID), Groups: []uint32{}},
		},
	}
	// Commands are the OOM killer's first choice; the agent its last.
	_, _ = s.oomAdj.WriteAt([]byte("1000"), 0)
	pid, err := syscall.ForkExec(path, spec.Argv, attr)
	_, _ = s.oomAdj.WriteAt(s.oomAdjOld, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			if _, serr := os.Stat(dir); serr != nil {
				return 0, fmt.Errorf("working directory %s: %w", dir, unix.ENOTDIR)
			}
		}
		return 0, fmt.Errorf("%s: %w", spec.Argv[0], err)
	}
	return pid, nil
}

func (s *Server) timeout(p *proc) {
	s.mu.Lock()
	if _, live := s.procs[p.pid]; !live {
		s.mu.Unlock()
		return
	}
	p.timedOut = true
	s.mu.Unlock()
	killTree(p.pid)
}

// killTree kills a command: its process group, every process below it in
// the process tree, whatever session or group it moved to (setsid does
// not take a process out of its parent's tree), and every process still
// in its session (commands lead sessions of their own), also one that
// left the tree by a double fork. The lot is stopped first, so that
// nothing forks past the scan, then killed. A process that left both the
// tree and the session is not found: it ends with the sandbox.
func killTree(leader int) {
	_ = unix.Kill(-leader, unix.SIGSTOP)
	seen := map[int]bool{leader: true}
	for round := 0; round < 10; round++ {
		found := false
		for _, pid := range descendants(leader) {
			if !seen[pid] {
				seen[pid] = true
				found = true
				_ = unix.Kill(pid, unix.SIGSTOP)
			}
		}
		if !found {
			break
		}
	}
	for pid := range seen {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	_ = unix.Kill(-leader, unix.SIGKILL)
}

// descendants lists the processes below pid, and those in the session
// pid leads, from /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	var inSession []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// after the command name's ")": state ppid ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(string(f[1])); err == nil {
			children[pp] = append(children[pp], p)
		}
		if len(f) > 3 && p != pid && string(f[3]) == strconv.Itoa(pid) {
			inSession = append(inSession, p)
		}
	}
	out := inSession
	queue := []int{pid}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, c := range children[q] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func (s *Server) signal(m *proto.Message) {
	s.mu.Lock()
	p := s.byID[m.ID]
	s.mu.Unlock()
	if p == nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "not_found", Error: "no such process"})
		return
	}
	sig := unix.Signal(m.Signal)
	if sig == unix.SIGKILL {
		// killing a command kills all of it (see killTree)
		killTree(p.pid)
		s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID})
		return
	}
	err := unix.Kill(-p.pid, sig)
	if err != nil {
		err = unix.Kill(p.pid, sig)
	}
	if err != nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "internal", Error: err.Error()})
		return
	}
	s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID})
}

// sweep ends every other process of the sandbox: as its PID 1, the
// agent's kill(-1) reaches all of them (and never itself). It answers once
// none is left, or with an error after 5 s.
func (s *Server) sweep(m *proto.Message) {
	others := func() int {
		ents, _ := os.ReadDir("/proc")
		n := 0
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
				n++
			}
		}
		return n
	}
	n := others()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_ = unix.Kill(-1, unix.SIGKILL) // again: one may have forked meanwhile
		if others() == 0 {
			s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID, PID: n})
			return
		}
		if time.Now().After(deadline) {
			s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "internal", Error: fmt.Sprintf("%d processes were still there after 5 s", others())})
			return
		}
	}
}

// resize sets the window size of a relayed command's terminal.
func (s *Server) resize(m *proto.Message) {
	s.mu.Lock()
	p := s.byID[m.ID]
	s.mu.Unlock()
	if p == nil || p.tty == nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "not_found", Error: "no such command with a relayed terminal"})
		return
	}
	rc, err := p.tty.SyscallConn()
	if err == nil {
		// through the RawConn: safe while the relay may close it
		cerr := rc.Control(func(fd uintptr) {
			err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: m.Rows, Col: m.Cols})
		})
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "internal", Error: "resize: " + err.Error()})
		return
	}
	s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID})
}

// relayTerminal copies a terminal's output to the host's socket and what
// the host sends into the terminal, until the terminal hangs up (every
// holder of its slave side is gone) or the host closes its end. It owns
// and closes both.
func relayTerminal(master, sock *os.File) {
	typed := make(chan struct{})
	go func() {
		// The end of the host's input is not a hang-up: stop typing only.
		_, _ = io.Copy(master, sock)
		close(typed)
	}()
	_, _ = io.Copy(sock, master)
	// The host reads EOF; its closing of the socket then ends the typing.
	_ = unix.Shutdown(int(sock.Fd()), unix.SHUT_WR)
	<-typed
	sock.Close()
	master.Close()
}

// reap collects every child and orphan; PID 1 must, or zombies pile up.
func (s *Server) reap(sigc chan os.Signal) {
	for range sigc {
		for {
			var ws syscall.WaitStatus
			var ru syscall.Rusage
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, &ru)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			s.mu.Lock()
			p, ok := s.procs[pid]
			if !ok {
				s.early[pid] = earlyExit{ws: ws, ru: ru, at: time.Now()}
				for k, e := range s.early {
					if time.Since(e.at) > time.Minute {
						delete(s.early, k)
					}
				}
				s.mu.Unlock()
				continue
			}
			s.mu.Unlock()
			s.finish(p, ws, ru)
		}
	}
}

func (s *Server) finish(p *proc, ws syscall.WaitStatus, ru syscall.Rusage) {
	if s.watch != nil {
		// The command's own changes are queued by now: read them while
		// it still counts as running.
		s.watch.Drain()
	}
	s.mu.Lock()
	delete(s.procs, p.pid)
	delete(s.byID, p.id)
	timedOut := p.timedOut
	if p.timer != nil {
		p.timer.Stop()
	}
	act := p.act
	s.mu.Unlock()
	ei := &proto.ExitInfo{
		UserUS:     ru.Utime.Sec*1e6 + ru.Utime.Usec,
		SysUS:      ru.Stime.Sec*1e6 + ru.Stime.Usec,
		MaxRSSKiB:  ru.Maxrss,
		DurationUS: time.Since(p.start).Microseconds(),
		TimedOut:   timedOut,
		DiskFull:   s.diskFull(),
	}
	if s.trackFiles {
		ei.Files = act.Result()
	}
	switch {
	case ws.Exited():
		ei.Code = ws.ExitStatus()
	case ws.Signaled():
		ei.Signal = int(ws.Signal())
		ei.Code = 128 + int(ws.Signal())
	}
	s.reply(&proto.Message{Op: proto.OpExited, ID: p.id, PID: p.pid, Exit: ei})
}

func (s *Server) diskFull() bool {
	for _, p := range s.DiskPaths {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) != nil {
			continue
		}
		// full: under 1 MiB or 1% left, or no inodes (ext4 keeps a few
		// blocks no write can fill)
		free := st.Bavail * uint64(st.Bsize)
		if free < 1<<20 || free*100 < st.Blocks*uint64(st.Bsize) || (st.Files > 0 && st.Ffree == 0) {
			return true
		}
	}
	return false
}

// openPTY makes a pseudo-terminal on the sandbox's own devpts instance,
// its slave side owned by the command user.
func (s *Server) openPTY(rows, cols uint16) (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	master = os.NewFile(uintptr(mfd), "ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock: %w", err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	sfd, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave = os.NewFile(uintptr(sfd), "pts")
	_ = unix.Fchown(sfd, s.hard.UID, s.hard.GID)
	if rows == 0 || cols == 0 {
		rows, cols = 24, 80
	}
	if err := unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, fmt.Errorf("window size: %w", err)
	}
	return master, slave, nil
}

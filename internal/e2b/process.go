package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// Messages of process.Process in the protobuf JSON mapping (lowerCamel
// names, bytes as base64, enums by name or number).

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args"`
	Envs map[string]string `json:"envs"`
	Cwd  *string           `json:"cwd,omitempty"`
}

type ptySize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

type ptyConfig struct {
	Size *ptySize `json:"size"`
}

type startRequest struct {
	Process *processConfig `json:"process"`
	PTY     *ptyConfig     `json:"pty"`
	Tag     *string        `json:"tag"`
	Stdin   *bool          `json:"stdin"`
}

type selector struct {
	PID *uint32 `json:"pid"`
	Tag *string `json:"tag"`
}

type selectorRequest struct {
	Process *selector `json:"process"`
}

type processInput struct {
	Stdin []byte `json:"stdin"`
	PTY   []byte `json:"pty"`
}

type sendInputRequest struct {
	Process *selector     `json:"process"`
	Input   *processInput `json:"input"`
}

// signalValue is the Signal enum, by name or number.
type signalValue int

func (s *signalValue) UnmarshalJSON(b []byte) error {
	var name string
	if json.Unmarshal(b, &name) == nil {
		switch name {
		case "SIGNAL_SIGKILL":
			*s = 9
		case "SIGNAL_SIGTERM":
			*s = 15
		case "SIGNAL_UNSPECIFIED":
			*s = 0
		default:
			return fmt.Errorf("signal %q: SIGNAL_SIGKILL or SIGNAL_SIGTERM", name)
		}
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("signal: a Signal name or number")
	}
	*s = signalValue(n)
	return nil
}

type sendSignalRequest struct {
	Process *selector   `json:"process"`
	Signal  signalValue `json:"signal"`
}

type updateRequest struct {
	Process *selector  `json:"process"`
	PTY     *ptyConfig `json:"pty"`
}

// processEvent is one event of a Start or Connect stream; exactly one
// field is set.
type processEvent struct {
	Start     *startEvent `json:"start,omitempty"`
	Data      *dataEvent  `json:"data,omitempty"`
	End       *endEvent   `json:"end,omitempty"`
	Keepalive *struct{}   `json:"keepalive,omitempty"`
}

type startEvent struct {
	PID uint32 `json:"pid"`
}

type dataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	PTY    []byte `json:"pty,omitempty"`
}

type endEvent struct {
	ExitCode int32   `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

type eventMessage struct {
	Event processEvent `json:"event"`
}

// procKey names a process: pids are only unique within a sandbox.
type procKey struct {
	sandbox string
	pid     uint32
}

// proc is a command started through Start: its output goes to whoever
// is subscribed (the Start stream, Connect streams); it runs on when
// they go away, until it ends or is killed.
type proc struct {
	key    procKey
	execID string
	cfg    processConfig
	tag    string
	tty    bool

	mu   sync.Mutex
	subs map[*sub]struct{}
	end  *endEvent
	fail *rpcError // the stream's error instead of an end event
	done chan struct{}
}

// sub is one stream's subscription.
type sub struct {
	ch   chan processEvent
	gone chan struct{}
}

func newSub() *sub { return &sub{ch: make(chan processEvent, 64), gone: make(chan struct{})} }

func (p *proc) subscribe(s *sub) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.end != nil || p.fail != nil {
		return false
	}
	p.subs[s] = struct{}{}
	return true
}

func (p *proc) unsubscribe(s *sub) {
	p.mu.Lock()
	delete(p.subs, s)
	p.mu.Unlock()
}

// publish hands an event to every subscriber, waiting for each (a reader
// that falls behind slows the command, as a pipe would) unless it left.
func (p *proc) publish(ev processEvent) {
	p.mu.Lock()
	subs := make([]*sub, 0, len(p.subs))
	for s := range p.subs {
		subs = append(subs, s)
	}
	p.mu.Unlock()
	for _, s := range subs {
		select {
		case s.ch <- ev:
		case <-s.gone:
		}
	}
}

// streamWriter turns a command's output into data events.
type streamWriter struct {
	p      *proc
	stream string
}

func (w *streamWriter) Write(b []byte) (int, error) {
	// Connect messages stay small: split large writes.
	for off := 0; off < len(b); off += 64 << 10 {
		end := min(off+64<<10, len(b))
		c := append([]byte(nil), b[off:end]...)
		var d dataEvent
		switch w.stream {
		case "stdout":
			d.Stdout = c
		case "stderr":
			d.Stderr = c
		default:
			d.PTY = c
		}
		w.p.publish(processEvent{Data: &d})
	}
	return len(b), nil
}

func (s *Server) envdRoutes() {
	s.handleEnvd("POST /process.Process/Start", s.start)
	s.handleEnvd("POST /process.Process/Connect", s.connectProcess)
	s.handleEnvd("POST /process.Process/List", s.listProcesses)
	s.handleEnvd("POST /process.Process/SendSignal", s.sendSignal)
	s.handleEnvd("POST /process.Process/SendInput", s.sendInput)
	s.handleEnvd("POST /process.Process/CloseStdin", s.closeStdin)
	s.handleEnvd("POST /process.Process/Update", s.update)
	s.handleEnvd("POST /process.Process/StreamInput", func(w http.ResponseWriter, r *http.Request) {
		writeUnary(w, nil, errorf(codeUnimplemented, "StreamInput (client streaming) is not served: use SendInput"))
	})
	s.fileRoutes()
	s.handleEnvd("/", func(w http.ResponseWriter, r *http.Request) {
		writeEnvdError(w, r, http.StatusNotImplemented, codeUnimplemented, fmt.Sprintf("unsupported: airlock's in-sandbox API does not serve %s %s", r.Method, r.URL.Path))
	})
}

// resolve makes a sandbox path absolute against the user's home.
func resolve(p string) string {
	if p == "" {
		return Home
	}
	if !path.IsAbs(p) {
		p = path.Join(Home, p)
	}
	return path.Clean(p)
}

// start runs a command and streams its events: start{pid} first, then
// its output, then end. A command the policy holds waits for a human (at
// most the door's approval wait) before its start event; a refusal ends
// the stream with permission_denied naming the approval.
func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	var req startRequest
	if rerr := readStreamRequest(r, &req); rerr != nil {
		newStream(w).end(rerr)
		return
	}
	st := newStream(w)
	timeout, terr := connectTimeout(r)
	if terr != nil {
		st.end(terr.(*rpcError))
		return
	}
	if req.Process == nil || req.Process.Cmd == "" {
		st.end(errorf(codeInvalidArgument, "process.cmd is required"))
		return
	}
	id := sandboxOf(r)
	er, outStream, errStream := s.startExec(&req, timeout)
	p := &proc{cfg: *req.Process, tty: er.TTY, subs: map[*sub]struct{}{}, done: make(chan struct{})}
	if req.Tag != nil {
		p.tag = *req.Tag
	}
	first := newSub()
	p.subs[first] = struct{}{}
	if err := s.runStarted(r, id, er, p, outStream, errStream); err != nil {
		st.end(startError(err))
		return
	}
	s.follow(r, st, p, first)
}

// startExec makes the manager's request of a start: the command with its
// arguments, its environment (sorted by name), its directory below Home,
// its timeout and approval wait (at most the timeout), and a terminal if
// asked for; it returns the streams its output is sent as.
func (s *Server) startExec(req *startRequest, timeout time.Duration) (er sandbox.ExecRequest, outStream, errStream string) {
	cfg := *req.Process
	cwd := Home
	if cfg.Cwd != nil && *cfg.Cwd != "" {
		cwd = resolve(*cfg.Cwd)
	}
	keys := make([]string, 0, len(cfg.Envs))
	for k := range cfg.Envs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []string
	for _, k := range keys {
		env = append(env, k+"="+cfg.Envs[k])
	}
	er = sandbox.ExecRequest{
		Argv: append([]string{cfg.Cmd}, cfg.Args...), Env: env, Cwd: cwd, Timeout: timeout,
		OpenStdin: req.Stdin != nil && *req.Stdin, ApprovalWait: s.cfg.ApprovalWait,
	}
	if timeout > 0 && timeout < er.ApprovalWait {
		er.ApprovalWait = timeout
	}
	outStream, errStream = "stdout", "stderr"
	if req.PTY != nil {
		er.TTY, er.OpenStdin = true, true
		if req.PTY.Size != nil {
			er.Rows, er.Cols = req.PTY.Size.Rows, req.PTY.Size.Cols
		}
		outStream, errStream = "pty", "pty"
	}
	return er, outStream, errStream
}

// runStarted runs p's command and returns once it has started (p is then
// in s.procs), or with why it did not. The command outlives this request
// (a background command's caller may disconnect), but not before it has
// started: a caller that goes away while its command waits for approval
// takes the wait with it.
func (s *Server) runStarted(r *http.Request, id string, er sandbox.ExecRequest, p *proc, outStream, errStream string) error {
	execCtx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	var startMu sync.Mutex
	begun := false
	startedc := make(chan struct{})
	go func() {
		select {
		case <-r.Context().Done():
			startMu.Lock()
			if !begun {
				cancel()
			}
			startMu.Unlock()
		case <-startedc:
		}
	}()
	startErr := make(chan error, 1)
	go func() {
		defer cancel()
		_, status, err := s.execs.Exec(execCtx, id, er, func(execID string, pid int) {
			startMu.Lock()
			begun = true
			startMu.Unlock()
			p.execID = execID
			p.key = procKey{sandbox: id, pid: uint32(pid)}
			s.mu.Lock()
			s.procs[p.key] = p
			s.mu.Unlock()
			close(startedc)
		}, &streamWriter{p: p, stream: outStream}, &streamWriter{p: p, stream: errStream})
		startMu.Lock()
		started := begun
		startMu.Unlock()
		if !started {
			startErr <- err
			return
		}
		s.finish(p, status, err)
	}()
	select {
	case <-startedc:
		return nil
	case err := <-startErr:
		if err == nil {
			err = errors.New("the command did not start")
		}
		return err
	}
}

// startError is the stream error for a command that did not start.
func startError(err error) *rpcError {
	var pe *sandbox.PolicyError
	if errors.As(err, &pe) {
		return &rpcError{Code: codePermissionDenied, Message: oneLine(policyMessage(pe))}
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return &rpcError{Code: codeNotFound, Message: oneLine(err.Error())}
	}
	return rpcErr(err)
}

// policyMessage is a refusal as the agent's error shows it: the policy's
// message, the approval and how an operator decides one, and where a
// policy that suits E2B agents is (a first run under the defaults meets
// holds at once: PTYs, git reset --hard, python3 -c).
func policyMessage(pe *sandbox.PolicyError) string {
	msg := "airlock policy: " + pe.Message
	switch {
	case pe.Code == "approval_pending":
		msg += fmt.Sprintf(" (approval %s; an operator decides with 'airlock approve %s' or 'airlock deny %s')", pe.Approval, pe.Approval, pe.Approval)
	case pe.Approval != "":
		msg += fmt.Sprintf(" (approval %s; an operator decides a held command while it waits: 'airlock approvals', then 'airlock approve ID' or 'airlock deny ID')", pe.Approval)
	}
	return msg + "; " + policyDocHint
}

// policyDocHint points a refused agent's operator at the policy to give
// E2B agents.
const policyDocHint = "a policy for E2B agents: docs/e2b.md, \"A policy for E2B agents\""

// finish publishes a command's end to its subscribers and forgets it.
func (s *Server) finish(p *proc, st *runtime.ExitStatus, err error) {
	var end *endEvent
	var fail *rpcError
	switch {
	case (err != nil || st.Signal != "") && !s.usage.Live(p.key.sandbox):
		// The sandbox was killed under the command (kill, its timeout):
		// envd's stream breaks off with the sandbox, which the SDKs
		// report as a TimeoutError ("unavailable" is theirs for a
		// sandbox gone: the same error, from every SDK version, with no
		// health probe needed).
		fail = errorf(codeUnavailable, "the sandbox was killed or reached its end of life while the command ran")
	case err != nil:
		fail = rpcErr(err)
	case st.Limit == runtime.LimitTimeout:
		fail = errorf(codeDeadlineExceeded, "the command ran past its timeout (%s) and was killed", st.Duration.Round(time.Millisecond))
	default:
		// As envd reports a Go process state: the status, and the same
		// text as the error of a command that did not exit 0.
		end = &endEvent{ExitCode: int32(st.Code), Exited: true, Status: "exit status " + strconv.Itoa(st.Code)}
		if st.Signal != "" {
			name := st.Signal
			if n := unix.SignalNum(st.Signal); n != 0 {
				name = n.String()
			}
			end = &endEvent{ExitCode: -1, Status: "signal: " + name}
		}
		if end.ExitCode != 0 {
			msg := end.Status
			end.Error = &msg
		}
		if st.Limit != runtime.LimitNone {
			msg := fmt.Sprintf("%s: the command hit the sandbox's %s limit", end.Status, st.Limit)
			end.Error = &msg
		}
	}
	s.mu.Lock()
	delete(s.procs, p.key)
	s.mu.Unlock()
	p.mu.Lock()
	p.end, p.fail = end, fail
	p.mu.Unlock()
	close(p.done)
}

// follow streams a process's events to one subscriber until its end, or
// until the caller goes away (the process runs on).
func (s *Server) follow(r *http.Request, st *stream, p *proc, sb *sub) {
	defer close(sb.gone)
	defer p.unsubscribe(sb)
	if err := st.send(eventMessage{Event: processEvent{Start: &startEvent{PID: p.key.pid}}}); err != nil {
		return
	}
	interval := s.cfg.KeepaliveMax
	// Compared as counts: a count that would wrap a Duration is ignored.
	if v, err := strconv.ParseInt(r.Header.Get("Keepalive-Ping-Interval"), 10, 64); err == nil && v > 0 && v < int64(interval/time.Second) {
		interval = time.Duration(v) * time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case ev := <-sb.ch:
			if st.send(eventMessage{Event: ev}) != nil {
				return
			}
		case <-tick.C:
			if st.send(eventMessage{Event: processEvent{Keepalive: &struct{}{}}}) != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-p.done:
			for {
				select {
				case ev := <-sb.ch:
					if st.send(eventMessage{Event: ev}) != nil {
						return
					}
					continue
				default:
				}
				break
			}
			p.mu.Lock()
			end, fail := p.end, p.fail
			p.mu.Unlock()
			if fail != nil {
				st.end(fail)
				return
			}
			st.end(nil, eventMessage{Event: processEvent{End: end}})
			return
		}
	}
}

// lookup finds a running process of the request's sandbox.
func (s *Server) lookup(r *http.Request, sel *selector) (*proc, *rpcError) {
	if sel == nil || (sel.PID == nil && sel.Tag == nil) {
		return nil, errorf(codeInvalidArgument, "process selector (pid or tag) is required")
	}
	id := sandboxOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if sel.PID != nil {
		if p := s.procs[procKey{sandbox: id, pid: *sel.PID}]; p != nil {
			return p, nil
		}
		return nil, errorf(codeNotFound, "process with pid %d not found (it is not running)", *sel.PID)
	}
	for k, p := range s.procs {
		if k.sandbox == id && p.tag == *sel.Tag {
			return p, nil
		}
	}
	return nil, errorf(codeNotFound, "process with tag %q not found", *sel.Tag)
}

func (s *Server) connectProcess(w http.ResponseWriter, r *http.Request) {
	var req selectorRequest
	st := newStream(w)
	if rerr := readStreamRequest(r, &req); rerr != nil {
		st.end(rerr)
		return
	}
	p, rerr := s.lookup(r, req.Process)
	if rerr != nil {
		st.end(rerr)
		return
	}
	sb := newSub()
	if !p.subscribe(sb) {
		st.end(errorf(codeNotFound, "process %d has ended", p.key.pid))
		return
	}
	s.follow(r, st, p, sb)
}

type processInfo struct {
	Config processConfig `json:"config"`
	PID    uint32        `json:"pid"`
	Tag    *string       `json:"tag,omitempty"`
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	id := sandboxOf(r)
	s.mu.Lock()
	out := []processInfo{}
	for k, p := range s.procs {
		if k.sandbox != id {
			continue
		}
		pi := processInfo{Config: p.cfg, PID: k.pid}
		if pi.Config.Envs == nil {
			pi.Config.Envs = map[string]string{}
		}
		if pi.Config.Args == nil {
			pi.Config.Args = []string{}
		}
		if p.tag != "" {
			t := p.tag
			pi.Tag = &t
		}
		out = append(out, pi)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	// The configs are as the client sent them: a granted secret in an
	// environment value or an argument is shown redacted, like every
	// other record.
	b, err := s.red.RedactedJSON(map[string]any{"processes": out})
	if err != nil {
		writeUnary(w, nil, errorf(codeInternal, "%v", err))
		return
	}
	writeUnary(w, b, nil)
}

func (s *Server) sendSignal(w http.ResponseWriter, r *http.Request) {
	var req sendSignalRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	var sig syscall.Signal
	switch req.Signal {
	case 9:
		sig = syscall.SIGKILL
	case 15:
		sig = syscall.SIGTERM
	default:
		writeUnary(w, nil, errorf(codeInvalidArgument, "signal %d: SIGNAL_SIGKILL or SIGNAL_SIGTERM", req.Signal))
		return
	}
	p, rerr := s.lookup(r, req.Process)
	if rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	if err := s.execs.Running(p.key.sandbox, p.execID).Signal(r.Context(), sig); err != nil {
		writeUnary(w, nil, rpcErr(err))
		return
	}
	writeUnary(w, struct{}{}, nil)
}

func (s *Server) sendInput(w http.ResponseWriter, r *http.Request) {
	var req sendInputRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	p, rerr := s.lookup(r, req.Process)
	if rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	if req.Input == nil {
		writeUnary(w, nil, errorf(codeInvalidArgument, "input is required"))
		return
	}
	data := req.Input.Stdin
	if p.tty {
		data = append(data, req.Input.PTY...)
	} else if len(req.Input.PTY) > 0 {
		writeUnary(w, nil, errorf(codeFailedPrecond, "process %d has no terminal: send stdin", p.key.pid))
		return
	}
	if err := s.execs.Running(p.key.sandbox, p.execID).Input(r.Context(), data); err != nil {
		rerr := rpcErr(err)
		if rerr.Code == codeFailedPrecond {
			rerr.Message = fmt.Sprintf("process %d has no open stdin (start it with stdin: true): %s", p.key.pid, rerr.Message)
		}
		writeUnary(w, nil, rerr)
		return
	}
	writeUnary(w, struct{}{}, nil)
}

func (s *Server) closeStdin(w http.ResponseWriter, r *http.Request) {
	var req selectorRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	p, rerr := s.lookup(r, req.Process)
	if rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	if err := s.execs.Running(p.key.sandbox, p.execID).CloseStdin(r.Context()); err != nil {
		writeUnary(w, nil, rpcErr(err))
		return
	}
	writeUnary(w, struct{}{}, nil)
}

func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	var req updateRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	p, rerr := s.lookup(r, req.Process)
	if rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	if req.PTY == nil || req.PTY.Size == nil {
		writeUnary(w, struct{}{}, nil)
		return
	}
	if err := s.execs.Running(p.key.sandbox, p.execID).Resize(r.Context(), req.PTY.Size.Rows, req.PTY.Size.Cols); err != nil {
		writeUnary(w, nil, rpcErr(err))
		return
	}
	writeUnary(w, struct{}{}, nil)
}

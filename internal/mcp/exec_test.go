package mcp_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcp"
	"github.com/airlock-dev/airlock/sdk"
)

// exec answers with the exit code, each stream, and the counts; a
// failing command is a tool error with its output.
func TestExecRunsAndReports(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	r := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "echo out; echo err >&2"})
	if r.text != "exit code 0\nstdout:\nout\n\nstderr:\nerr\n" || num(t, r.st, "exit_code") != 0 ||
		num(t, r.st, "stdout_bytes") != 4 || num(t, r.st, "stderr_bytes") != 4 || r.st["exec_id"] == "" {
		t.Errorf("exec: %q %v", r.text, r.st)
	}
	r = e.fails("exec", map[string]any{"sandbox_id": sb, "command": "echo broken; exit 3", "cwd": "/tmp"}, "exit code 3\nstdout:\nbroken\n")
	if num(t, r.st, "exit_code") != 3 {
		t.Errorf("exit code: %v", r.st)
	}
	// The structured result does not carry the output a second time.
	if strings.Contains(fmt.Sprint(r.st), "broken") {
		t.Errorf("output in the structured result: %v", r.st)
	}
	// A command that cannot start (no such directory) is an error naming it.
	e.fails("exec", map[string]any{"sandbox_id": sb, "command": "true", "cwd": "/workspace/nope"}, "/workspace/nope")
	e.fails("exec", map[string]any{"sandbox_id": "0123456789ab", "command": "true"}, "not_found")
}

// Bad arguments are tool errors naming the argument, and run nothing.
func TestExecArgumentErrors(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"sandbox_id": sb}, `missing properties: ["command"]`},
		{map[string]any{"command": "true"}, `missing properties: ["sandbox_id"]`},
		{map[string]any{"sandbox_id": sb, "command": ""}, `argument "command" must not be empty`},
		{map[string]any{"sandbox_id": "", "command": ""}, `argument "sandbox_id" must not be empty`},
		{map[string]any{"sandbox_id": sb, "command": "true", "timeout_seconds": -1}, "timeout_seconds must be 0 to 86400 seconds"},
		{map[string]any{"sandbox_id": sb, "command": "true", "wait_seconds": 86401}, "wait_seconds must be 0 to 86400 seconds"},
		{map[string]any{"sandbox_id": sb, "command": "true", "approval_wait_seconds": -0.5}, "approval_wait_seconds must be 0 to 86400"},
		{map[string]any{"sandbox_id": sb, "command": "true", "stdin_open": true}, "stdin_open needs background: true"},
		{map[string]any{"sandbox_id": sb, "command": "true", "timeout_seconds": "10"}, `validating "arguments"`},
		{map[string]any{"sandbox_id": sb, "command": nil}, `validating "arguments"`},
		{map[string]any{"sandbox_id": sb, "command": "true", "shell": "bash"}, `validating "arguments"`},
	} {
		e.fails("exec", c.args, c.want)
	}
	list, err := e.op.ListExecs(context.Background(), sb)
	if err != nil || len(list) != 0 {
		t.Errorf("refused calls ran commands: %d %v", len(list), err)
	}
}

// A command longer than exec shows keeps its head and tail, cut at lines,
// with a marker naming what was left out; exec_output reads that part by
// offset, a tail, or the other stream, and refuses bad ranges.
func TestExecOutputTruncationAndPaging(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	r := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "seq 1 20000; echo VERDICT: 3 failed; echo warn >&2"})
	m := regexp.MustCompile(`\[\.\.\. (\d+) bytes \((\d+) lines\) left out at offset (\d+); read them with exec_output \.\.\.\]\n`).FindStringSubmatch(r.text)
	if m == nil {
		t.Fatalf("no marker: %.300q", r.text)
	}
	omitted, _ := strconv.Atoi(m[1])
	offset, _ := strconv.Atoi(m[3])
	total := num(t, r.st, "stdout_bytes")
	if !strings.HasPrefix(r.text, "exit code 0\nstdout:\n1\n2\n") || !strings.Contains(r.text, "VERDICT: 3 failed\n\nstderr:\nwarn\n") ||
		num(t, r.st, "omitted_bytes") != omitted || total <= 16<<10 || len(r.text) > 17<<10 {
		t.Fatalf("head and tail: %d bytes shown, %v", len(r.text), r.st)
	}
	head, tail, _ := strings.Cut(r.text, m[0])
	if shown := len(strings.TrimPrefix(head, "exit code 0\nstdout:\n")) + len(tail[:strings.Index(tail, "\n\nstderr:")+1]); shown+omitted != total {
		t.Errorf("shown %d + omitted %d != %d", shown, omitted, total)
	}
	id := r.st["exec_id"]
	// The left-out part starts at a line.
	p := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "offset": offset, "limit": 100})
	lines := strings.Split(p.text, "\n")
	if !strings.HasPrefix(lines[0], fmt.Sprintf("[exec %s ended, exit code 0; stdout bytes %d-", id, offset)) || p.st["running"] != false ||
		num(t, p.st, "offset") != offset || num(t, p.st, "total_bytes") != total || p.st["stored_all"] != true {
		t.Fatalf("page: %q %v", p.text, p.st)
	}
	next := num(t, p.st, "next_offset")
	if next-offset > 100 || !strings.HasSuffix(p.text, "\n") || strings.HasSuffix(head, lines[1]+"\n") {
		t.Errorf("page not cut at lines after the head: %q (next %d)", p.text, next)
	}
	if se := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "stream": "stderr"}); !strings.HasSuffix(se.text, "stderr bytes 0-5 of 5]\nwarn\n") {
		t.Errorf("stderr: %q", se.text)
	}
	if end := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "offset": total + 10}); num(t, end.st, "offset") != total || num(t, end.st, "next_offset") != total {
		t.Errorf("past the end: %v", end.st)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"sandbox_id": sb, "exec_id": id, "stream": "stdin"}, `stream "stdin": want stdout or stderr`},
		{map[string]any{"sandbox_id": sb, "exec_id": id, "limit": 65537}, "at most 65536"},
		{map[string]any{"sandbox_id": sb, "exec_id": id, "tail": -1}, "must not be negative"},
		{map[string]any{"sandbox_id": sb, "exec_id": id, "offset": -5}, "must not be negative"},
		{map[string]any{"sandbox_id": sb, "exec_id": id, "wait_seconds": -1}, "wait_seconds must be 0 to 86400"},
		{map[string]any{"sandbox_id": sb, "exec_id": ""}, `argument "exec_id" must not be empty`},
		{map[string]any{"sandbox_id": sb}, `missing properties: ["exec_id"]`},
		{map[string]any{"sandbox_id": sb, "exec_id": "e-0000000000000000"}, "not_found"},
	} {
		e.fails("exec_output", c.args, c.want)
	}
}

// A command the daemon cut at its output limit says so: exec notes that
// only the first part is stored, exec_output that it is not all there.
func TestExecOutputOverTheDaemonLimit(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	// 17 MiB of output, over the daemon's default limit (16 MiB a stream).
	r := e.call("exec", map[string]any{"sandbox_id": sb, "command": "head -c 17825792 /dev/zero"})
	if !strings.Contains(r.text, "[the daemon stored only the first part of the output: over its output limit]") || num(t, r.st, "stdout_bytes") != 17<<20 {
		t.Fatalf("over the limit: %.300q %v", r.text, r.st)
	}
	o := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": r.st["exec_id"], "tail": 10})
	if o.st["stored_all"] != false {
		t.Errorf("stored_all: %v", o.st)
	}
}

// A command the policy holds answers at once with the approval and the
// hint to approve/deny; a retry joins it (the human is asked once); a
// denial answers every retry with the decider's reason; get_approval
// reads it.
func TestExecHeldAndDenied(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	cmd := map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/old"}
	r := e.call("exec", cmd)
	ap, _ := r.st["approval_id"].(string)
	if !r.IsError || r.st["approval_state"] != "pending" || r.st["code"] != "approval_pending" || !strings.HasPrefix(ap, "ap-") ||
		!strings.Contains(r.text, "destructive") || !strings.Contains(r.text, "airlock approve/deny") || !strings.Contains(r.text, "get_approval") {
		t.Fatalf("not held: %q %v", r.text, r.st)
	}
	r = e.call("exec", cmd)
	if r.st["approval_id"] != ap || !strings.Contains(r.text, "not asked again") {
		t.Fatalf("a retry made a new approval: %q %v", r.text, r.st)
	}
	pending, err := e.op.Approvals(context.Background(), sb, "pending")
	if err != nil || len(pending) != 1 {
		t.Fatalf("%d pending approvals for one command: %v", len(pending), err)
	}
	g := e.ok("get_approval", map[string]any{"approval_id": ap})
	if g.st["state"] != "pending" || g.st["sandbox_id"] != sb || !strings.Contains(fmt.Sprint(g.st["command"]), "rm -rf /workspace/old") {
		t.Errorf("get_approval pending: %v", g.st)
	}
	if _, err := e.op.Deny(context.Background(), ap, "keep old for now"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r = e.call("exec", cmd)
		if !r.IsError || r.st["approval_state"] != "denied" || r.st["reason"] != "keep old for now" || r.st["code"] != "approval_denied" ||
			!strings.Contains(r.text, "keep old for now") || !strings.Contains(r.text, "Do not retry") {
			t.Fatalf("denial: %q %v", r.text, r.st)
		}
	}
	g = e.ok("get_approval", map[string]any{"approval_id": ap})
	if g.st["state"] != "denied" || g.st["reason"] != "keep old for now" || !strings.HasPrefix(fmt.Sprint(g.st["decided_by"]), "operator") {
		t.Errorf("get_approval denied: %v", g.st)
	}
	e.fails("get_approval", map[string]any{"approval_id": ""}, `argument "approval_id" must not be empty`)
	e.fails("get_approval", map[string]any{"approval_id": "ap-0000000000000000"}, "not_found")
	// A command a rule denies is an error with the rule's reason.
	r = e.fails("exec", map[string]any{"sandbox_id": sb, "command": "curl http://127.0.0.1:1/"}, "no downloads here")
	if r.st["code"] != "policy_denied" {
		t.Errorf("denied by a rule: %v", r.st)
	}
}

// exec waits for a human's decision with approval_wait_seconds, sending
// progress; once approved the command runs. Without a decision in that
// time it answers pending.
func TestExecWaitsForApproval(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	var mu sync.Mutex
	var msgs []string
	cs := e.connectWith(&mcpsdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcpsdk.ProgressNotificationClientRequest) {
		mu.Lock()
		msgs = append(msgs, r.Params.Message)
		mu.Unlock()
	}})
	human, stop := context.WithCancel(context.Background())
	defer stop()
	decided := make(chan struct{})
	seen := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(msgs, "|"), "waiting for a human")
	}
	go func() { // the human approves what is pending, once the agent was told it waits
		defer close(decided)
		for {
			select {
			case <-human.Done():
				return
			case <-time.After(30 * time.Millisecond):
			}
			if !seen() {
				continue
			}
			list, _ := e.op.Approvals(context.Background(), sb, "pending")
			for _, a := range list {
				_, _ = e.op.Approve(context.Background(), a.ID, sdk.ApproveOptions{})
			}
		}
	}()
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "exec", Meta: mcpsdk.Meta{"progressToken": "p1"},
		Arguments: map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/old2 && echo gone", "approval_wait_seconds": 5}})
	if err != nil {
		t.Fatal(err)
	}
	r := resultOf(res)
	if r.IsError || !strings.Contains(r.text, "gone") {
		t.Fatalf("approved command: %q %v", r.text, r.st)
	}
	mu.Lock()
	got := strings.Join(msgs, "|")
	mu.Unlock()
	if !strings.Contains(got, "waiting for a human to decide approval ap-") {
		t.Errorf("progress while waiting: %q", got)
	}
	stop()
	<-decided
	// Nobody decides: after the wait, pending.
	r = e.call("exec", map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/old3", "approval_wait_seconds": 0.1})
	if !r.IsError || r.st["approval_state"] != "pending" {
		t.Errorf("undecided: %q %v", r.text, r.st)
	}
}

// connectWith is another client session with the same server.
func (e *env) connectWith(opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	e.t.Helper()
	return e.connectServer(e.srv, opts)
}

// connectServer is a client session with s; opts may be nil.
func (e *env) connectServer(s *mcp.Server, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	e.t.Helper()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := s.SDKServer().Connect(context.Background(), st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "mcp-test", Version: "1.0"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Past wait_seconds exec answers with the exec id while the command runs
// on; exec_output shows the head and tail seen so far while it runs, and
// waits for its end (wait_seconds), then reads it by offset.
func TestExecSoftDeadlineAndLiveOutput(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	r := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "echo started; sleep 0.3; echo done", "wait_seconds": 0.1, "timeout_seconds": 30})
	id, _ := r.st["exec_id"].(string)
	if r.st["running"] != true || id == "" || !strings.Contains(r.text, "still running after") || !strings.Contains(r.text, "timeout 30s") || !strings.Contains(r.text, "exec_output") {
		t.Fatalf("soft deadline: %q %v", r.text, r.st)
	}
	live := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id})
	if live.st["running"] != true || !strings.Contains(live.text, "running; stdout so far: 8 bytes") || !strings.HasSuffix(live.text, "\nstarted\n") {
		t.Errorf("live output: %q %v", live.text, live.st)
	}
	if se := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "stream": "stderr"}); !strings.Contains(se.text, "stderr so far: 0 bytes") {
		t.Errorf("live stderr: %q", se.text)
	}
	done := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "wait_seconds": 5})
	if done.st["running"] != false || num(t, done.st, "exit_code") != 0 || !strings.HasSuffix(done.text, "of 13]\nstarted\ndone\n") {
		t.Errorf("after its end: %q %v", done.text, done.st)
	}
}

// An exec that runs past a second sends progress with its last output
// line to a client that asked for progress.
func TestExecProgress(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	got := make(chan string, 100)
	cs := e.connectWith(&mcpsdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcpsdk.ProgressNotificationClientRequest) {
		got <- r.Params.Message
	}})
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "exec", Meta: mcpsdk.Meta{"progressToken": 7},
		Arguments: map[string]any{"sandbox_id": sb, "command": "echo compiling; sleep 0.15; echo linking >&2; sleep 0.1"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	close(got)
	var msgs []string
	for m := range got {
		msgs = append(msgs, m)
	}
	if j := strings.Join(msgs, "|"); !strings.Contains(j, "compiling") || len(msgs) < 3 {
		t.Errorf("progress: %q", j)
	}
}

// A background command answers at once; exec_input writes its stdin and
// closes it; exec_kill signals it; list_execs shows both; bad calls are
// tool errors.
func TestExecBackgroundInputKill(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	r := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "cat", "background": true, "stdin_open": true})
	id, _ := r.st["exec_id"].(string)
	if r.st["running"] != true || !strings.HasPrefix(r.text, "started exec "+id+" (pid ") {
		t.Fatalf("background: %q %v", r.text, r.st)
	}
	if in := e.ok("exec_input", map[string]any{"sandbox_id": sb, "exec_id": id, "data": "hello\n", "close": true}); in.text != "wrote 6 bytes to exec "+id+" (closed: true)" {
		t.Errorf("input: %q", in.text)
	}
	out := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "wait_seconds": 5})
	if out.st["running"] != false || !strings.HasSuffix(out.text, "]\nhello\n") {
		t.Errorf("cat's output: %q %v", out.text, out.st)
	}
	e.fails("exec_input", map[string]any{"sandbox_id": sb, "exec_id": id}, "nothing to do: give data or close")
	e.fails("exec_input", map[string]any{"sandbox_id": sb, "exec_id": "", "data": "x"}, `argument "exec_id" must not be empty`)
	e.fails("exec_input", map[string]any{"sandbox_id": sb, "exec_id": id, "data": "late"}, "has ended")
	e.fails("exec_input", map[string]any{"sandbox_id": sb, "exec_id": id, "close": true}, "has ended")

	r = e.ok("exec", map[string]any{"sandbox_id": sb, "command": "sleep 30", "background": true})
	sleeper, _ := r.st["exec_id"].(string)
	if k := e.ok("exec_kill", map[string]any{"sandbox_id": sb, "exec_id": sleeper, "signal": "TERM"}); k.text != "sent SIGTERM to exec "+sleeper {
		t.Errorf("kill: %q", k.text)
	}
	if o := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": sleeper, "wait_seconds": 5}); o.st["running"] != false || num(t, o.st, "exit_code") != 143 {
		t.Errorf("after TERM: %q %v", o.text, o.st)
	}
	e.fails("exec_kill", map[string]any{"sandbox_id": sb, "exec_id": sleeper, "signal": "NOPE"}, `signal "SIGNOPE": use a number or one of SIGKILL`)
	e.fails("exec_kill", map[string]any{"sandbox_id": "", "exec_id": sleeper}, `argument "sandbox_id" must not be empty`)
	// The default signal is KILL.
	r = e.ok("exec", map[string]any{"sandbox_id": sb, "command": "trap '' TERM; sleep 30", "background": true})
	if k := e.ok("exec_kill", map[string]any{"sandbox_id": sb, "exec_id": r.st["exec_id"]}); !strings.HasPrefix(k.text, "sent SIGKILL") {
		t.Errorf("default signal: %q", k.text)
	}
	if o := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": r.st["exec_id"], "wait_seconds": 5}); num(t, o.st, "exit_code") != 137 {
		t.Errorf("after KILL: %v", o.st)
	}
	l := e.ok("list_execs", map[string]any{"sandbox_id": sb})
	execs, _ := l.st["execs"].([]any)
	if num(t, l.st, "total") != 3 || len(execs) != 3 || execs[0].(map[string]any)["id"] != id || execs[0].(map[string]any)["running"] != false {
		t.Errorf("list_execs: %v", l.st)
	}
	e.fails("list_execs", map[string]any{"sandbox_id": ""}, `argument "sandbox_id" must not be empty`)
	e.fails("list_execs", map[string]any{"sandbox_id": "0123456789ab"}, "not_found")
	e.fails("exec", map[string]any{"sandbox_id": "0123456789ab", "command": "true", "background": true}, "not_found")
}

// list_execs shows the last 50 commands, and how many there were.
func TestListExecsLast50(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	for i := range 52 {
		if _, err := e.agent.Exec(context.Background(), sb, sdk.ExecRequest{Argv: []string{"true", strconv.Itoa(i)}}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	l := e.ok("list_execs", map[string]any{"sandbox_id": sb})
	execs, _ := l.st["execs"].([]any)
	if num(t, l.st, "total") != 52 || len(execs) != 50 || fmt.Sprint(execs[49].(map[string]any)["argv"]) != "[true 51]" {
		t.Errorf("list_execs: %d of %v", len(execs), l.st["total"])
	}
}

// Cancelling the call before the soft deadline kills the command; the
// timeout (timeout_seconds, else the server's) bounds one that runs on.
func TestExecCancelAndTimeout(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(150 * time.Millisecond)
		cancel()
	}()
	if _, err := e.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "exec", Arguments: map[string]any{"sandbox_id": sb, "command": "sleep 30"}}); err == nil {
		t.Fatal("a cancelled call answered")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		list, err := e.op.ListExecs(context.Background(), sb)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 && !list[0].Ended.IsZero() {
			if list[0].Status == nil || list[0].Status.Code != 137 {
				t.Errorf("cancelled command ended with %+v", list[0].Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled command still runs: %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := e.fails("exec", map[string]any{"sandbox_id": sb, "command": "sleep 30", "timeout_seconds": 0.2}, "exit code 124 (limit hit: timeout)")
	if r.st["limit"] != "timeout" {
		t.Errorf("timeout: %v", r.st)
	}
	// The server's own timeout, for a call that names none.
	srv := &mcp.Server{Client: e.agent, Version: "test", ExecTimeout: 200 * time.Millisecond}
	cs := e.connectServer(srv, nil)
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "exec", Arguments: map[string]any{"sandbox_id": sb, "command": "sleep 30"}})
	if err != nil || !res.IsError || resultOf(res).st["limit"] != "timeout" {
		t.Errorf("server timeout: %v %+v", err, res)
	}
}

// leak is a secret-named variable's value: the daemon learns it at
// create and redacts it from what it stores and shows over TCP.
const leak = "Zq7vK2pXw9LmN4tR8sYb3HcJ6dFg"

// What the MCP tools read back from the daemon (stored output, the
// command records, a held command's approval) never shows a secret,
// whether it was printed, put in the command line or held for a human.
func TestRedactedReadBacks(t *testing.T) {
	e := newEnv(t)
	sb, _ := e.ok("create_sandbox", map[string]any{"env": []string{"API_TOKEN=" + leak}}).st["sandbox_id"].(string)
	r := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "echo token=$API_TOKEN; echo " + leak + " >&2"})
	id := r.st["exec_id"]
	for _, stream := range []string{"stdout", "stderr"} {
		o := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "stream": stream})
		if strings.Contains(o.text, leak) || !strings.Contains(o.text, "[REDACTED") {
			t.Errorf("stored %s: %q", stream, o.text)
		}
		if o := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "stream": stream, "tail": 100}); strings.Contains(o.text, leak) {
			t.Errorf("stored %s, tail: %q", stream, o.text)
		}
	}
	held := e.call("exec", map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/" + leak})
	ap, _ := held.st["approval_id"].(string)
	if ap == "" {
		t.Fatalf("not held: %q", held.text)
	}
	for name, res := range map[string]result{
		"list_execs":     e.ok("list_execs", map[string]any{"sandbox_id": sb}),
		"get_approval":   e.ok("get_approval", map[string]any{"approval_id": ap}),
		"held exec":      held,
		"joined exec":    e.call("exec", map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/" + leak}),
		"list_sandboxes": e.ok("list_sandboxes", map[string]any{"id": sb}),
	} {
		if strings.Contains(res.text, leak) || strings.Contains(toJSON(res.st), leak) {
			t.Errorf("%s shows the secret: %q", name, res.text)
		}
	}
	// The operator, who decides, sees the command as it would run.
	if a, err := e.op.GetApproval(context.Background(), ap); err != nil || !strings.Contains(a.Prompt.Command, leak) {
		t.Errorf("the approver's view: %+v %v", a, err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeClient finds node and the pinned npm packages of test/node.
func nodeClient(t *testing.T, pkg string) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	dir, _ = filepath.Abs("../../test/node")
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node or test/node/node_modules is missing: run scripts/setup.sh")
		}
		t.Skip("node or test/node/node_modules is missing: run scripts/setup.sh")
	}
	return node, dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (d *daemonProc) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := d.client.Get("http://airlock" + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

type approvalRec struct {
	ID          string `json:"id"`
	SandboxID   string `json:"sandbox_id"`
	State       string `json:"state"`
	RequestedBy string `json:"requested_by"`
	DecidedBy   string `json:"decided_by"`
	Prompt      struct {
		Command string `json:"command"`
	} `json:"prompt"`
}

// TestE2BWithTheRealSDK points the published e2b npm SDK at a real daemon
// and runs an agent's whole session through it (test/node/e2b_client.mjs),
// while this test plays the human operator: it approves the commands it is
// meant to approve and leaves one to time out. Then it checks the
// daemon's side: the approvals, the exec records with their policy
// decisions, and an intact audit chain.
//
// It runs once per SDK version pinned in test/node/package.json (npm
// aliases): the current one and older ones still in use, whose defaults
// (allow_internet_access on every create, timeout 300 on every connect)
// the door must take as E2B does.
func TestE2BWithTheRealSDK(t *testing.T) {
	for _, sdk := range e2bSDKs {
		t.Run(sdk, func(t *testing.T) { testE2BWithSDK(t, sdk) })
	}
}

// e2bSDKs are the e2b packages of test/node/package.json: e2b 2.51.0,
// e2b-2-45 (2.45.0) and e2b-1-13 (1.13.2).
var e2bSDKs = []string{"e2b", "e2b-2-45", "e2b-1-13"}

func testE2BWithSDK(t *testing.T, sdk string) {
	node, dir := nodeClient(t, sdk)
	// The 1.x line reads neither E2B_API_URL nor E2B_SANDBOX_URL: it
	// reaches only https://api.$E2B_DOMAIN and, per sandbox, the host
	// https://49983-ID.$E2B_DOMAIN, which the door routes with
	// --e2b-domain and TLS; e2b_client.mjs adjusts what it expects per
	// version (1.x throws SandboxError where 2.x throws
	// AuthenticationError, and has no network options).
	dist, err := os.ReadFile(filepath.Join(dir, "node_modules", sdk, "dist", "index.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	byHost := !bytes.Contains(dist, []byte("E2B_SANDBOX_URL"))
	e := newEnv(t)
	pf := filepath.Join(filepath.Dir(e.state), "default.yaml")
	out, _, _ := e.run("", "policy", "default")
	// (public web, so that allow_internet_access false is seen to take
	// away what the daemon's policy gives)
	out = strings.Replace(out, "egress:\n  grant: []", "egress:\n  grant: [public_web]", 1)
	if err := os.WriteFile(pf, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	args := []string{"--policy", pf, "--approval-wait", "4s", "--e2b-listen", addr}
	env := []string{"E2B_SDK=" + sdk, "E2B_DEBUG=", "E2B_API_URL=http://" + addr, "E2B_SANDBOX_URL=http://" + addr}
	nodeArgs := []string{filepath.Join(dir, "e2b_client.mjs")}
	if byHost {
		cert, key := loopbackCert(t, e2bTestDomain)
		args = append(args, "--e2b-domain", e2bTestDomain, "--e2b-tls-cert", cert, "--e2b-tls-key", key)
		env = []string{"E2B_SDK=" + sdk, "E2B_DEBUG=", "E2B_DOMAIN=" + e2bTestDomain, "NODE_EXTRA_CA_CERTS=" + cert,
			"E2B_HOSTS_DOMAIN=" + e2bTestDomain, "E2B_HOSTS_ADDR=" + addr, "E2B_API_URL=", "E2B_SANDBOX_URL="}
		nodeArgs = append([]string{"--import", filepath.Join(dir, "e2b_hosts.mjs")}, nodeArgs...)
	}
	d := e.startDaemon(t, args...)
	key, _, code := e.run("", "apikey", "create", "--socket", d.sock, "--e2b", "--name", "e2b-agent")
	key = strings.TrimSpace(key)
	if code != 0 || !strings.HasPrefix(key, "e2b_") || len(key) != 44 {
		t.Fatalf("apikey create --e2b: %d %q", code, key)
	}
	// The record names the key that acted (its id, never the key).
	var keys []struct{ ID, Name string }
	ls, _, _ := e.run("", "apikey", "ls", "--socket", d.sock, "--json")
	if err := json.Unmarshal([]byte(ls), &keys); err != nil || len(keys) != 1 || keys[0].Name != "e2b-agent" {
		t.Fatalf("apikey ls: %v %q", err, ls)
	}
	actor := "apikey:" + keys[0].ID

	// The operator: approve what the agent is meant to get.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	approved := make(chan []string, 1)
	go func() {
		var done []string
		defer func() { approved <- done }()
		for ctx.Err() == nil && len(done) < 2 {
			var l struct {
				Approvals []approvalRec `json:"approvals"`
			}
			resp, err := d.client.Get("http://airlock/v1/approvals?state=pending")
			if err == nil {
				_ = json.NewDecoder(resp.Body).Decode(&l)
				resp.Body.Close()
			}
			for _, a := range l.Approvals {
				if strings.Contains(a.Prompt.Command, "approve-me") || strings.Contains(a.Prompt.Command, "bash -i -l") {
					req, _ := http.NewRequest("POST", "http://airlock/v1/approvals/"+a.ID+"/approve", strings.NewReader(`{}`))
					req.Header.Set("X-Airlock-Actor", "reviewer")
					if resp, err := d.client.Do(req); err == nil {
						resp.Body.Close()
						if resp.StatusCode == 200 {
							done = append(done, a.Prompt.Command)
						}
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	cmd := exec.Command(node, nodeArgs...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "E2B_API_KEY="+key), env...)
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	err = cmd.Run()
	cancel()
	got := <-approved
	if err != nil || !strings.Contains(o.String(), `{"ok":true}`) {
		t.Fatalf("e2b client: %v\nstdout: %s\nstderr: %s\ndaemon: %s", err, o.String(), er.String(), d.log)
	}
	t.Logf("e2b client:\n%s", o.String())
	if len(got) != 2 {
		t.Fatalf("approved %q, want the held rm and the terminal", got)
	}
	ids := map[string]string{}
	for _, line := range strings.Split(o.String(), "\n") {
		var step struct{ Step, ID string }
		if json.Unmarshal([]byte(line), &step) == nil && step.ID != "" {
			ids[step.Step] = step.ID
		}
	}
	sandboxID := ids["create"]
	checkNoInternet(t, d, ids["closed"], ids["open"])
	// The 1.x line has no network options, nor pause and snapshots.
	v1 := strings.HasPrefix(sdk, "e2b-1-")
	if !v1 {
		checkFenced(t, d, ids["fenced"])
		for dest, want := range map[string]string{"https://1.2.3.4/": "allow public-web", "https://1.2.3.5/": "deny e2b-deny-out", "https://1.2.3.6/": "allow public-web"} {
			if got := egressDecision(t, d, ids["rewired"], dest); got != want {
				t.Errorf("after updateNetwork {denyOut: [1.2.3.5]}: %s: %s, want %s", dest, got, want)
			}
		}
		if ids["snapshot"] != "e2b-session" {
			t.Errorf("the session made no snapshot: %v", ids)
		}
	}

	// The approvals: asked for by the E2B door's key, decided by a human,
	// and the one nobody decided expired.
	var l struct {
		Approvals []approvalRec `json:"approvals"`
	}
	d.getJSON(t, "/v1/approvals?sandbox="+sandboxID, &l)
	states := map[string]string{}
	for _, a := range l.Approvals {
		// (commands come through the access token the door's key was given)
		if a.SandboxID != sandboxID || a.RequestedBy != actor {
			t.Errorf("approval %+v: want sandbox %s, requested by %s", a, sandboxID, actor)
		}
		switch {
		case strings.Contains(a.Prompt.Command, "approve-me"):
			states["approve-me"] = a.State + " by " + a.DecidedBy
		case strings.Contains(a.Prompt.Command, "leave-me"):
			states["leave-me"] = a.State
		case strings.Contains(a.Prompt.Command, "bash -i -l"):
			states["terminal"] = a.State
		}
	}
	want := map[string]string{"approve-me": "approved by operator:reviewer", "leave-me": "expired", "terminal": "approved"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("approvals: %v, want %v", states, want)
	}

	// Every command is in the exec record with the policy's decision; the
	// denied secret read never ran.
	var ex struct {
		Execs []struct {
			Argv   []string `json:"argv"`
			Error  string   `json:"error"`
			Policy *struct {
				Action  string   `json:"action"`
				Classes []string `json:"classes"`
				Grant   []string `json:"grant"`
			} `json:"policy"`
			Status *struct {
				Code int `json:"code"`
			} `json:"status"`
		} `json:"execs"`
	}
	d.getJSON(t, "/v1/sandboxes/"+sandboxID+"/execs", &ex)
	found := map[string]string{}
	for _, x := range ex.Execs {
		line := strings.Join(x.Argv, " ")
		if x.Policy == nil {
			t.Errorf("exec %q has no policy decision", line)
			continue
		}
		for _, k := range []string{"cat /workspace/.env", "exit 3", "approve-me", "sleep 60"} {
			if strings.Contains(line, k) {
				found[k] = x.Policy.Action
				if len(x.Policy.Grant) > 0 {
					found[k] += " by grant"
				}
				if k == "cat /workspace/.env" && x.Status != nil {
					t.Errorf("the denied secret read has an exit status: it ran")
				}
			}
		}
	}
	wantExecs := map[string]string{"cat /workspace/.env": "deny", "exit 3": "allow", "approve-me": "allow by grant", "sleep 60": "allow"}
	if fmt.Sprint(found) != fmt.Sprint(wantExecs) {
		t.Errorf("exec records: %v, want %v", found, wantExecs)
	}

	// The audit chain holds, and has the door's calls.
	aout, aerr, code := e.run("", "audit", "verify", "--socket", d.sock)
	if code != 0 {
		t.Errorf("audit verify: %d %s %s", code, aout, aerr)
	}
	qout, _, _ := e.run("", "audit", "query", "--socket", d.sock, "--sandbox", sandboxID, "--json")
	kinds := []string{"sandbox.create", "exec.start", "exec.end", "exec.input", "exec.signal", "file.write", "file.refused", "approval.request", "sandbox.timeout", "sandbox.stop"}
	if !v1 {
		kinds = append(kinds, "sandbox.pause", "sandbox.resume", "sandbox.snapshot")
	}
	for _, kind := range kinds {
		if !strings.Contains(qout, `"`+kind+`"`) {
			t.Errorf("audit record of the sandbox has no %s event", kind)
		}
	}
	// the in-sandbox API's calls are the key's too: its token is the key's
	if !strings.Contains(qout, `"`+actor+`"`) || strings.Contains(qout, `"apikey:e2b"`) {
		t.Errorf("audit record does not name the key (%s) for every call, the in-sandbox API's included", actor)
	}
}

// checkNoInternet checks that the sandbox created with
// allowInternetAccess false has no egress at all: what the daemon's
// policy allows (public web) is denied by the door's layer, and the
// sandbox created with the SDK's default (open) keeps it.
func checkNoInternet(t *testing.T, d *daemonProc, closed, open string) {
	t.Helper()
	if got := egressDecision(t, d, closed, "https://1.2.3.4/"); got != "deny e2b-no-internet-access" {
		t.Errorf("allowInternetAccess false: %s, want deny by e2b-no-internet-access", got)
	}
	if got := egressDecision(t, d, open, "https://1.2.3.4/"); got != "allow public-web" {
		t.Errorf("allowInternetAccess true (the SDKs' default): %s, want the daemon's public_web", got)
	}
}

// checkFenced checks the sandbox created with network {denyOut:
// [ALL_TRAFFIC], allowOut: ["1.2.3.4"]}: its exception is what the
// daemon's policy allows (public web), everything else is denied by the
// door's layer.
func checkFenced(t *testing.T, d *daemonProc, id string) {
	t.Helper()
	for dest, want := range map[string]string{
		"https://1.2.3.4/":    "allow public-web",
		"https://1.2.3.5/":    "deny e2b-deny-out",
		"https://[::1:2]/":    "deny e2b-deny-out",
		"https://127.0.0.1/":  "deny e2b-deny-out",
		"http://1.2.3.4:8080": "deny port",
	} {
		if got := egressDecision(t, d, id, dest); got != want {
			t.Errorf("network allowOut 1.2.3.4: %s: %s, want %s", dest, got, want)
		}
	}
}

// egressDecision asks a sandbox's proxy what it would decide for dest
// (connecting to nothing).
func egressDecision(t *testing.T, d *daemonProc, id, dest string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"destination": dest})
	resp, err := d.client.Post("http://airlock/v1/sandboxes/"+id+"/egress/test", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("egress test: %v", err)
	}
	defer resp.Body.Close()
	var x struct{ Decision, Rule string }
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &x) != nil {
		t.Fatalf("egress test of %s: %d %s", id, resp.StatusCode, b)
	}
	return x.Decision + " " + x.Rule
}

// TestBenchE2B (AIRLOCK_BENCH=1, 'make bench') measures commands.run('true')
// through the E2B SDK against the native API in the same run.
func TestBenchE2B(t *testing.T) {
	if os.Getenv("AIRLOCK_BENCH") == "" {
		t.Skip("a benchmark: AIRLOCK_BENCH=1 (make bench)")
	}
	node, dir := nodeClient(t, "e2b")
	e := newEnv(t)
	addr, e2bAddr := freeAddr(t), freeAddr(t)
	d := e.startDaemon(t, "--listen", addr, "--e2b-listen", e2bAddr)
	key, _, _ := e.run("", "apikey", "create", "--socket", d.sock, "--e2b")
	key = strings.TrimSpace(key)
	cmd := exec.Command(node, filepath.Join(dir, "e2b_bench.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "E2B_API_KEY="+key, "E2B_API_URL=http://"+e2bAddr, "E2B_SANDBOX_URL=http://"+e2bAddr,
		"AIRLOCK_URL=http://"+addr, "AIRLOCK_KEY="+key)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, d.log)
	}
	fmt.Printf("BENCH e2b commands.run('true') vs native API: %s", out)
}

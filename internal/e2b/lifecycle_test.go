package e2b

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/daemon/stack"
)

// The lifecycle fields as the SDKs send them (2.x: lifecycle {onTimeout,
// autoResume} as autoPause, autoPauseMemory, autoResume {enabled}; 1.x:
// autoPause false on every create) are read; what airlock cannot do or
// E2B refuses is refused.
func TestParseLifecycle(t *testing.T) {
	for body, want := range map[string]lifecycle{
		`{"autoPause":false}`:            {},
		`{}`:                             {},
		`{"autoPause":true,"timeout":2}`: {pause: true, ttl: 2 * time.Second},
		`{"autoPause":true,"autoPauseMemory":true}`:                               {pause: true},
		`{"autoPause":true,"autoResume":{"enabled":true}}`:                        {pause: true, autoResume: true},
		`{"autoPause":true,"autoResume":{"enabled":false}}`:                       {pause: true},
		`{"autoPause":false,"autoResume":{"enabled":false}}`:                      {},
		`{"autoPause":true,"autoPauseMemory":true,"autoResume":{"enabled":true}}`: {pause: true, autoResume: true},
	} {
		cr, _, got, err := parseCreateView(strings.NewReader(body), "host")
		if err != nil || got != want || cr.PauseOnExpiry != want.pause {
			t.Errorf("%s: %+v %v (pause on expiry %v), want %+v", body, got, err, cr.PauseOnExpiry, want)
		}
	}
	for body, want := range map[string]string{
		`{"autoPause":true,"autoPauseMemory":false}`:             "unsupported by airlock: lifecycle onTimeout keepMemory false",
		`{"autoPauseMemory":false}`:                              "unsupported by airlock",
		`{"autoResume":{"enabled":true}}`:                        "autoResume can only be true when onTimeout is pause",
		`{"autoPause":false,"autoResume":{"enabled":true}}`:      "autoResume can only be true",
		`{"autoPause":true,"autoResume":{"enabled":"yes"}}`:      "autoResume: an object",
		`{"autoPause":true,"autoResume":{"on":true}}`:            "autoResume: an object",
		`{"autoPause":true,"autoResume":true}`:                   "autoResume: an object",
		`{"autoPause":true,"autoResume":{"enabled":null}}`:       "autoResume: an object",
		`{"autoPause":true,"autoResume":{"enabled":true,"x":1}}`: "autoResume: an object",
	} {
		if _, _, _, err := parseCreateView(strings.NewReader(body), "host"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", body, err, want)
		}
	}
}

// waitDoorState polls getInfo until the sandbox is in state.
func (d *door) waitDoorState(id, state string) sandboxDetail {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, b := d.call("GET", "/sandboxes/"+id, nil, map[string]string{"X-API-KEY": d.key})
		var got sandboxDetail
		if resp.StatusCode == 200 && json.Unmarshal(b, &got) == nil && got.State == state {
			return got
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("sandbox %s is not %s: %d %s", id, state, resp.StatusCode, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createLife creates a sandbox with body and returns its id and token.
func (d *door) createLife(body string) (id, tok string) {
	d.t.Helper()
	resp, b := d.call("POST", "/v2/sandboxes", []byte(body), map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"})
	var c struct{ SandboxID, EnvdAccessToken string }
	if resp.StatusCode != 201 || json.Unmarshal(b, &c) != nil {
		d.t.Fatalf("create %s: %d %s", body, resp.StatusCode, b)
	}
	return c.SandboxID, c.EnvdAccessToken
}

// onTimeout pause: the timeout's end pauses the sandbox (its command
// frozen, not ended); getInfo, the list and /health say paused; a call
// into it is refused as E2B's proxy refuses it (409, a stream ended with
// the error), never run; connect resumes it with the timeout it gives,
// and the command that was running goes on.
func TestLifecyclePauseOnTimeout(t *testing.T) {
	d := newDoor(t)
	key := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	id, tok := d.createLife(`{"templateID":"base","timeout":2,"autoPause":true}`)
	if out, end := d.run(id, tok, "", "sleep 60 >/dev/null 2>&1 & echo started"); out != "started\n" {
		t.Fatalf("background start: %q %s", out, end)
	}
	info := d.waitDoorState(id, "paused")
	if info.Lifecycle == nil || info.Lifecycle.OnTimeout != "pause" || info.Lifecycle.AutoResume {
		t.Errorf("getInfo lifecycle: %+v, want onTimeout pause, no autoResume", info.Lifecycle)
	}
	if resp, b := d.call("GET", "/v2/sandboxes?state=paused", nil, key); resp.StatusCode != 200 || !strings.Contains(string(b), id) {
		t.Errorf("list state=paused: %d %s, want %s", resp.StatusCode, b, id)
	}
	if resp, b := d.call("GET", "/v2/sandboxes?state=running", nil, key); strings.Contains(string(b), id) {
		t.Errorf("list state=running: %d %s lists the paused %s", resp.StatusCode, b, id)
	}
	if resp, _ := d.call("GET", "/health", nil, envdHeaders(id, tok, nil)); resp.StatusCode != 502 {
		t.Errorf("health of a paused sandbox: %d, want 502", resp.StatusCode)
	}
	if out, end := d.run(id, tok, "", "echo ran"); out != "" || !strings.Contains(end, `"code":"unknown"`) || !strings.Contains(end, "The sandbox is paused") {
		t.Errorf("command in a paused sandbox: %q %s, want the paused error", out, end)
	}
	code, b := d.fileRPC(id, tok, "Stat", `{"path":"/home/user"}`)
	var pe struct {
		SandboxID     string `json:"sandboxId"`
		Code          int    `json:"code"`
		CanAutoResume *bool  `json:"canAutoResume"`
	}
	if code != 409 || json.Unmarshal([]byte(b), &pe) != nil || pe.SandboxID != id || pe.Code != 409 || pe.CanAutoResume == nil || *pe.CanAutoResume {
		t.Errorf("Stat in a paused sandbox: %d %s, want E2B's 409", code, b)
	}
	if resp, b := d.call("GET", "/files?path=/home/user/x", nil, envdHeaders(id, tok, nil)); resp.StatusCode != 409 {
		t.Errorf("GET /files of a paused sandbox: %d %s", resp.StatusCode, b)
	}
	// Still paused: the refused calls did not wake it.
	if got := d.waitDoorState(id, "paused"); got.State != "paused" {
		t.Fatal(got.State)
	}
	if resp, b := d.call("POST", "/v2/sandboxes/"+id+"/connect", []byte(`{"timeout":120}`), key); resp.StatusCode != 201 {
		t.Fatalf("connect: %d %s", resp.StatusCode, b)
	}
	got := d.waitDoorState(id, "running")
	if got.EndAt == nil || time.Until(*got.EndAt) < 110*time.Second || time.Until(*got.EndAt) > 121*time.Second {
		t.Errorf("endAt after connect with timeout 120: %v", got.EndAt)
	}
	if out, _ := d.run(id, tok, "", "pgrep -x sleep >/dev/null && echo still"); out != "still\n" {
		t.Errorf("the command running at the pause: %q, want it still running", out)
	}
}

// autoResume: a call into a sandbox its timeout paused resumes it first
// and runs, and the sandbox gets at least five minutes.
func TestLifecycleAutoResume(t *testing.T) {
	d := newDoor(t)
	id, tok := d.createLife(`{"templateID":"base","timeout":1,"autoPause":true,"autoResume":{"enabled":true}}`)
	info := d.waitDoorState(id, "paused")
	if info.Lifecycle == nil || info.Lifecycle.OnTimeout != "pause" || !info.Lifecycle.AutoResume {
		t.Errorf("getInfo lifecycle: %+v, want onTimeout pause, autoResume", info.Lifecycle)
	}
	if out, end := d.run(id, tok, "", "echo awake"); out != "awake\n" {
		t.Fatalf("command in an auto-resumed sandbox: %q %s", out, end)
	}
	got := d.waitDoorState(id, "running")
	if got.EndAt == nil || time.Until(*got.EndAt) < 4*time.Minute+50*time.Second {
		t.Errorf("endAt after an auto-resume: %v, want at least 5 minutes", got.EndAt)
	}
	// Paused by hand, it wakes on a call too (as on E2B: any paused
	// sandbox created with autoResume).
	if resp, b := d.call("POST", "/sandboxes/"+id+"/pause", nil, map[string]string{"X-API-KEY": d.key}); resp.StatusCode != 204 {
		t.Fatalf("pause: %d %s", resp.StatusCode, b)
	}
	if resp, _ := d.call("GET", "/health", nil, envdHeaders(id, tok, nil)); resp.StatusCode != 204 {
		t.Errorf("health of a paused autoResume sandbox: %d, want 204 (resumed)", resp.StatusCode)
	}
}

// Under a maximum lifetime shorter than five minutes, an auto-resume
// runs the sandbox until that lifetime ends, never past it.
func TestLifecycleAutoResumeWithinMaxLifetime(t *testing.T) {
	d := newDoor(t, func(c *stack.Config) { c.MaxLifetime = 30 * time.Second })
	id, tok := d.createLife(`{"templateID":"base","timeout":1,"autoPause":true,"autoResume":{"enabled":true}}`)
	info := d.waitDoorState(id, "paused")
	if out, end := d.run(id, tok, "", "echo awake"); out != "awake\n" {
		t.Fatalf("command in an auto-resumed sandbox: %q %s", out, end)
	}
	got := d.waitDoorState(id, "running")
	limit := info.StartedAt.Add(30 * time.Second)
	if got.EndAt == nil || got.EndAt.After(limit) || got.EndAt.Before(limit.Add(-3*time.Second)) {
		t.Errorf("endAt after an auto-resume: %v, want just before the maximum lifetime's end %v", got.EndAt, limit)
	}
}

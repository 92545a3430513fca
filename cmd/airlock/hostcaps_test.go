package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/cli/serve"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// Against a real daemon: sandboxes that together would take more of the
// host's tasks than it leaves them are refused, with a limit error that
// names the table, while the first ones run; one destroyed makes room.
func TestServeRefusesSandboxesBeyondTheHostsTasks(t *testing.T) {
	h, err := serve.ReadHostTables("/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	budget := serve.HostShare(min(h.PidMax, h.ThreadsMax))
	// two of these fit in the budget, a third does not
	pids := budget/2 - native.HostTasks(0)
	e := newEnv(t)
	d := e.startDaemon(t, "--max-pids", strconv.FormatInt(pids, 10))
	if !strings.Contains(d.log.String(), fmt.Sprintf("%d tasks", budget)) {
		t.Errorf("the daemon does not say what it derived: %s", d.log)
	}
	body := fmt.Sprintf(`{"limits": {"pids": %d}}`, pids)
	var ids []string
	for i := range 2 {
		code, b := d.post(t, "/v1/sandboxes", body)
		if code != http.StatusCreated {
			t.Fatalf("sandbox %d of %d pids: %d %s", i, pids, code, b)
		}
		var sb struct{ ID string }
		_ = json.Unmarshal(b, &sb)
		ids = append(ids, sb.ID)
	}
	code, b := d.post(t, "/v1/sandboxes", body)
	if code != http.StatusTooManyRequests || !strings.Contains(string(b), "limit_exceeded") || !strings.Contains(string(b), "kernel.pid_max") {
		t.Fatalf("a third sandbox: %d %s, want 429 limit_exceeded naming kernel.pid_max", code, b)
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://airlock/v1/sandboxes/"+ids[0], nil)
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, b := d.post(t, "/v1/sandboxes", body); code != http.StatusCreated {
		t.Errorf("after one was destroyed: %d %s", code, b)
	}
}

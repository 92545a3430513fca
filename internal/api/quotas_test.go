package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/runtime"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/sdk"
	"github.com/airlock-dev/airlock/wire"
)

func i64p(v int64) *int64 { return &v }

// quotaRefusal reads a 429 quota_exceeded answer, which must name quota.
func quotaRefusal(t *testing.T, code int, b []byte, quota string) wire.QuotaHit {
	t.Helper()
	var e wire.Error
	if err := json.Unmarshal(b, &e); err != nil || code != http.StatusTooManyRequests || e.Code != wire.CodeQuotaExceeded || e.Quota == nil || e.Quota.Name != quota {
		t.Fatalf("want 429 quota_exceeded naming %s: %d %s", quota, code, b)
	}
	return *e.Quota
}

// The attack: red's agent sends 50 creates at once over TCP against a
// quota of 10 live sandboxes. Exactly 10 are made; the 40 others are 429
// naming the quota, with the usage at its limit. A destroy gives its
// place back.
func TestQuotaHoldsAgainstABurstOfCreates(t *testing.T) {
	tn := newTenants(t)
	tn.must("", "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{Sandboxes: i64p(10)}, 200, nil)
	agent := tn.keys["proj-red"][tenant.Agent]
	var mu sync.Mutex
	var made []string
	refused := 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, b := tn.call(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{})
			mu.Lock()
			defer mu.Unlock()
			switch code {
			case http.StatusCreated:
				var sb wire.Sandbox
				_ = json.Unmarshal(b, &sb)
				made = append(made, sb.ID)
			case http.StatusTooManyRequests:
				var e wire.Error
				_ = json.Unmarshal(b, &e)
				if e.Code != wire.CodeQuotaExceeded || e.Quota == nil || e.Quota.Name != quotas.NameSandboxes || e.Quota.Limit != 10 || e.Quota.Used != 10 || e.Quota.Project != "proj-red" {
					t.Errorf("refusal: %s", b)
				}
				refused++
			default:
				t.Errorf("create: %d %s", code, b)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(made) != 10 || refused != 40 {
		t.Fatalf("%d made, %d refused; want 10 and 40", len(made), refused)
	}
	var l wire.SandboxList
	tn.must("", "GET", "/v1/sandboxes?state=running", nil, 200, &l)
	if len(l.Sandboxes) != 10 {
		t.Errorf("the daemon holds %d running sandboxes, want 10", len(l.Sandboxes))
	}
	var use wire.ProjectUsage
	tn.must(agent, "GET", "/v1/projects/proj-red/usage", nil, 200, &use)
	if use.Usage.Sandboxes != 10 || use.Quotas.Sandboxes != 10 || use.Set.Sandboxes == nil {
		t.Errorf("usage: %+v", use)
	}
	// blue's quota is its own
	tn.must(tn.keys["proj-blue"][tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, nil)
	tn.must(agent, "DELETE", "/v1/sandboxes/"+made[0], nil, 204, nil)
	tn.must(agent, "GET", "/v1/projects/proj-red/usage", nil, 200, &use)
	if use.Usage.Sandboxes != 9 {
		t.Errorf("after a destroy: %d live, want 9", use.Usage.Sandboxes)
	}
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, nil)
	code, b := tn.call(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{})
	quotaRefusal(t, code, b, quotas.NameSandboxes)
}

// The memory of red's live sandboxes' limits adds up to its quota (the
// fake backend takes no limit: each counts the backend's default, as a
// sandbox that sets none does); a destroyed one gives its share back.
func TestQuotaOfMemoryTotal(t *testing.T) {
	tn := newTenantsQuotas(t, defaultTenantsPolicy, quotas.Config{Unset: runtime.Limits{MemoryBytes: 512 << 20}})
	tn.must("", "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{MemoryBytes: i64p(1 << 30)}, 200, nil)
	agent := tn.keys["proj-red"][tenant.Agent]
	var a wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &a)
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, nil)
	code, body := tn.call(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{})
	hit := quotaRefusal(t, code, body, quotas.NameMemory)
	if hit.Used != 1<<30 || hit.Limit != 1<<30 || hit.Asked != 512<<20 {
		t.Errorf("hit: %+v", hit)
	}
	var use wire.ProjectUsage
	tn.must(agent, "GET", "/v1/projects/proj-red/usage", nil, 200, &use)
	if use.Usage.MemoryBytes != 1<<30 || use.Usage.Sandboxes != 2 {
		t.Errorf("usage: %+v", use.Usage)
	}
	tn.must(agent, "DELETE", "/v1/sandboxes/"+a.ID, nil, 204, nil)
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, nil)
}

// A create the backend refuses after the quota admitted it gives its
// reservation back: failures do not eat the quota.
func TestQuotaComesBackWhenACreateFails(t *testing.T) {
	tn := newTenants(t)
	tn.must("", "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{Sandboxes: i64p(1), MemoryBytes: i64p(1 << 30)}, 200, nil)
	agent := tn.keys["proj-red"][tenant.Agent]
	for range 3 { // the fake backend takes no memory limit: 501 after admission
		tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{Limits: &wire.Limits{MemoryBytes: 512 << 20}}, 501, nil)
	}
	var use wire.ProjectUsage
	tn.must(agent, "GET", "/v1/projects/proj-red/usage", nil, 200, &use)
	if use.Usage != (wire.ProjectUsageFigures{}) {
		t.Errorf("after failed creates: %+v", use.Usage)
	}
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, nil)
}

// Commands a minute: red's fourth command in the minute is refused 429
// and not run (no exec record); blue's are its own.
func TestQuotaOfExecsPerMinute(t *testing.T) {
	tn := newTenants(t)
	tn.must("", "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{ExecsPerMinute: i64p(3)}, 200, nil)
	agent := tn.keys["proj-red"][tenant.Agent]
	var sb wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	for range 3 {
		if code, b := tn.call(agent, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"true"}}); code != 200 {
			t.Fatalf("exec: %d %s", code, b)
		}
	}
	code, b := tn.call(agent, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"true"}})
	hit := quotaRefusal(t, code, b, quotas.NameExecsPerMinute)
	if hit.Used != 3 || hit.Limit != 3 {
		t.Errorf("hit: %+v", hit)
	}
	var execs wire.ExecList
	tn.must(agent, "GET", "/v1/sandboxes/"+sb.ID+"/execs", nil, 200, &execs)
	if len(execs.Execs) != 3 {
		t.Errorf("%d exec records, want the 3 that ran", len(execs.Execs))
	}
	var use wire.ProjectUsage
	tn.must(agent, "GET", "/v1/projects/proj-red/usage", nil, 200, &use)
	if use.Usage.ExecsLastMinute != 3 || use.Quotas.ExecsPerMinute != 3 {
		t.Errorf("usage: %+v", use)
	}
	blue := tn.keys["proj-blue"][tenant.Agent]
	var bsb wire.Sandbox
	tn.must(blue, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &bsb)
	if code, b := tn.call(blue, "POST", "/v1/sandboxes/"+bsb.ID+"/exec", wire.ExecRequest{Argv: []string{"true"}}); code != 200 {
		t.Errorf("blue's exec: %d %s", code, b)
	}
}

// Who sets quotas: red's admin lowers its own, is refused a raise (403,
// and nothing changes), and cannot reach blue's (404 as for none); an
// agent may read its usage, not set it.
func TestQuotaSettersAndReaders(t *testing.T) {
	tn := newTenants(t)
	admin := tn.keys["proj-red"][tenant.Admin]
	tn.must("", "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{Sandboxes: i64p(5)}, 200, nil)
	var use wire.ProjectUsage
	tn.must(admin, "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{Sandboxes: i64p(2)}, 200, &use)
	if use.Quotas.Sandboxes != 2 {
		t.Errorf("lowered: %+v", use.Quotas)
	}
	code, b := tn.call(admin, "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{Sandboxes: i64p(50)})
	var e wire.Error
	if _ = json.Unmarshal(b, &e); code != 403 || e.Code != wire.CodeDenied {
		t.Errorf("admin raise: %d %s", code, b)
	}
	tn.must(admin, "PUT", "/v1/projects/proj-blue/quotas", wire.QuotaSettings{Sandboxes: i64p(1)}, 404, nil)
	tn.must(tn.keys["proj-red"][tenant.Agent], "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{Sandboxes: i64p(1)}, 403, nil)
	tn.must(tn.keys["proj-red"][tenant.Agent], "GET", "/v1/projects/proj-red/usage", nil, 200, &use)
	if use.Quotas.Sandboxes != 2 || use.Project != "proj-red" {
		t.Errorf("after the refusals: %+v", use)
	}
	var blue wire.ProjectUsage
	tn.must("", "GET", "/v1/projects/proj-blue/usage", nil, 200, &blue)
	if blue.Quotas != (wire.ProjectQuotas{}) || blue.Set != (wire.QuotaSettings{}) {
		t.Errorf("blue (no quotas): %+v", blue)
	}
}

// The attack: one key floods the TCP door. Past its burst it is answered
// 429 rate_limited with Retry-After, before anything runs; another key
// of the same project is not held back.
func TestKeyRateLimit(t *testing.T) {
	tn := newTenants(t)
	mods := modulesOf(tn.stk, nil)
	mods.KeyRates = quotas.NewKeyRates(quotas.Rate{PerSecond: 0.01, Burst: 3}, nil)
	srv := New(tn.stk.Manager, mods, Health{OK: true, Version: "test", Backend: fakert.Name})
	tcp := httptest.NewServer(srv.TCP())
	defer tcp.Close()
	get := func(key string) *http.Response {
		req, _ := http.NewRequest("GET", tcp.URL+"/v1/sandboxes", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := tcp.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	agent := tn.keys["proj-red"][tenant.Agent]
	for i := range 3 {
		if r := get(agent); r.StatusCode != 200 {
			t.Fatalf("request %d of the burst: %d", i, r.StatusCode)
		}
	}
	req, _ := http.NewRequest("POST", tcp.URL+"/v1/sandboxes", nil)
	req.Header.Set("Authorization", "Bearer "+agent)
	resp, err := tcp.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e wire.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 429 || e.Code != wire.CodeRateLimited || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the burst: %d %+v retry %q", resp.StatusCode, e, resp.Header.Get("Retry-After"))
	}
	var l wire.SandboxList
	tn.must("", "GET", "/v1/sandboxes", nil, 200, &l)
	if len(l.Sandboxes) != 0 {
		t.Errorf("a refused create made %d sandboxes", len(l.Sandboxes))
	}
	if r := get(tn.keys["proj-red"][tenant.Reviewer]); r.StatusCode != 200 {
		t.Errorf("another key: %d", r.StatusCode)
	}
	if r := get("ak_not-a-key"); r.StatusCode != 401 {
		t.Errorf("no key: %d, want 401 (an invalid key gets no bucket)", r.StatusCode)
	}
}

// The SDK's quota calls, as red's admin over TCP: set (lower), read,
// and a refused create as an *sdk.Error with the quota's figures.
func TestSDKQuotas(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	tn.must("", "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{Sandboxes: i64p(3)}, 200, nil)
	c, err := sdk.New(sdk.WithBaseURL(tn.tcp.URL), sdk.WithAPIKey(tn.keys["proj-red"][tenant.Admin]))
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.SetProjectQuotas(ctx, "proj-red", sdk.QuotaSettings{Sandboxes: i64p(1)})
	if err != nil || u.Quotas.Sandboxes != 1 {
		t.Fatalf("set: %+v %v", u, err)
	}
	if _, err := c.CreateSandbox(ctx, sdk.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateSandbox(ctx, sdk.CreateRequest{})
	var e *sdk.Error
	if !errors.As(err, &e) || e.Status != 429 || e.Code != sdk.CodeQuotaExceeded || e.Quota == nil || e.Quota.Name != "sandboxes" || e.Quota.Used != 1 {
		t.Fatalf("second create: %#v", err)
	}
	if u, err = c.ProjectUsage(ctx, "proj-red"); err != nil || u.Usage.Sandboxes != 1 {
		t.Errorf("usage: %+v %v", u, err)
	}
	if _, err = c.ProjectUsage(ctx, "proj-blue"); !errors.As(err, &e) || e.Status != 404 {
		t.Errorf("blue's usage: %v", err)
	}
}

// Stored output: once red's commands' stored output reaches its quota,
// its next command is refused 429 naming it.
func TestQuotaOfStoredOutput(t *testing.T) {
	tn := newTenants(t)
	tn.must("", "PUT", "/v1/projects/proj-red/quotas", wire.QuotaSettings{StoredOutputBytes: i64p(64)}, 200, nil)
	agent := tn.keys["proj-red"][tenant.Agent]
	var sb wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	argv := []string{"sh", "-c", "head -c 100 /dev/zero | tr '\\0' x"}
	if code, b := tn.call(agent, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: argv}); code != 200 {
		t.Fatalf("exec: %d %s", code, b)
	}
	code, b := tn.call(agent, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"true"}})
	hit := quotaRefusal(t, code, b, quotas.NameStoredOutput)
	if hit.Used != 100 || hit.Limit != 64 {
		t.Errorf("hit: %+v", hit)
	}
	var use wire.ProjectUsage
	tn.must(agent, "GET", "/v1/projects/proj-red/usage", nil, 200, &use)
	if use.Usage.StoredOutputBytes != 100 {
		t.Errorf("usage: %+v", use.Usage)
	}
}

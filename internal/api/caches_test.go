package api

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/wire"
)

// The cache routes: unsupported without --dep-cache; with it, a list and
// a clear on the unix socket, an unknown ecosystem refused; over TCP,
// even with a key, refused (the caches name the operator's projects).
func TestCacheRoutes(t *testing.T) {
	none := newDaemon(t)
	if c := none.do("GET", "/v1/caches", nil, nil); c != http.StatusNotImplemented {
		t.Errorf("GET /v1/caches without --dep-cache: %d, want 501", c)
	}
	d := newDaemonWith(t, func(c *stack.Config) {
		c.Policy = allowAll
		c.DepCacheDir = filepath.Join(t.TempDir(), "depcache")
	})
	var l wire.CacheList
	if c := d.do("GET", "/v1/caches", nil, &l); c != 200 || l.Caches == nil || len(l.Caches) != 0 {
		t.Errorf("GET /v1/caches: %d %+v", c, l)
	}
	if c := d.do("POST", "/v1/caches/clear", wire.CacheClearRequest{Ecosystem: "cargo"}, nil); c != http.StatusBadRequest {
		t.Errorf("clear of cargo (no cache of it): %d, want 400", c)
	}
	if c := d.do("POST", "/v1/caches/clear", wire.CacheClearRequest{Ecosystem: "pip"}, nil); c != 200 {
		t.Errorf("clear of pip: %d, want 200", c)
	}
	var res wire.CacheClearResult
	if c := d.do("POST", "/v1/caches/clear", wire.CacheClearRequest{}, &res); c != 200 || res.Cleared == nil {
		t.Errorf("clear: %d %+v", c, res)
	}
	_, key, _ := d.keys.Create(context.Background(), "agent", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(d.m, d.mods, Health{OK: true}).TCP()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	for _, rt := range [][2]string{{"GET", "/v1/caches"}, {"POST", "/v1/caches/clear"}} {
		req, _ := http.NewRequest(rt[0], "http://"+ln.Addr().String()+rt[1], strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s over TCP: %d, want 403", rt[0], rt[1], resp.StatusCode)
		}
	}
}

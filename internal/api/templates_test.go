package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/templatebuild"
	"github.com/airlock-dev/airlock/sdk"
	"github.com/airlock-dev/airlock/wire"
)

type fakeImages struct{ calls []string }

func (f *fakeImages) Import(_ context.Context, name, source, registrySecret string, progress func(string)) (*sandbox.TemplateInfo, string, error) {
	f.calls = append(f.calls, strings.TrimSpace(name+" "+source+" "+registrySecret))
	if name == "fails" {
		return nil, "", fmt.Errorf("layer 1 of 1: layer entry %q: device node: %w", "dev/sda", errdefs.ErrInvalid)
	}
	if progress != nil {
		progress("layer 1/2: unpacked")
		progress("layer 2/2: unpacked\x1b[2J") // one line, escapes kept out of the terminal by the CLI
	}
	return &sandbox.TemplateInfo{Name: name, Version: "0123456789ab", Kind: "image", Base: source, Created: time.Now()}, "sha256:" + strings.Repeat("b", 64), nil
}

// POST /v1/templates: the import over the local socket; over TCP it is
// refused before the importer hears of it (a source is a host path read
// as root); a daemon with no importer says unsupported.
func TestTemplateImportRoute(t *testing.T) {
	d := newDaemon(t)
	post := func(h http.Handler, key string) (int, string) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/templates", strings.NewReader(`{"name":"img","source":"/srv/layout"}`))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(New(d.m, d.mods, Health{OK: true}), ""); code != http.StatusNotImplemented || !strings.Contains(body, "imports no templates") {
		t.Errorf("no importer: %d %s", code, body)
	}
	f := &fakeImages{}
	mods := d.mods
	mods.Images = f
	_, key, err := d.keys.Create(context.Background(), "agent", "")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(New(d.m, mods, Health{OK: true}).TCP(), key); code != http.StatusForbidden || len(f.calls) != 0 {
		t.Errorf("over TCP: %d %s, importer called %v", code, body, f.calls)
	}
	code, body := post(New(d.m, mods, Health{OK: true}), "")
	var out wire.Template
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &out) != nil || out.Name != "img" || out.Digest == "" || len(f.calls) != 1 {
		t.Errorf("local: %d %s %v", code, body, f.calls)
	}
}

// The SDK's ImportTemplate with progress: the steps arrive as lines,
// then the template; a failed import ends with its error (kind kept).
func TestTemplateImportStreamed(t *testing.T) {
	d := newDaemon(t)
	mods := d.mods
	mods.Images = &fakeImages{}
	srv := httptest.NewServer(New(d.m, mods, Health{OK: true}))
	defer srv.Close()
	c, err := sdk.New(sdk.WithBaseURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	tpl, err := c.ImportTemplate(context.Background(), "img", "/srv/layout", func(l string) { lines = append(lines, l) })
	if err != nil || tpl.Name != "img" || tpl.Digest == "" || len(lines) != 2 || lines[0] != "layer 1/2: unpacked" {
		t.Errorf("streamed import: %+v %v %q", tpl, err, lines)
	}
	_, err = c.ImportTemplate(context.Background(), "fails", "/srv/layout", func(string) {})
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeInvalid || !strings.Contains(se.Message, "device node") {
		t.Errorf("streamed failure: %v", err)
	}
	if tpl, err := c.ImportTemplate(context.Background(), "plain", "/srv/layout", nil); err != nil || tpl.Name != "plain" {
		t.Errorf("plain import: %+v %v", tpl, err)
	}
	// the registry secret's name reaches the importer, streamed or not
	f := mods.Images.(*fakeImages)
	for _, p := range []func(string){nil, func(string) {}} {
		f.calls = nil
		req := sdk.TemplateImport{Name: "priv", Source: "reg.test/a:1", RegistrySecret: "REG"}
		if _, err := c.ImportTemplateWith(context.Background(), req, p); err != nil || len(f.calls) != 1 || f.calls[0] != "priv reg.test/a:1 REG" {
			t.Errorf("import with a registry secret: %v %q", err, f.calls)
		}
	}
}

type fakeBuilds struct{ calls []string }

func (f *fakeBuilds) Build(_ context.Context, name, file, contextDir string, progress func(string)) (*templatebuild.Result, error) {
	f.calls = append(f.calls, name+" "+file+" "+contextDir)
	if name == "held" {
		return nil, fmt.Errorf("airlock.template:2: RUN: the daemon's policy refused the command (approval_timeout, approval ap-1): %w", errdefs.ErrTimeout)
	}
	if progress != nil {
		progress("RUN /bin/sh -c make")
		progress("built\x1b[2J") // the step's output: one line, escapes kept out of the terminal by the CLI
	}
	return &templatebuild.Result{Template: &sandbox.TemplateInfo{Name: name, Version: "0123456789ab", Kind: "build", Base: file, Created: time.Now()},
		Digest: "sha256:" + strings.Repeat("d", 64), Cached: 1, Built: 2}, nil
}

// POST /v1/templates/build: over TCP it is refused before the builder
// hears of it (the file and context are host paths read as root); over
// the local socket the SDK's BuildTemplate gets the build, streamed or
// not, and a failed build's error with its kind.
func TestTemplateBuildRoute(t *testing.T) {
	d := newDaemon(t)
	f := &fakeBuilds{}
	mods := d.mods
	mods.Builds = f
	_, key, err := d.keys.Create(context.Background(), "agent", "")
	if err != nil {
		t.Fatal(err)
	}
	tcp := httptest.NewServer(New(d.m, mods, Health{OK: true}).TCP())
	defer tcp.Close()
	req, _ := http.NewRequest("POST", tcp.URL+"/v1/templates/build", strings.NewReader(`{"name":"x","file":"/etc/shadow"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(f.calls) != 0 {
		t.Errorf("over TCP: %d, builder called %v", resp.StatusCode, f.calls)
	}
	srv := httptest.NewServer(New(d.m, mods, Health{OK: true}))
	defer srv.Close()
	c, err := sdk.New(sdk.WithBaseURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	b, err := c.BuildTemplate(context.Background(), "img", "/srv/airlock.template", "/srv", func(l string) { lines = append(lines, l) })
	if err != nil || b.Template.Name != "img" || b.Template.Digest == "" || b.Cached != 1 || b.Built != 2 || len(lines) != 2 || lines[0] != "RUN /bin/sh -c make" {
		t.Errorf("streamed build: %+v %v %q", b, err, lines)
	}
	if b, err := c.BuildTemplate(context.Background(), "plain", "/srv/airlock.template", "", nil); err != nil || b.Template.Name != "plain" {
		t.Errorf("plain build: %+v %v", b, err)
	}
	_, err = c.BuildTemplate(context.Background(), "held", "/srv/airlock.template", "", func(string) {})
	var se *sdk.Error
	if !errors.As(err, &se) || !strings.Contains(se.Message, "approval ap-1") {
		t.Errorf("streamed failure: %v", err)
	}
	mods.Builds = nil
	none := httptest.NewServer(New(d.m, mods, Health{OK: true}))
	defer none.Close()
	c2, _ := sdk.New(sdk.WithBaseURL(none.URL))
	if _, err := c2.BuildTemplate(context.Background(), "x", "/srv/airlock.template", "", nil); !errors.As(err, &se) || se.Code != sdk.CodeUnsupported {
		t.Errorf("no builder: %v", err)
	}
}

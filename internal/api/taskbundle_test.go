package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/wire"
)

// part is one part of a multipart body.
type part struct {
	name string
	data []byte
}

// multipartBody is parts in order, with its content type.
func multipartBody(t *testing.T, parts ...part) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+p.name+`"`)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(p.data)
	}
	_ = mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

// postMultipart posts a multipart task request and reads the answer into
// out (a wire.Task or wire.Error, decoded strictly), returning the status.
func (c *strictClient) postMultipart(body []byte, ctype string, out any) int {
	c.t.Helper()
	req, _ := http.NewRequest("POST", "http://airlock/v1/tasks", bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	c.strict("POST /v1/tasks (multipart)", data, out)
	return resp.StatusCode
}

// repoBundle is a bundle of repo's main branch and HEAD.
func repoBundle(t *testing.T, repo string) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "b.bundle")
	cmd := exec.Command("git", "bundle", "create", "--quiet", p, "HEAD", "main")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git bundle: %v %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTripTaskBundle starts a task from a bundle over the multipart
// body: the answer names the bundle and the pinned commit.
func roundTripTaskBundle(t *testing.T, c *strictClient) {
	repo := gitRepo(t)
	head, _ := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	req := wire.TaskRequest{Ref: "main", Commit: strings.TrimSpace(string(head)), Test: "true"}
	c.mark(c.sent, reflect.ValueOf(req))
	j, _ := json.Marshal(req)
	body, ctype := multipartBody(t, part{wire.TaskRequestPart, j}, part{wire.TaskBundlePart, repoBundle(t, repo)})
	var task wire.Task
	if code := c.postMultipart(body, ctype, &task); code != 201 || task.Bundle == nil || task.Commit != req.Commit || !strings.HasPrefix(task.Repo, "bundle:sha256:") {
		t.Fatalf("a task from a bundle: %d %+v", code, task)
	}
	daemon, err := c.tks.Get(context.Background(), task.ID)
	c.sameAsDaemon("POST /v1/tasks (multipart)", daemon, err, task)
}

// The multipart body is the request part, then the bundle part, and
// nothing else: another order, a missing or unknown part, a repo beside
// the bundle, a field the request does not have are refused before any
// task is made, and so are a bundle that is not one and a ref with a path
// trick (the bound of its size: internal/tasks' TestBundleSizeAttacks).
func TestTaskBundleBodyAttacks(t *testing.T) {
	c, m := fakeServer(t)
	repo := gitRepo(t)
	b := repoBundle(t, repo)
	okReq := []byte(`{"ref":"main"}`)
	for name, tc := range map[string]struct {
		parts []part
		want  int
		why   string
	}{
		"bundle first":       {[]part{{wire.TaskBundlePart, b}, {wire.TaskRequestPart, okReq}}, 400, `part "bundle" where "request" belongs`},
		"no bundle":          {[]part{{wire.TaskRequestPart, okReq}}, 400, `want the part "bundle"`},
		"an unknown part":    {[]part{{wire.TaskRequestPart, okReq}, {"hooks", b}}, 400, `part "hooks"`},
		"repo and bundle":    {[]part{{wire.TaskRequestPart, []byte(`{"repo":"` + repo + `"}`)}, {wire.TaskBundlePart, b}}, 400, "names no repo"},
		"an unknown field":   {[]part{{wire.TaskRequestPart, []byte(`{"ref":"main","hooks":"x"}`)}, {wire.TaskBundlePart, b}}, 400, "unknown field"},
		"a bad commit pin":   {[]part{{wire.TaskRequestPart, []byte(`{"commit":"../../x"}`)}, {wire.TaskBundlePart, b}}, 400, "full commit id"},
		"not a bundle":       {[]part{{wire.TaskRequestPart, okReq}, {wire.TaskBundlePart, []byte("#!/bin/sh\nrm -rf /\n\n")}}, 400, "signature"},
		"a ref outside refs": {[]part{{wire.TaskRequestPart, okReq}, {wire.TaskBundlePart, bytes.Replace(b, []byte(" refs/heads/main\n"), []byte(" refs/heads/../../config\n"), 1)}}, 400, "reference"},
	} {
		body, ctype := multipartBody(t, tc.parts...)
		var e wire.Error
		if code := c.postMultipart(body, ctype, &e); code != tc.want || !strings.Contains(e.Message, tc.why) {
			t.Errorf("%s: %d %+v, want %d about %q", name, code, e, tc.want, tc.why)
		}
	}
	if list, _ := m.List(context.Background(), ""); len(list) != 0 {
		t.Errorf("refused requests made %d sandboxes", len(list))
	}
}

package sdk

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/wire"
)

// StartTask with a Bundle streams a multipart body: the request part
// (the TaskRequest without repo, its commit pin included), then the
// bundle part as given; Repo beside Bundle is refused before anything is
// sent.
func TestStartTaskSendsBundle(t *testing.T) {
	d := newFake(t)
	var gotReq wire.TaskRequest
	var gotBundle []byte
	var names []string
	d.override = func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			writeErr(w, 400, "invalid", "%v", err)
			return
		}
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			names = append(names, p.FormName())
			data, _ := io.ReadAll(p)
			if p.FormName() == wire.TaskRequestPart {
				_ = json.Unmarshal(data, &gotReq)
			} else {
				gotBundle = data
			}
		}
		writeJSON(w, 201, Task{ID: "t-1", Repo: "bundle:sha256:x", Bundle: &TaskBundle{SHA256: "x", Bytes: int64(len(gotBundle))}})
	}
	c := d.client(t)
	bundle := []byte("# v2 git bundle\n" + strings.Repeat("x", 1<<20))
	commit := strings.Repeat("a", 40)
	task, err := c.StartTask(t.Context(), TaskRequest{Bundle: bytes.NewReader(bundle), Ref: "main", Commit: commit, Test: "make test"})
	if err != nil || task.Bundle == nil || task.Bundle.Bytes != int64(len(bundle)) {
		t.Fatalf("%+v %v", task, err)
	}
	if strings.Join(names, ",") != "request,bundle" || !bytes.Equal(gotBundle, bundle) || gotReq.Repo != "" || gotReq.Commit != commit || gotReq.Test != "make test" {
		t.Errorf("parts %v, request %+v, bundle %d bytes", names, gotReq, len(gotBundle))
	}
	if _, err := c.StartTask(t.Context(), TaskRequest{Repo: "/srv/r", Bundle: bytes.NewReader(bundle)}); !IsInvalid(err) {
		t.Errorf("repo and bundle: %v", err)
	}
}

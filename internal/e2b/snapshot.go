package e2b

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/snapshots"
)

// E2B's snapshots are airlock's snapshot templates: createSnapshot
// (POST /sandboxes/{id}/snapshots) makes one of the sandbox's files
// (/workspace and /home/user; processes, memory and /tmp are not kept,
// where E2B's keep memory too), Sandbox.create(snapshotId) starts from
// it, listSnapshots lists them. fork (POST /sandboxes/{id}/fork) is a
// snapshot and count sandboxes made from it, each with the source's
// metadata and network layer. A snapshot is its project's (the source
// sandbox's): a key lists, starts from and deletes only its own
// project's (deleteSnapshot, DELETE /templates/{id}: 204, or 404 as
// E2B answers a missing one, which the SDKs return as false); sandboxes
// made from a deleted snapshot keep working.

// Snapshots makes and lists snapshot templates (snapshots.Snapshots).
type Snapshots interface {
	Snapshot(ctx context.Context, id, name string, newOnly bool) (*snapshots.Snapshot, error)
	List(ctx context.Context) ([]*snapshots.Snapshot, error)
	Delete(ctx context.Context, name string) error
}

// ForkLayers gives the network layer a copy of a sandbox starts with
// (sandboxnet.Net); a Config.Network without it cannot fork.
type ForkLayers interface {
	ForkLayer(ctx context.Context, id string) (*netpolicy.Policy, error)
}

// decodeStrict reads a JSON body (empty: nothing asked) and refuses any
// field airlock does not know, so that no option is dropped in silence.
func decodeStrict(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if len(body) > 1<<20 {
		return fmt.Errorf("request body over 1 MiB: %w", errdefs.ErrInvalid)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("unsupported by airlock: request body: %v: %w", err, errdefs.ErrInvalid)
	}
	return nil
}

// maxForks bounds one fork call's count.
const maxForks = 10

func (s *Server) snapshotRoutes() {
	s.handle("POST /sandboxes/{id}/snapshots", s.createSnapshot)
	s.handle("GET /snapshots", s.listSnapshots)
	s.handle("POST /sandboxes/{id}/fork", s.fork)
	s.handle("DELETE /templates/{id}", s.deleteSnapshot)
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	snaps, err := s.snapshots()
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if err := snaps.Delete(r.Context(), r.PathValue("id")); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// snapshotInfo is E2B's SnapshotInfo.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func infoOf(sn *snapshots.Snapshot) snapshotInfo {
	return snapshotInfo{SnapshotID: sn.Name, Names: []string{sn.Name}}
}

// newSnapshotName names a snapshot the caller gave no name (prefix-
// and 12 hex digits: a template name).
func newSnapshotName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func (s *Server) snapshots() (Snapshots, error) {
	if s.cfg.Snapshots == nil {
		return nil, fmt.Errorf("unsupported by airlock: this daemon keeps no snapshots: %w", errdefs.ErrUnsupported)
	}
	return s.cfg.Snapshots, nil
}

func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decodeStrict(r.Body, &req); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	snaps, err := s.snapshots()
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if _, ok := s.live(w, r); !ok {
		return
	}
	if req.Name == "" {
		req.Name = newSnapshotName("snapshot")
	}
	// newOnly: a caller of the door never replaces a template others
	// start from.
	sn, err := snaps.Snapshot(r.Context(), r.PathValue("id"), req.Name, true)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, infoOf(sn))
}

// snapshotParams are the list parameters airlock applies; any other is
// refused.
var snapshotParams = map[string]bool{"sandboxID": true, "name": true, "limit": true, "nextToken": true}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if !snapshotParams[k] {
			writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("unsupported by airlock: snapshot list filter %q (airlock applies sandboxID, name, limit, nextToken)", k))
			return
		}
	}
	lq := listQuery{limit: 100}
	if msg := lq.parsePage(q); msg != "" {
		writeAPIError(w, http.StatusBadRequest, msg)
		return
	}
	snaps, err := s.snapshots()
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	all, err := snaps.List(r.Context())
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	out := []snapshotInfo{}
	for _, sn := range all {
		if id := q.Get("sandboxID"); id != "" && sn.FromSandbox != id {
			continue
		}
		if n := q.Get("name"); n != "" && sn.Name != n {
			continue
		}
		out = append(out, infoOf(sn))
	}
	start := min(lq.start, len(out))
	page := out[start:]
	if len(page) > lq.limit {
		page = page[:lq.limit]
		w.Header().Set("X-Next-Token", strconv.Itoa(start+lq.limit))
	}
	writeJSON(w, http.StatusOK, page)
}

// forkRequest is E2B's fork body.
type forkRequest struct {
	Timeout *int64 `json:"timeout"`
	Count   *int   `json:"count"`
}

// forkResult is one entry of E2B's fork answer: a sandbox or an error.
type forkResult struct {
	Sandbox *sandboxDetail `json:"sandbox,omitempty"`
	Error   *apiError      `json:"error,omitempty"`
}

type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	var req forkRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	count := 1
	if req.Count != nil {
		count = *req.Count
	}
	if count < 1 || count > maxForks {
		writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("count: 1 to %d", maxForks))
		return
	}
	if req.Timeout != nil {
		if _, err := reqcheck.Seconds("timeout", *req.Timeout, 0); err != nil {
			writeAPIError(w, apiStatus(err), err.Error())
			return
		}
	}
	snaps, err := s.snapshots()
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	src, ok := s.live(w, r)
	if !ok {
		return
	}
	cr, err := s.forkRequest(r.Context(), src, req.Timeout)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	sn, err := snaps.Snapshot(r.Context(), src.ID, newSnapshotName("fork"), true)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	cr.Template = sn.Name
	out := make([]forkResult, 0, count)
	for range count {
		sb, err := s.sbx.Create(r.Context(), cr)
		if err != nil {
			out = append(out, forkResult{Error: &apiError{Code: apiStatus(err), Message: err.Error()}})
			continue
		}
		s.copyView(src.ID, sb.ID)
		out = append(out, forkResult{Sandbox: s.withToken(r.Context(), s.detail(sb, false))})
	}
	writeJSON(w, http.StatusCreated, out)
}

// forkRequest is the create of a fork of src: the door's user, its
// metadata, its network layer (never a wider one), the timeout asked.
func (s *Server) forkRequest(ctx context.Context, src *sandbox.Sandbox, timeout *int64) (sandbox.CreateRequest, error) {
	cr := sandbox.CreateRequest{Labels: src.Labels, TightenOnly: true, User: sandboxUser}
	if timeout != nil {
		cr.TTLSeconds = *timeout
	}
	if s.cfg.Network == nil {
		return cr, nil // no egress proxy: no sandbox has a network
	}
	fl, ok := s.cfg.Network.(ForkLayers)
	if !ok {
		return cr, fmt.Errorf("unsupported by airlock: fork: this daemon cannot copy a sandbox's network layer: %w", errdefs.ErrUnsupported)
	}
	layer, err := fl.ForkLayer(ctx, src.ID)
	if err != nil {
		return cr, err
	}
	cr.NetworkLayer = layer
	return cr, nil
}

// copyView gives a fork what GET shows of its source's network.
func (s *Server) copyView(from, to string) {
	s.netMu.Lock()
	v := s.nets[from]
	s.netMu.Unlock()
	if v != nil {
		c := *v
		s.setView(to, &c)
	}
}

package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// E2B's sandbox lifecycle (the SDKs' lifecycle {onTimeout, autoResume},
// sent on create as autoPause, autoPauseMemory and autoResume {enabled}):
//
//   - onTimeout "pause" (autoPause: true): when the sandbox's timeout
//     ends it is paused, not destroyed (the manager's PauseOnExpiry), and
//     stays paused until connect resumes it or kill ends it; the daemon's
//     maximum lifetime still destroys it.
//   - autoResume: a call into a paused sandbox (its envd API: commands,
//     files, health) resumes it first, with a timeout of at least five
//     minutes (the create's when longer), as E2B's proxy does. Without
//     it, such a call is answered as E2B's proxy answers for a paused
//     sandbox: 409 "The sandbox is paused" (/health: 502, not running).

// lifecycle is what a door sandbox's create asked of its timeout; the
// zero value is E2B's default (killed, no auto-resume).
type lifecycle struct {
	pause      bool          // onTimeout "pause"
	autoResume bool          // resumed by a call into it
	ttl        time.Duration // the create's timeout
}

// autoResumeTTL is the least timeout E2B gives an auto-resumed sandbox.
const autoResumeTTL = 5 * time.Minute

// lifecycleInfo is E2B's SandboxLifecycle as getInfo shows it.
type lifecycleInfo struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

func (l lifecycle) info() *lifecycleInfo {
	li := &lifecycleInfo{OnTimeout: "kill", AutoResume: l.autoResume}
	if l.pause {
		li.OnTimeout = "pause"
	}
	return li
}

// parseLifecycle reads the lifecycle fields of a create. A pause that
// drops memory (autoPauseMemory: false, E2B's filesystem-only snapshot
// resumed by a reboot) is refused: airlock's pause freezes the sandbox
// with its memory, and nothing reboots it.
func parseLifecycle(req *createRequest) (lifecycle, error) {
	l := lifecycle{pause: req.AutoPause != nil && *req.AutoPause}
	if req.AutoPauseMemory != nil && !*req.AutoPauseMemory {
		return l, fmt.Errorf("unsupported by airlock: lifecycle onTimeout keepMemory false (autoPauseMemory): airlock's pause freezes the sandbox with its memory; it cannot drop it and reboot on resume: %w", errdefs.ErrInvalid)
	}
	if isSet(req.AutoResume) {
		var ar struct {
			Enabled *bool `json:"enabled"`
		}
		dec := json.NewDecoder(bytes.NewReader(req.AutoResume))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ar); err != nil || ar.Enabled == nil {
			return l, fmt.Errorf("autoResume: an object {\"enabled\": true or false}: %w", errdefs.ErrInvalid)
		}
		l.autoResume = *ar.Enabled
	}
	if l.autoResume && !l.pause {
		return l, fmt.Errorf("autoResume can only be true when onTimeout is pause (autoPause: true): %w", errdefs.ErrInvalid)
	}
	return l, nil
}

// lifecycles holds the lifecycle of the door's sandboxes that asked for
// one other than the default, by id.
type lifecycles struct {
	mu sync.Mutex
	m  map[string]lifecycle
}

func (ls *lifecycles) set(id string, l lifecycle) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = map[string]lifecycle{}
	}
	if !l.pause { // the default: nothing to keep
		delete(ls.m, id)
		return
	}
	ls.m[id] = l
}

func (ls *lifecycles) of(id string) lifecycle {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.m[id]
}

// prune forgets the sandboxes not in keep (those still running or
// paused).
func (ls *lifecycles) prune(keep map[string]bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for id := range ls.m {
		if !keep[id] {
			delete(ls.m, id)
		}
	}
}

// forget drops what the door keeps of sandbox id (it has stopped).
func (s *Server) forget(id string) {
	s.setView(id, nil)
	s.lifes.set(id, lifecycle{})
}

// paused says whether sandbox id is live and paused: the manager's
// lock-only answer when it has one (every call into a sandbox asks).
func (s *Server) paused(ctx context.Context, id string) bool {
	if p, ok := s.sbx.(interface{ Paused(id string) bool }); ok {
		return p.Paused(id)
	}
	sb, err := s.sbx.Get(ctx, id)
	return err == nil && sb.State == "paused"
}

// awake readies sandbox id for a call into it: a paused one is resumed
// first when its create asked for autoResume; else the call is answered
// as for a paused sandbox on E2B, except /health, which answers 502 (not
// running) itself. false: the call was answered.
func (s *Server) awake(w http.ResponseWriter, r *http.Request, id string) bool {
	if !s.paused(r.Context(), id) {
		return true
	}
	if l := s.lifes.of(id); l.autoResume {
		if err := s.autoResume(r.Context(), id, l); err != nil {
			writeEnvdError(w, r, apiStatus(err), rpcCode(err), oneLine(err.Error()))
			return false
		}
		return true
	}
	if r.URL.Path == "/health" {
		return true
	}
	writePaused(w, r, id)
	return false
}

// autoResume resumes sandbox id for a call into it and gives it E2B's
// timeout after an auto-resume: the create's, at least five minutes,
// within the daemon's maximum lifetime. Resumed meanwhile by another
// call is fine.
func (s *Server) autoResume(ctx context.Context, id string, l lifecycle) error {
	sb, err := s.sbx.Resume(ctx, id)
	if errors.Is(err, errdefs.ErrConflict) && !s.paused(ctx, id) {
		return nil
	}
	if err != nil {
		return err
	}
	ttl := max(l.ttl, autoResumeTTL)
	if ml, ok := s.sbx.(interface{ MaxLifetime() time.Duration }); ok && ml.MaxLifetime() > 0 {
		// (a second short of the end: SetTTL counts from its own now)
		ttl = min(ttl, time.Until(sb.Created.Add(ml.MaxLifetime()))-time.Second)
	}
	if ttl > 0 && extends(sb, ttl) {
		if _, err := s.sbx.SetTTL(ctx, id, ttl); err != nil && !errors.Is(err, errdefs.ErrInvalid) {
			return err
		}
	}
	return nil
}

// writePaused answers a call into a paused sandbox without autoResume
// as E2B's proxy does: 409 {sandboxId, message, code, canAutoResume},
// which the SDKs raise as a SandboxError (Connect code unknown). A
// stream is ended with that error instead, so its message is read (the
// SDKs read only "HTTP 409" of a stream's status).
func writePaused(w http.ResponseWriter, r *http.Request, id string) {
	msg := "The sandbox is paused: connect (Sandbox.connect) resumes it, or create it with lifecycle autoResume"
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/connect+json") {
		newStream(w).end(&rpcError{Code: codeUnknown, Message: msg})
		return
	}
	writeJSON(w, http.StatusConflict, map[string]any{"sandboxId": id, "message": msg, "code": http.StatusConflict, "canAutoResume": false})
}

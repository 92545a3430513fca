package manager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// fetchPlan is a daemon-side fetch that was checked: the URL git is given
// (its host written as it was decided: normalised, with its port) and
// the git options that hold the clone to the checked addresses.
type fetchPlan struct {
	url  string
	opts []string
}

// fetchDecision is what the audit record says of a fetch (fetch.request).
type fetchDecision struct {
	allow        bool
	rule, reason string
	addrs        []string
}

func (d fetchDecision) payload(repo, door string) map[string]any {
	dec := "deny"
	if d.allow {
		dec = "allow"
	}
	return map[string]any{"url": redactURL(repo), "door": door, "decision": dec, "rule": d.rule, "reason": d.reason, "addrs": d.addrs}
}

// remoteClone checks a repository URL that a remote client (an API key)
// asked the daemon to clone. The daemon clones as root on the host's
// network, so the clone goes where the daemon's fetch policy (the policy
// file's fetch: section, nil: nowhere) allows, decided as a sandbox's
// traffic is by its egress policy: rules, ports, and the guards on every
// address (loopback, private, metadata... need an allow CIDR). Only
// https and http; the clone connects only to the checked addresses
// (resolution pinned) and follows no redirect. Local paths, ssh and
// git:// are for the unix socket.
func remoteClone(ctx context.Context, res egress.Resolver, pol *egress.Policy, presets egress.Presets, repo string) (*fetchPlan, fetchDecision, error) {
	u, err := url.Parse(repo)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" {
		d := fetchDecision{rule: "scheme", reason: "over TCP, repo must be an https or http URL (local paths, ssh and git:// only on the unix socket)"}
		return nil, d, fmt.Errorf("%s: %w", d.reason, errdefs.ErrDenied)
	}
	t, err := egress.ParseTarget(u.Host, map[string]int{"https": 443, "http": 80}[u.Scheme])
	if err != nil {
		d := fetchDecision{rule: egress.RuleParse, reason: "repo host: " + err.Error()}
		return nil, d, fmt.Errorf("%s: %w", d.reason, errdefs.ErrInvalid)
	}
	fd, err := egress.CheckFetch(ctx, pol, presets, res, t, u.Scheme == "https")
	if err != nil {
		return nil, fetchDecision{rule: egress.RuleParse, reason: "the fetch policy does not compile"}, err
	}
	d := fetchDecision{allow: fd.Allow, rule: fd.Rule, reason: fd.Reason}
	var pinned []string
	for _, a := range fd.Addrs {
		s := a.Unmap().String()
		if a.Unmap().Is6() {
			s = "[" + s + "]"
		}
		pinned = append(pinned, s)
	}
	d.addrs = pinned
	if !fd.Allow {
		return nil, d, fmt.Errorf("over TCP the daemon fetches only what its fetch policy allows: %s (rule %s): %w", fd.Reason, fd.Rule, errdefs.ErrDenied)
	}
	if len(pinned) == 0 {
		return nil, d, fmt.Errorf("repo host %s: no checked address: %w", t.Host, errdefs.ErrDenied)
	}
	clone := *u
	clone.Host = t.String()
	opts := []string{"-c", "http.followRedirects=false", "-c", "protocol.allow=never", "-c", "protocol." + u.Scheme + ".allow=always"}
	if !t.IsIP() { // an address needs no resolving (and curl refuses a pin for one)
		opts = append(opts, "-c", "http.curloptResolve="+t.Host+":"+strconv.Itoa(t.Port)+":"+strings.Join(pinned, ","))
	}
	return &fetchPlan{url: clone.String(), opts: opts}, d, nil
}

// redactURL is a repository as the record keeps it: credentials in the
// user part, the query and the fragment of a URL replaced (the audit
// redactor then removes known secrets from the rest).
func redactURL(repo string) string {
	u, err := url.Parse(repo)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		if at := strings.LastIndex(repo, "@"); at >= 0 && strings.Contains(repo, "://") {
			return "[REDACTED]" + repo[at:]
		}
		return repo
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// gitHTTPStatus is git's own line for an HTTP error (remote text comes
// on lines of its own, prefixed "remote: ", and cannot forge it).
var gitHTTPStatus = lazyre.New(`(?m)^(?:fatal|error): unable to access '[^'\n]*': The requested URL returned error: ([0-9]{3})\s*$`)

// cloneError is what a caller is told of a failed fetch: a fixed message
// with git's exit status and the HTTP status, never the upstream's answer
// (an agent could read anything a server it controls says through it).
func cloneError(err error) error {
	msg := "clone failed"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg += fmt.Sprintf(": git exit status %d", ee.ExitCode())
	}
	if m := gitHTTPStatus().FindStringSubmatch(err.Error()); m != nil {
		msg += ", HTTP status " + m[1]
	}
	if errors.Is(err, errTooLarge) {
		msg += ": too much output"
	}
	return fmt.Errorf("%s (the upstream's answer is not shown: see the daemon's log): %w", msg, errdefs.ErrInvalid)
}

// fetchPolicy is the daemon's fetch policy: the policy file's fetch:
// section (nil, allowing nothing, without one).
func (m *Manager) fetchPolicy() *egress.Policy {
	if m.cfg.Policy == nil {
		return nil
	}
	return m.cfg.Policy.Fetch
}

// fetchPresets are the registry hosts this machine is configured with,
// as the sandboxes' policies get them.
func (m *Manager) fetchPresets() egress.Presets {
	if m.egressSvc == nil {
		return nil
	}
	return m.egressSvc.Presets()
}

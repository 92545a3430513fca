package tasks

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

// fakeResolver answers from a map; it never asks a real resolver.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// A remote client's repository URL goes where the daemon's fetch policy
// allows, decided and guarded as sandbox traffic is: with public_web
// granted, public https or http on the default ports, resolved once and
// pinned, no redirects (found in an interface review: a remote key made
// the daemon clone from a git daemon listening on the host's loopback).
// Nothing here connects anywhere.
func TestRemoteCloneIsPublicAndPinned(t *testing.T) {
	res := fakeResolver{
		"repo.example.test":     {netip.MustParseAddr("8.8.8.8")},
		"rebind.example.test":   {netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")},
		"internal.example.test": {netip.MustParseAddr("10.1.2.3")},
		"meta.example.test":     {netip.MustParseAddr("169.254.169.254")},
		"mapped.example.test":   {netip.MustParseAddr("::ffff:127.0.0.1")},
	}
	ctx := context.Background()
	web := &egress.Policy{Grant: []egress.Category{egress.PublicWeb}}
	plan, d, err := remoteClone(ctx, res, web, nil, "https://Repo.Example.Test./org/repo.git")
	if err != nil || !d.allow || d.rule != egress.RulePublicWeb {
		t.Fatalf("%v %+v", err, d)
	}
	for _, want := range []string{"http.curloptResolve=repo.example.test:443:8.8.8.8", "http.followRedirects=false", "protocol.allow=never", "protocol.https.allow=always"} {
		if !slices.Contains(plan.opts, want) {
			t.Errorf("options %v lack %s", plan.opts, want)
		}
	}
	// git is given the host as it was decided, so that the pin applies.
	if plan.url != "https://repo.example.test:443/org/repo.git" {
		t.Errorf("clone URL %s", plan.url)
	}
	// A name that also resolves to loopback is pinned to its public address.
	if plan, _, err := remoteClone(ctx, res, web, nil, "https://rebind.example.test/x.git"); err != nil || !slices.Contains(plan.opts, "http.curloptResolve=rebind.example.test:443:8.8.8.8") {
		t.Errorf("a name with a loopback address too: %v %v", plan, err)
	}
	// An address needs no pin (curl refuses one for a literal).
	if plan, _, err := remoteClone(ctx, res, web, nil, "https://[2606:4700::1111]/x.git"); err != nil || slices.ContainsFunc(plan.opts, func(o string) bool { return strings.HasPrefix(o, "http.curloptResolve") }) {
		t.Errorf("an IPv6 literal: %v %v", plan, err)
	}
	for repo, why := range map[string]string{
		"https://127.0.0.1/x.git":             "guard-loopback",
		"https://0x7f.1/x.git":                "guard-loopback",
		"https://[::1]/x.git":                 "guard-loopback",
		"https://internal.example.test/x.git": "guard-private",
		"https://meta.example.test/x.git":     "guard-metadata",
		"https://mapped.example.test/x.git":   "guard-loopback",
		"https://repo.example.test:22/x.git":  "port",
		"https://repo.example.test:80/x.git":  "port",
		"git://repo.example.test/x.git":       "https or http URL",
		"ssh://git@repo.example.test/x.git":   "https or http URL",
		"git@repo.example.test:x.git":         "https or http URL",
		"/srv/git/private.git":                "https or http URL",
		"file:///srv/git/private.git":         "https or http URL",
		"https://nowhere.example.test/x.git":  "rule resolve",
	} {
		_, d, err := remoteClone(ctx, res, web, nil, repo)
		if err == nil || !strings.Contains(err.Error(), why) || d.allow {
			t.Errorf("%s: %v, want an error about %q", repo, err, why)
		}
		if err != nil && !errors.Is(err, errdefs.ErrDenied) {
			t.Errorf("%s: %v is not a denial", repo, err)
		}
	}
}

// Without a fetch policy, nothing is fetched for a remote caller; with
// one, its rules decide, loopback only through an allow CIDR.
func TestRemoteCloneNeedsTheFetchPolicy(t *testing.T) {
	ctx := context.Background()
	res := fakeResolver{"repo.example.test": {netip.MustParseAddr("8.8.8.8")}}
	for _, repo := range []string{"https://repo.example.test/x.git", "http://127.0.0.1:8080/x.git"} {
		if _, d, err := remoteClone(ctx, res, nil, nil, repo); !errors.Is(err, errdefs.ErrDenied) || d.rule != egress.RuleDefaultDeny || !strings.Contains(err.Error(), "no fetch policy") {
			t.Errorf("%s without a fetch policy: %v %+v", repo, err, d)
		}
	}
	pol := &egress.Policy{Rules: []egress.Rule{
		{ID: "local-git", Action: egress.Allow, CIDRs: []string{"127.0.0.1/32"}, Ports: []int{8080}},
		{ID: "no-secret-repos", Action: egress.Deny, Hosts: []string{"secret.example.test"}},
	}}
	plan, d, err := remoteClone(ctx, res, pol, nil, "http://0x7f.1:8080/x.git")
	if err != nil || d.rule != "local-git" || plan.url != "http://127.0.0.1:8080/x.git" || !slices.Equal(d.addrs, []string{"127.0.0.1"}) {
		t.Fatalf("allowed loopback: %v %+v %+v", err, plan, d)
	}
	for repo, why := range map[string]string{
		"http://127.0.0.1:8081/x.git":        "rule port",
		"http://127.0.0.2:8080/x.git":        "rule default-deny",
		"https://repo.example.test/x.git":    "rule default-deny",
		"https://secret.example.test/x.git":  "rule no-secret-repos",
		"https://user:pw@repo.example.test/": "rule default-deny",
	} {
		if _, _, err := remoteClone(ctx, res, pol, nil, repo); !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want %q", repo, err, why)
		}
	}
	if got := redactURL("https://user:tok3n@repo.example.test/x.git?access_token=tok3n#frag"); strings.Contains(got, "tok3n") || strings.Contains(got, "user") {
		t.Errorf("redacted URL %s", got)
	}
}

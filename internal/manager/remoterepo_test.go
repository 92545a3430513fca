package manager

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

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

// A remote client's repository URL: public https or http on the default
// port, resolved once and pinned, no redirects (found in an interface
// review: a remote key made the daemon clone from a git daemon listening
// on the host's loopback). Nothing here connects anywhere.
func TestRemoteCloneIsPublicAndPinned(t *testing.T) {
	res := fakeResolver{
		"repo.example.test":     {netip.MustParseAddr("8.8.8.8")},
		"rebind.example.test":   {netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")},
		"internal.example.test": {netip.MustParseAddr("10.1.2.3")},
		"meta.example.test":     {netip.MustParseAddr("169.254.169.254")},
		"mapped.example.test":   {netip.MustParseAddr("::ffff:127.0.0.1")},
	}
	ctx := context.Background()
	opts, err := remoteClone(ctx, res, "https://repo.example.test/org/repo.git")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"http.curloptResolve=repo.example.test:443:8.8.8.8", "http.followRedirects=false", "protocol.allow=never", "protocol.https.allow=always"} {
		if !slices.Contains(opts, want) {
			t.Errorf("options %v lack %s", opts, want)
		}
	}
	// An address needs no pin (curl refuses one for a literal).
	if opts, err := remoteClone(ctx, res, "https://[2606:4700::1111]/x.git"); err != nil || slices.ContainsFunc(opts, func(o string) bool { return strings.HasPrefix(o, "http.curloptResolve") }) {
		t.Errorf("an IPv6 literal: %v %v", opts, err)
	}
	for repo, why := range map[string]string{
		"https://127.0.0.1/x.git":             "loopback",
		"https://[::1]/x.git":                 "loopback",
		"https://rebind.example.test/x.git":   "loopback",
		"https://internal.example.test/x.git": "private",
		"https://meta.example.test/x.git":     "metadata",
		"https://mapped.example.test/x.git":   "loopback",
		"https://repo.example.test:22/x.git":  "default port",
		"http://repo.example.test:443/x.git":  "default port",
		"git://repo.example.test/x.git":       "https or http URL",
		"ssh://git@repo.example.test/x.git":   "https or http URL",
		"git@repo.example.test:x.git":         "https or http URL",
		"/srv/git/private.git":                "https or http URL",
		"file:///srv/git/private.git":         "https or http URL",
		"https://nowhere.example.test/x.git":  "does not resolve",
	} {
		_, err := remoteClone(ctx, res, repo)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want an error about %q", repo, err, why)
		}
		if err != nil && why != "does not resolve" && !errors.Is(err, errdefs.ErrDenied) {
			t.Errorf("%s: %v is not a denial", repo, err)
		}
	}
}

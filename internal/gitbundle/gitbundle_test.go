package gitbundle

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

const oid = "a10a47ced3d681cfcb4adcc1f33ea4a5535ade11"

func header(lines ...string) string {
	return strings.Join(lines, "\n") + "\n\nPACK..."
}

// A plain bundle of a branch, a tag and HEAD reads and passes.
func TestReadHeader(t *testing.T) {
	h, err := ReadHeader(strings.NewReader(header("# v2 git bundle", oid+" HEAD", oid+" refs/heads/main", oid+" refs/tags/v1.0")))
	if err != nil || h.Version != 2 || len(h.Refs) != 3 || h.Refs[1] != (Ref{oid, "refs/heads/main"}) {
		t.Fatalf("%+v %v", h, err)
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	sha256 := strings.Repeat("ab", 32)
	h, err = ReadHeader(strings.NewReader(header("# v3 git bundle", "@object-format=sha256", sha256+" refs/heads/main")))
	if err != nil || h.ObjectFormat != "sha256" || h.Check() != nil {
		t.Fatalf("v3 sha256: %+v %v", h, err)
	}
}

// Attacks on the header: each is refused as invalid, with a reason.
func TestHeaderAttacks(t *testing.T) {
	for name, c := range map[string]struct{ in, why string }{
		"not a bundle":             {"PK\x03\x04 zip\n", "signature"},
		"a v4 signature":           {header("# v4 git bundle", oid+" HEAD"), "signature"},
		"no end of header":         {"# v2 git bundle\n" + oid + " HEAD\n", "ends before the pack"},
		"no refs":                  {header("# v2 git bundle"), "no reference"},
		"a short oid":              {header("# v2 git bundle", "a10a47 HEAD"), "object id"},
		"an upper-case oid":        {header("# v2 git bundle", strings.ToUpper(oid)+" HEAD"), "object id"},
		"a partial bundle":         {header("# v3 git bundle", "@filter=blob:none", oid+" HEAD"), "partial bundle"},
		"an unknown capability":    {header("# v3 git bundle", "@hooks=yes", oid+" HEAD"), "unknown capability"},
		"a capability in v2":       {header("# v2 git bundle", "@object-format=sha1", oid+" HEAD"), "capability line"},
		"a capability after a ref": {header("# v3 git bundle", oid+" HEAD", "@object-format=sha1"), "capability line"},
		"a prereq after a ref":     {header("# v2 git bundle", oid+" HEAD", "-"+oid+" x"), "prerequisite"},
		"a sha1 oid in sha256":     {header("# v3 git bundle", "@object-format=sha256", oid+" HEAD"), "object id"},
	} {
		_, err := ReadHeader(strings.NewReader(c.in))
		if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want an invalid error about %q", name, err, c.why)
		}
	}
	huge := "# v2 git bundle\n" + strings.Repeat(oid+" refs/heads/"+strings.Repeat("x", 200)+"\n", MaxHeader/240+1) + "\n"
	if _, err := ReadHeader(strings.NewReader(huge)); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a header past %d bytes: %v", MaxHeader, err)
	}
}

// A bundle whose prerequisites are missing (an incremental bundle, made
// from a range) is refused before git sees it: the commits it builds on
// are not in it.
func TestPrerequisitesRefused(t *testing.T) {
	h, err := ReadHeader(strings.NewReader(header("# v2 git bundle", "-"+oid+" the base", oid+" refs/heads/main")))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Check(); err == nil || !strings.Contains(err.Error(), "does not carry") {
		t.Errorf("prerequisites: %v", err)
	}
}

// Refs outside refs/heads and refs/tags, and names with path tricks, are
// refused; git's own rules for ref names hold.
func TestRefNameAttacks(t *testing.T) {
	for _, name := range []string{
		"refs/remotes/origin/main", "refs/replace/" + oid, "refs/notes/commits", "refs/stash",
		"refs/original/refs/heads/main", "FETCH_HEAD", "ORIG_HEAD", "config", "hooks/post-checkout",
		"refs/heads/../../config", "refs/heads/../../../etc/passwd", "refs/tags/../heads/x",
		"/refs/heads/main", "refs/heads/", "refs/heads//x", "refs/heads/x/", "refs/heads/.git",
		"refs/heads/x/.hidden", "refs/heads/main.lock", "refs/heads/a.", "refs/heads/@",
		"refs/heads/a@{1}", "refs/heads/a b", "refs/heads/a\tb", "refs/heads/a\x00b", "refs/heads/a\x1b[2J",
		"refs/heads/a~1", "refs/heads/a^", "refs/heads/a:b", "refs/heads/a?", "refs/heads/a*", "refs/heads/a[",
		"refs/heads/a\\b", "refs/heads/\xff", "refs/heads/a\x7f", "refs/heads", "head", "refs/HEADS/main",
	} {
		if err := CheckRefName(name); err == nil || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%q: accepted", name)
		}
	}
	for _, name := range []string{"HEAD", "refs/heads/main", "refs/heads/feature/x-1_2", "refs/tags/v1.2.3", "refs/heads/ümlaut"} {
		if err := CheckRefName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	h := &Header{Refs: []Ref{{oid, "refs/heads/main"}, {oid, "refs/heads/main"}}}
	if err := h.Check(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a name twice: %v", err)
	}
}

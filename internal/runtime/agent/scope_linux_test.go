package agent

import (
	"errors"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime/agent/fileops"
)

var roots = []string{"/workspace", "/home/sandbox"}

func TestCheckScopePaths(t *testing.T) {
	got, err := checkScopePaths([]string{"/workspace/src", "/home/sandbox", "/workspace", "/workspace/src"}, roots)
	if want := []string{"/home/sandbox", "/workspace", "/workspace/src"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("valid paths: %q, %v; want %q sorted without duplicates", got, err, want)
	}
	if got, err := checkScopePaths(nil, roots); err != nil || len(got) != 0 {
		t.Errorf("no paths: %q, %v; want an empty scope", got, err)
	}
	for _, bad := range []string{
		"", "workspace/src", "./src", "/workspace/../etc", "/workspace/src/..", "/workspace/./src",
		"/workspace/src/", "//workspace/src", "/workspace\x00/src", "/", "/etc", "/tmp",
		"/workspacex", "/home/sandboxy", "/home",
	} {
		if _, err := checkScopePaths([]string{"/workspace/ok", bad}, roots); !errors.Is(err, fileops.ErrInvalidPath) {
			t.Errorf("checkScopePaths(%q) = %v, want an invalid path error", bad, err)
		}
	}
	if _, err := checkScopePaths([]string{"../x"}, roots); scopeErrCode(err) != "invalid" {
		t.Errorf("a bad scope path answers %q, want invalid", scopeErrCode(err))
	}
}

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		p, dir string
		want   bool
	}{
		{"/workspace", "/workspace", true},
		{"/workspace/src", "/workspace", true},
		{"/workspace/src/a.go", "/workspace/src", true},
		{"/workspacex", "/workspace", false},
		{"/workspace", "/workspace/src", false},
		{"/workspace/srcx", "/workspace/src", false},
		{"/anything", "/", true},
	} {
		if got := within(tt.p, tt.dir); got != tt.want {
			t.Errorf("within(%q, %q) = %t, want %t", tt.p, tt.dir, got, tt.want)
		}
	}
}

func TestIntersectScopes(t *testing.T) {
	scratch := []string{"/tmp", "/home/sandbox"}
	for _, tt := range []struct {
		name             string
		prev, next, want []string
	}{
		{"first scope", nil, []string{"/workspace/src", "/workspace/newdir"}, []string{"/workspace/newdir", "/workspace/src"}},
		{"first scope, nested paths", nil, []string{"/workspace/src/a", "/workspace/src"}, []string{"/workspace/src"}},
		{"first scope, empty", nil, []string{}, []string{}},
		{"narrower", []string{"/workspace/src", "/workspace/newdir"}, []string{"/workspace/newdir"}, []string{"/workspace/newdir"}},
		{"deeper", []string{"/workspace/src"}, []string{"/workspace/src/pkg"}, []string{"/workspace/src/pkg"}},
		{"wider gets the old", []string{"/workspace/src"}, []string{"/workspace"}, []string{"/workspace/src"}},
		{"disjoint gets nothing", []string{"/workspace/src"}, []string{"/workspace/docs"}, []string{}},
		{"empty previous scope", []string{}, []string{"/workspace/src"}, []string{}},
		{"home is always writable", []string{"/workspace/src"}, []string{"/home/sandbox/proj"}, []string{"/home/sandbox/proj"}},
		{"mixed", []string{"/workspace/a", "/workspace/b/c"}, []string{"/workspace/a/x", "/workspace/b", "/workspace/d"}, []string{"/workspace/a/x", "/workspace/b/c"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := intersectScopes(tt.prev, tt.next, scratch); !slices.Equal(got, tt.want) {
				t.Errorf("intersectScopes(%q, %q) = %q, want %q", tt.prev, tt.next, got, tt.want)
			}
		})
	}
}

func TestScopeToOpen(t *testing.T) {
	scratch := []string{"/tmp", "/home/sandbox"}
	next := []string{"/home/sandbox/x", "/workspace", "/workspace/docs", "/workspace/src/pkg"}
	if got := scopeToOpen(next, nil, scratch); !slices.Equal(got, next) {
		t.Errorf("first scope: opens %q, want every path %q", got, next)
	}
	// /workspace/docs shares nothing with the scope in force: it is neither
	// created nor given a rule
	want := []string{"/home/sandbox/x", "/workspace", "/workspace/src/pkg"}
	if got := scopeToOpen(next, []string{"/workspace/src"}, scratch); !slices.Equal(got, want) {
		t.Errorf("narrowing: opens %q, want %q", got, want)
	}
	if !slices.Equal(next, []string{"/home/sandbox/x", "/workspace", "/workspace/docs", "/workspace/src/pkg"}) {
		t.Errorf("scopeToOpen changed its argument: %q", next)
	}
}

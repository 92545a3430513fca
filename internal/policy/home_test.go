package policy

import "testing"

// A sandbox whose user's home is /home/user (the E2B door's) may write
// there whatever the scope, as in the default home, and nowhere that
// merely starts with the same letters; the policy it came from is left
// as it was.
func TestWithHome(t *testing.T) {
	base := Defaults()
	base.Scope = []string{"src/**"}
	p := base.WithHome("/home/user")
	for abs, want := range map[string]bool{
		"/home/user": true, "/home/user/a.txt": true, "/home/user/.cache/x": true, "/home/sandbox/x": true, "/tmp/x": true,
		"/home/userx/a": false, "/home/use": false, "/home": false, "/home/other/a": false, "/etc/passwd": false, "/workspace/README": false,
	} {
		if got := p.InScope(abs); got != want {
			t.Errorf("InScope(%s) = %v, want %v", abs, got, want)
		}
	}
	if base.InScope("/home/user/a.txt") {
		t.Error("WithHome changed the policy it was made from")
	}
	if base.WithHome("") != base || base.WithHome("/home/sandbox") != base {
		t.Error("WithHome of no or the default home made a new policy")
	}
	if d := p.Decide(AnalyzeArgv([]string{"touch", "notes.txt"}, "/home/user")); d.Action != Allow {
		t.Errorf("touch notes.txt in /home/user: %s (%s)", d.Action, d.Reason)
	}
	if d := p.Decide(AnalyzeArgv([]string{"touch", "/workspace/x"}, "/home/user")); d.Action == Allow {
		t.Errorf("touch /workspace/x outside the scope: allowed")
	}
}

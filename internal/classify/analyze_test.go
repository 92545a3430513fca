package classify

import (
	"slices"
	"testing"
)

func TestAnalysisDetails(t *testing.T) {
	a := Analyze(`cd web && npm ci && curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/x -o out.json`, "")
	if !slices.Contains(a.Hosts, "api.github.com") {
		t.Errorf("hosts %v", a.Hosts)
	}
	if !slices.Contains(a.Secrets, "$GITHUB_TOKEN") {
		t.Errorf("secrets %v", a.Secrets)
	}
	if !slices.Contains(a.Writes, "/workspace/web/out.json") {
		t.Errorf("writes %v (cd must move the cwd)", a.Writes)
	}
	argv := AnalyzeArgv([]string{"bash", "-lc", "rm -rf node_modules && npm install"}, "/workspace/app")
	if !argv.Has(Destructive) || !argv.Has(Dependency) || argv.Commands[0].Via[0] != "bash" {
		t.Errorf("argv analysis %+v", argv)
	}
	if w := argv.Commands[0].Writes; len(w) != 1 || w[0] != "/workspace/app/node_modules" {
		t.Errorf("writes %v", w)
	}
	if bad := Analyze("echo 'unterminated", ""); bad.Error == "" || !bad.Has(Unknown) {
		t.Errorf("unparsable line: %+v", bad)
	}
}

func TestWithGranted(t *testing.T) {
	for _, c := range []struct {
		line    string
		granted []string
		secret  bool
	}{
		{`curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com/`, nil, true},
		{`curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com/`, []string{"API_TOKEN"}, false},
		{`curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com/`, []string{"OTHER_TOKEN"}, true},
		{`echo $API_TOKEN; cat .env`, []string{"API_TOKEN"}, true},
		{`echo $API_TOKEN $GITHUB_TOKEN`, []string{"API_TOKEN"}, true},
		{`env`, []string{"API_TOKEN"}, true},
		{`cat /proc/self/environ`, []string{"API_TOKEN"}, true},
	} {
		a := Analyze(c.line, "/workspace").WithGranted(c.granted)
		if got := slices.Contains(a.Classes, Secret); got != c.secret {
			t.Errorf("%s with %v granted: secret %v, want %v (%v)", c.line, c.granted, got, c.secret, a.Classes)
		}
	}
}

package bundle

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// ParseTestOutput reads a test command's output (stdout and stderr, in any
// order) and returns the counts and failed test names that go test (plain
// or -json), pytest, jest, vitest, mocha or cargo test printed, or nil when
// it recognises none of them. ANSI colours and carriage-return progress
// redraws are ignored.
//
// When the output holds more than one framework's results (a Makefile that
// runs go test and then npm test), their counts are added and Framework
// names them all, comma-separated, in the order go, pytest, jest, vitest,
// mocha, cargo.
//
// Go counts tests, subtests included; a parent test whose subtests are
// listed stands for them and is not counted itself, unless it failed while
// none of them did. A package go test reports without listing its tests
// (go test without -v lists only failures) counts as one test named after
// the package, and so does a package that failed with no failed test (a
// build failure, a panic in TestMain, a timeout).
//
// At most MaxFailureNames failed tests are named, the first seen
// (FailuresCapped says more failed); the counts are always exact.
func ParseTestOutput(out string) *TestSummary {
	lines := cleanLines(out)
	var found []*TestSummary
	for _, p := range []func([]string) *TestSummary{parseGo, parsePytest, parseJest, parseVitest, parseMocha, parseCargo} {
		if s := p(lines); s != nil {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil
	case 1:
		return found[0]
	}
	sum := &TestSummary{}
	var names []string
	for _, s := range found {
		names = append(names, s.Framework)
		sum.Passed += s.Passed
		sum.Failed += s.Failed
		sum.Skipped += s.Skipped
		sum.Failures = append(sum.Failures, s.Failures...)
		sum.FailuresCapped = sum.FailuresCapped || s.FailuresCapped
		sum.Packages += s.Packages
	}
	if len(sum.Failures) > MaxFailureNames {
		sum.Failures, sum.FailuresCapped = sum.Failures[:MaxFailureNames], true
	}
	sum.Framework = strings.Join(names, ",")
	return sum
}

// MaxFailureNames bounds the failed test names a TestSummary keeps (the
// counts stay exact): a reviewer reads the first few, and an output of a
// million failures must not make a bundle a million names long.
const MaxFailureNames = 1000

// failureNames collects failed test names in the order first seen, each
// once, at most MaxFailureNames of them; capped says some were left out.
type failureNames struct {
	list   []string
	seen   map[string]bool
	capped bool
}

func (f *failureNames) add(name string) {
	if name == "" || f.seen[name] {
		return
	}
	if len(f.list) >= MaxFailureNames {
		f.capped = true
		return
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[name] = true
	f.list = append(f.list, name)
}

// set puts the names in s.
func (f *failureNames) set(s *TestSummary) {
	s.Failures, s.FailuresCapped = f.list, f.capped
}

var ansiRE = lazyre.New(`\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// cleanLines splits output into lines as a terminal would have shown them:
// without colour codes, and with a carriage return's redraw replacing what
// came before it on the line.
func cleanLines(out string) []string {
	out = ansiRE().ReplaceAllString(out, "")
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = l
	}
	return lines
}

// appendNew appends name unless it is empty or already there. It scans
// list, so it is for short lists; failed test names use failureNames.
func appendNew(list []string, name string) []string {
	if name == "" || slices.Contains(list, name) {
		return list
	}
	return append(list, name)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

var (
	goTestRE    = lazyre.New(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(\d+(?:\.\d+)?s\)`)
	goPkgOKRE   = lazyre.New(`^ok\s+(\S+)\s+(?:\d+(?:\.\d+)?s|\(cached\))`)
	goPkgFailRE = lazyre.New(`^FAIL\s+(\S+)\s+(?:\d+(?:\.\d+)?s|\[[^\]]+\])`)
)

// goEvent is the part of a test2json event ParseTestOutput needs.
type goEvent struct {
	Action  string
	Package string
	Test    string
}

// goPackage is one package's results, in the order go test printed them.
type goPackage struct {
	name   string
	tests  []string
	state  map[string]string // test -> pass, fail, skip
	result string            // pass, fail, "" (not seen yet)
}

func (p *goPackage) record(test, state string) {
	if p.state == nil {
		p.state = map[string]string{}
	}
	if _, ok := p.state[test]; !ok {
		p.tests = append(p.tests, test)
	}
	p.state[test] = state
}

func parseGo(lines []string) *TestSummary {
	var (
		pkgs    []*goPackage
		section = &goPackage{} // plain output: tests seen since the last package line
		byName  = map[string]*goPackage{}
		seen    bool
	)
	jsonPkg := func(name string) *goPackage {
		p := byName[name]
		if p == nil {
			p = &goPackage{name: name}
			byName[name] = p
			pkgs = append(pkgs, p)
		}
		return p
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "{") {
			var ev goEvent
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Action != "" && ev.Package != "" {
				switch ev.Action {
				case "pass", "fail", "skip":
					seen = true
					p := jsonPkg(ev.Package)
					if ev.Test != "" {
						p.record(ev.Test, ev.Action)
					} else {
						p.result = ev.Action
					}
				}
				continue
			}
		}
		if m := goTestRE().FindStringSubmatch(l); m != nil {
			seen = true
			section.record(m[2], strings.ToLower(m[1]))
			continue
		}
		result := ""
		var m []string
		if m = goPkgOKRE().FindStringSubmatch(l); m != nil {
			result = "pass"
		} else if m = goPkgFailRE().FindStringSubmatch(l); m != nil {
			result = "fail"
		}
		if result != "" {
			seen = true
			section.name, section.result = m[1], result
			pkgs = append(pkgs, section)
			section = &goPackage{}
		}
	}
	if !seen {
		return nil
	}
	if len(section.tests) > 0 { // tests with no package line after them (output cut short)
		pkgs = append(pkgs, section)
	}
	s := &TestSummary{Framework: "go"}
	var failures failureNames
	for _, p := range pkgs {
		p.count(s, &failures)
	}
	failures.set(s)
	return s
}

// count adds the package's results to s and its failed tests to failures;
// see ParseTestOutput for the rules.
func (p *goPackage) count(s *TestSummary, failures *failureNames) {
	// A test's subtests (and theirs) are the names that start with its name
	// and a slash: in sorted order, those from t+"/" up to t+"0" ('/'+1).
	// nfail[i] is how many of sorted[:i] failed.
	sorted := slices.Clone(p.tests)
	slices.Sort(sorted)
	nfail := make([]int, len(sorted)+1)
	for i, u := range sorted {
		nfail[i+1] = nfail[i]
		if p.state[u] == "fail" {
			nfail[i+1]++
		}
	}
	failed := false
	for _, t := range p.tests {
		st := p.state[t]
		lo, _ := slices.BinarySearch(sorted, t+"/")
		hi, _ := slices.BinarySearch(sorted, t+"0")
		hasChildren, childFailed := hi > lo, nfail[hi] > nfail[lo]
		if hasChildren && (st != "fail" || childFailed) {
			continue
		}
		switch st {
		case "pass":
			s.Passed++
		case "fail":
			failed = true
			s.Failed++
			failures.add(t)
		case "skip":
			s.Skipped++
		}
	}
	switch {
	case p.result == "fail" && !failed:
		s.Failed++
		s.Packages++
		failures.add(p.name)
	case p.result == "pass" && len(p.tests) == 0:
		s.Passed++
		s.Packages++
	}
}

var (
	pytestSummaryRE = lazyre.New(`^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)(?:, )?)+) in \d+(?:\.\d+)?(?:s| seconds)(?: \([0-9:.]+\))?\s*=*$`)
	pytestNoneRE    = lazyre.New(`^=+ no tests ran in \d+(?:\.\d+)?(?:s| seconds) =+$`)
	pytestCountRE   = lazyre.New(`(\d+) (\w+)`)
	pytestFailedRE  = lazyre.New(`^(?:FAILED|ERROR) (\S.*)$`)
)

func parsePytest(lines []string) *TestSummary {
	s := &TestSummary{Framework: "pytest"}
	seen := false
	var failures failureNames
	for _, l := range lines {
		if m := pytestSummaryRE().FindStringSubmatch(l); m != nil {
			seen = true
			for _, c := range pytestCountRE().FindAllStringSubmatch(m[1], -1) {
				n := atoi(c[1])
				switch c[2] {
				case "passed", "xpassed":
					s.Passed += n
				case "failed", "error", "errors":
					s.Failed += n
				case "skipped", "xfailed":
					s.Skipped += n
				}
			}
			continue
		}
		if pytestNoneRE().MatchString(l) {
			seen = true
			continue
		}
		if m := pytestFailedRE().FindStringSubmatch(l); m != nil {
			name, _, _ := strings.Cut(m[1], " - ")
			failures.add(strings.TrimSpace(name))
		}
	}
	if !seen {
		return nil
	}
	failures.set(s)
	return s
}

var (
	jestTestsRE  = lazyre.New(`^Tests:\s+((?:\d+ \w+, )*\d+ total)\s*$`)
	jestCountRE  = lazyre.New(`(\d+) (\w+)`)
	jestBulletRE = lazyre.New(`^\s*● (.+?)\s*$`)
)

func parseJest(lines []string) *TestSummary {
	s := &TestSummary{Framework: "jest"}
	seen := false
	var failures failureNames
	for _, l := range lines {
		if m := jestTestsRE().FindStringSubmatch(l); m != nil {
			seen = true
			for _, c := range jestCountRE().FindAllStringSubmatch(m[1], -1) {
				n := atoi(c[1])
				switch c[2] {
				case "passed":
					s.Passed += n
				case "failed":
					s.Failed += n
				case "skipped", "pending", "todo":
					s.Skipped += n
				}
			}
			continue
		}
		if m := jestBulletRE().FindStringSubmatch(l); m != nil {
			name := m[1]
			if name == "Test suite failed to run" || strings.HasSuffix(name, "Warning:") || name == "Console" {
				continue
			}
			failures.add(name)
		}
	}
	if !seen {
		return nil
	}
	if s.Failed > 0 {
		failures.set(s)
	}
	return s
}

var (
	vitestTestsRE = lazyre.New(`^\s*Tests\s+((?:\d+ \w+(?: \| )?)+)\s*\(\d+\)\s*$`)
	vitestCountRE = lazyre.New(`(\d+) (\w+)`)
	vitestFailRE  = lazyre.New(`^\s*FAIL\s+(\S.* > .+?)\s*$`)
)

func parseVitest(lines []string) *TestSummary {
	s := &TestSummary{Framework: "vitest"}
	seen := false
	var failures failureNames
	for _, l := range lines {
		if m := vitestTestsRE().FindStringSubmatch(l); m != nil {
			seen = true
			for _, c := range vitestCountRE().FindAllStringSubmatch(m[1], -1) {
				n := atoi(c[1])
				switch c[2] {
				case "passed":
					s.Passed += n
				case "failed":
					s.Failed += n
				case "skipped", "todo":
					s.Skipped += n
				}
			}
			continue
		}
		if m := vitestFailRE().FindStringSubmatch(l); m != nil {
			failures.add(m[1])
		}
	}
	if !seen {
		return nil
	}
	if s.Failed > 0 {
		failures.set(s)
	}
	return s
}

var (
	mochaPassingRE = lazyre.New(`^\s*(\d+) passing \(\d+(?:\.\d+)?(?:ms|s|m|h)\)\s*$`)
	mochaFailingRE = lazyre.New(`^\s*(\d+) failing\s*$`)
	mochaPendingRE = lazyre.New(`^\s*(\d+) pending\s*$`)
	mochaTitleRE   = lazyre.New(`^\s*\d+\) (.+)$`)
)

// mochaTitleLines bounds how many lines one failure's title may span (the
// spec reporter puts each nested describe on its own line).
const mochaTitleLines = 8

func parseMocha(lines []string) *TestSummary {
	s := &TestSummary{Framework: "mocha"}
	seen, failing := false, false
	var failures failureNames
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := mochaPassingRE().FindStringSubmatch(l); m != nil {
			seen, failing = true, false
			s.Passed += atoi(m[1])
			continue
		}
		if m := mochaFailingRE().FindStringSubmatch(l); m != nil {
			seen, failing = true, true
			s.Failed += atoi(m[1])
			continue
		}
		if m := mochaPendingRE().FindStringSubmatch(l); m != nil {
			seen = true
			s.Skipped += atoi(m[1])
			continue
		}
		if !failing {
			continue
		}
		// After "N failing": "  1) Suite\n       test:\n     Error: ..."
		m := mochaTitleRE().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		parts := []string{strings.TrimSpace(m[1])}
		for j := i + 1; !strings.HasSuffix(parts[len(parts)-1], ":") && j < len(lines) && j <= i+mochaTitleLines; j++ {
			parts = append(parts, strings.TrimSpace(lines[j]))
		}
		if last := parts[len(parts)-1]; strings.HasSuffix(last, ":") {
			parts[len(parts)-1] = strings.TrimSuffix(last, ":")
			failures.add(strings.Join(parts, " "))
			i += len(parts) - 1
		}
	}
	if !seen {
		return nil
	}
	failures.set(s)
	return s
}

var (
	cargoResultRE = lazyre.New(`^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;`)
	cargoFailRE   = lazyre.New(`^test (\S+)(?: - should panic)? \.\.\. FAILED\s*$`)
)

func parseCargo(lines []string) *TestSummary {
	s := &TestSummary{Framework: "cargo"}
	seen := false
	var failures failureNames
	for _, l := range lines {
		if m := cargoResultRE().FindStringSubmatch(l); m != nil {
			seen = true
			s.Passed += atoi(m[1])
			s.Failed += atoi(m[2])
			s.Skipped += atoi(m[3])
			continue
		}
		if m := cargoFailRE().FindStringSubmatch(l); m != nil {
			failures.add(m[1])
		}
	}
	if !seen {
		return nil
	}
	failures.set(s)
	return s
}

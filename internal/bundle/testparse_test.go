package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The samples in testdata/testoutput are real runs of each tool (go 1.26,
// pytest 7.2, jest 30, vitest 4, mocha 12, cargo 1.95) on small projects
// with passing, failing and skipped tests, paths rewritten to /workspace.
func TestParseTestOutputSamples(t *testing.T) {
	for _, tc := range []struct {
		file string
		want *TestSummary
	}{
		// Without -v go test lists only failures: the passing package counts as one.
		{"go_plain.txt", &TestSummary{Framework: "go", Passed: 1, Failed: 2, Packages: 1, Failures: []string{"TestSub", "TestDiv/by_zero"}}},
		// TestDiv stands for its three subtests; it is not counted itself.
		{"go_verbose.txt", &TestSummary{Framework: "go", Passed: 5, Failed: 2, Skipped: 1, Failures: []string{"TestSub", "TestDiv/by_zero"}}},
		{"go_json.txt", &TestSummary{Framework: "go", Passed: 5, Failed: 2, Skipped: 1, Failures: []string{"TestSub", "TestDiv/by_zero"}}},
		// A package that does not build is a failure of its own.
		{"go_buildfail.txt", &TestSummary{Framework: "go", Passed: 1, Failed: 3, Packages: 2, Failures: []string{"example.com/shop/broken", "TestSub", "TestDiv/by_zero"}}},
		{"go_json_buildfail.txt", &TestSummary{Framework: "go", Passed: 5, Failed: 3, Skipped: 1, Packages: 1, Failures: []string{"example.com/shop/broken", "TestSub", "TestDiv/by_zero"}}},
		// errors count as failures, xfailed as skipped.
		{"pytest_fail.txt", &TestSummary{Framework: "pytest", Passed: 5, Failed: 3, Skipped: 2, Failures: []string{
			"tests/test_cart.py::test_discount", "tests/test_cart.py::test_quantity[-1]", "tests/test_cart.py::test_uses_broken"}}},
		{"pytest_quiet.txt", &TestSummary{Framework: "pytest", Passed: 2}},
		{"pytest_color.txt", &TestSummary{Framework: "pytest", Passed: 2}},
		// Every test deselected: pytest ran, and ran nothing.
		{"pytest_deselected.txt", &TestSummary{Framework: "pytest"}},
		{"jest.txt", &TestSummary{Framework: "jest", Passed: 2, Failed: 2, Skipped: 2, Failures: []string{"Cart › applies the discount code", "rounds half up"}}},
		{"vitest.txt", &TestSummary{Framework: "vitest", Passed: 2, Failed: 1, Skipped: 1, Failures: []string{"cart.test.js > Cart > applies the discount code"}}},
		{"vitest_pass.txt", &TestSummary{Framework: "vitest", Passed: 1}},
		{"mocha.txt", &TestSummary{Framework: "mocha", Passed: 2, Failed: 2, Skipped: 1, Failures: []string{
			"Cart rejects negative quantities", "Cart #total() applies the discount code"}}},
		// Three test binaries (unit, integration, doc-tests), summed.
		{"cargo.txt", &TestSummary{Framework: "cargo", Passed: 2, Failed: 2, Skipped: 1, Failures: []string{"tests::panics", "tests::overflows"}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "testoutput", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := ParseTestOutput(string(b)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseTestOutput(%s)\n got %+v\nwant %+v", tc.file, got, tc.want)
			}
		})
	}
}

func TestParseTestOutputLines(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      *TestSummary
	}{
		{"nothing", "", nil},
		{"build error", "main.go:3:1: syntax error: non-declaration statement outside function body\nmake: *** [Makefile:4: build] Error 1\n", nil},
		{"tap is not go", "TAP version 13\nok 1 - adds\nnot ok 2 - subtracts\n1..2\n", nil},
		{"go no test files only", "?   \texample.com/x\t[no test files]\n", nil},
		{"go cached", "ok  \texample.com/x\t(cached)\nok  \texample.com/y\t0.120s\tcoverage: 81.2% of statements\n",
			&TestSummary{Framework: "go", Passed: 2, Packages: 2}},
		{"go timeout panic", "panic: test timed out after 10m0s\n\trunning tests:\n\t\tTestSlow (10m0s)\nFAIL\texample.com/x\t600.012s\nFAIL\n",
			&TestSummary{Framework: "go", Failed: 1, Packages: 1, Failures: []string{"example.com/x"}}},
		{"go parent fails alone", "--- FAIL: TestP (0.00s)\n    --- PASS: TestP/a (0.00s)\nFAIL\nFAIL\texample.com/x\t0.01s\n",
			&TestSummary{Framework: "go", Passed: 1, Failed: 1, Failures: []string{"TestP"}}},
		{"go output cut short", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n",
			&TestSummary{Framework: "go", Passed: 1}},
		{"go crlf", "--- PASS: TestA (0.00s)\r\nPASS\r\nok  \texample.com/x\t0.01s\r\n",
			&TestSummary{Framework: "go", Passed: 1}},
		{"pytest old seconds", "==== 1 failed, 3 passed in 0.50 seconds ====\n",
			&TestSummary{Framework: "pytest", Passed: 3, Failed: 1}},
		{"pytest long run", "===== 120 passed, 2 warnings in 61.23s (0:01:01) =====\n",
			&TestSummary{Framework: "pytest", Passed: 120}},
		{"pytest no tests", "============================ no tests ran in 0.01s =============================\n",
			&TestSummary{Framework: "pytest"}},
		{"jest all pass", "PASS src/a.test.ts\nTest Suites: 1 passed, 1 total\nTests:       4 passed, 4 total\nSnapshots:   0 total\n",
			&TestSummary{Framework: "jest", Passed: 4}},
		{"jest bullets without failures are not failures", "  ● Validation Warning:\nTests:       1 passed, 1 total\n",
			&TestSummary{Framework: "jest", Passed: 1}},
		{"vitest todo", "      Tests  3 passed | 1 todo (4)\n", &TestSummary{Framework: "vitest", Passed: 3, Skipped: 1}},
		{"mocha passing only", "\n  3 passing (20ms)\n\n", &TestSummary{Framework: "mocha", Passed: 3}},
		{"mocha spec list numbers are not failures", "    1) fails here\n  0 passing (1ms)\n", &TestSummary{Framework: "mocha"}},
		{"cargo ok", "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
			&TestSummary{Framework: "cargo", Passed: 3}},
		{"progress redraw", "Running...\r 50%\r100%\r  2 passing (4ms)\n", &TestSummary{Framework: "mocha", Passed: 2}},
		{"go then jest", "ok  \texample.com/x\t0.01s\n> web@1.0.0 test\n> jest\nTests:       1 failed, 1 passed, 2 total\n",
			&TestSummary{Framework: "go,jest", Passed: 2, Failed: 1, Packages: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseTestOutput(tc.out); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseTestOutput(%q)\n got %+v\nwant %+v", tc.out, got, tc.want)
			}
		})
	}
}

// TestParseTestOutputManyFailures: an output naming more than
// MaxFailureNames failed tests keeps the first MaxFailureNames names,
// says it was capped, and still counts every test. The regression: 1 MiB
// of "--- FAIL: TestN" lines on stdout and on stderr made an export take
// 30 s (both the name list and the subtest lookup were quadratic).
func TestParseTestOutputManyFailures(t *testing.T) {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
			b.WriteByte('\n')
		}
		return b.String()
	}
	var goOut strings.Builder
	nGo := 0
	for goOut.Len() < 1<<20 {
		fmt.Fprintf(&goOut, "--- FAIL: Test%d (0.00s)\n", nGo)
		nGo++
	}
	// A parent with many subtests, every other one failed: the parent
	// stands for them, so only they count.
	sub := lines(20000, func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("    --- FAIL: TestP/s%d (0.00s)", i)
		}
		return fmt.Sprintf("    --- PASS: TestP/s%d (0.00s)", i)
	}) + "--- FAIL: TestP (0.00s)\nFAIL\nFAIL\texample.com/x\t0.01s\n"
	n := 2 * MaxFailureNames
	for _, tc := range []struct {
		name  string
		out   string
		first string
		want  TestSummary // Failures: only its length and first name are checked
	}{
		// stdout and stderr: every name twice.
		{"go", goOut.String() + goOut.String(), "Test0", TestSummary{Framework: "go", Failed: nGo}},
		{"go subtests", sub, "TestP/s0", TestSummary{Framework: "go", Passed: 10000, Failed: 10000}},
		{"pytest", lines(n, func(i int) string { return fmt.Sprintf("FAILED tests/t.py::test_%d - assert 0", i) }) +
			fmt.Sprintf("==== %d failed in 1.00s ====\n", n), "tests/t.py::test_0", TestSummary{Framework: "pytest", Failed: n}},
		{"jest", lines(n, func(i int) string { return fmt.Sprintf("  ● Cart › case %d", i) }) +
			fmt.Sprintf("Tests:       %d failed, %d total\n", n, n), "Cart › case 0", TestSummary{Framework: "jest", Failed: n}},
		{"vitest", lines(n, func(i int) string { return fmt.Sprintf(" FAIL  a.test.js > Cart > case %d", i) }) +
			fmt.Sprintf("      Tests  %d failed (%d)\n", n, n), "a.test.js > Cart > case 0", TestSummary{Framework: "vitest", Failed: n}},
		{"mocha", fmt.Sprintf("  %d failing\n", n) + lines(n, func(i int) string { return fmt.Sprintf("  %d) Cart case %d:", i+1, i) }),
			"Cart case 0", TestSummary{Framework: "mocha", Failed: n}},
		{"cargo", lines(n, func(i int) string { return fmt.Sprintf("test t::case_%d ... FAILED", i) }) +
			fmt.Sprintf("test result: FAILED. 0 passed; %d failed; 0 ignored;\n", n), "t::case_0", TestSummary{Framework: "cargo", Failed: n}},
		// Two frameworks, each capped: their names together are capped too.
		{"go and cargo", goOut.String() + lines(n, func(i int) string { return fmt.Sprintf("test t::case_%d ... FAILED", i) }) +
			fmt.Sprintf("test result: FAILED. 0 passed; %d failed; 0 ignored;\n", n), "Test0", TestSummary{Framework: "go,cargo", Failed: nGo + n}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseTestOutput(tc.out)
			if got == nil {
				t.Fatal("not recognised")
			}
			if len(got.Failures) != MaxFailureNames || !got.FailuresCapped || got.Failures[0] != tc.first {
				t.Errorf("%d failure names (capped %v), the first %q; want %d, capped, the first %q",
					len(got.Failures), got.FailuresCapped, got.Failures[:min(1, len(got.Failures))], MaxFailureNames, tc.first)
			}
			counts := *got
			counts.Failures, counts.FailuresCapped = nil, false
			if !reflect.DeepEqual(counts, tc.want) {
				t.Errorf("counts %+v; want %+v", counts, tc.want)
			}
		})
	}
}

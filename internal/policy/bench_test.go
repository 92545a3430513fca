package policy

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/classify"
	"mvdan.cc/sh/v3/syntax"
)

// typical is a command line of the kind agents send most: a cd, an env
// prefix, a test run, a pipe into a filter.
const typical = `cd /workspace/web && CI=true npm test -- --watch=false 2>&1 | tail -n 50`

// BenchmarkClassify: parse, classify and decide one typical line. The
// median-us metric is the target (<= 50 us); parse-only-median-us is the
// peer in the same run: mvdan.cc/sh parsing the same line and nothing else.
func BenchmarkClassify(b *testing.B) {
	pol := Defaults()
	b.ReportAllocs()
	times := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		d := pol.Decide(classify.Analyze(typical, ""))
		times = append(times, time.Since(t0))
		if d.Action != Allow {
			b.Fatal(d.Reason)
		}
	}
	b.ReportMetric(median(times), "median-us")
	p := syntax.NewParser()
	times = times[:0]
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := p.Parse(strings.NewReader(typical), ""); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	b.ReportMetric(median(times), "parse-only-median-us")
}

// BenchmarkClassifyCorpus: every corpus line, one after another.
func BenchmarkClassifyCorpus(b *testing.B) {
	var lines []string
	for _, c := range readCorpus(b) {
		lines = append(lines, c.command)
	}
	pol := Defaults()
	times := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		pol.Decide(classify.Analyze(lines[i%len(lines)], ""))
		times = append(times, time.Since(t0))
	}
	b.ReportMetric(median(times), "median-us")
}

func median(ts []time.Duration) float64 {
	if len(ts) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Nanoseconds()) / 1000
}

// BenchmarkDeepGlobs: a 61 KB line of globs (it once took 3.3 s; globs
// are now judged by a bounded number of name matches).
func BenchmarkDeepGlobs(b *testing.B) {
	line := "cat"
	for len(line) < 61<<10 {
		line += " .q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*"
	}
	pol := Defaults()
	for i := 0; i < b.N; i++ {
		pol.Decide(classify.Analyze(line, ""))
	}
}

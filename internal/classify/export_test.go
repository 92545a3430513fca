package classify

import "testing"

// CorpusCommands returns the command lines of testdata/corpus.txt, for the
// external test package (the fuzz target's seeds).
func CorpusCommands(t testing.TB) []string {
	var out []string
	for _, c := range readCorpus(t) {
		out = append(out, c.command)
	}
	return out
}

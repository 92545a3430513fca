package runtime

import "strings"

// MergeEnv joins environment lists, a later "K=V" replacing an earlier
// one of the same K in place: a process gets each variable once. With
// duplicates the winner depends on the program (glibc's getenv takes the
// first, shells the last), so a template's or caller's PATH could be
// ignored by one program and used by another.
func MergeEnv(lists ...[]string) []string {
	var out []string
	at := map[string]int{}
	for _, l := range lists {
		for _, kv := range l {
			k, _, _ := strings.Cut(kv, "=")
			if i, ok := at[k]; ok {
				out[i] = kv
				continue
			}
			at[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

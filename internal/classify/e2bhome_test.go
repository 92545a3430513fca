package classify

import (
	"slices"
	"testing"
)

// Code written for E2B names E2B's home, /home/user, outright: wiping it
// is as catastrophic as wiping /home/sandbox, and a directory below it is
// not.
func TestE2BHomeIsCatastrophic(t *testing.T) {
	for line, want := range map[string]bool{
		`rm -rf /home/user`:         true,
		`rm -rf /home/user/`:        true,
		`rm -rf /home/user/*`:       true,
		`chmod -R 777 /home/user`:   true,
		`cd /home/user && rm -rf .`: true,
		`rm -rf /home/user/build`:   false,
		`rm -rf /home/user/src/tmp`: false,
		`rm -rf /home/username`:     false,
	} {
		var tags []string
		for _, c := range Analyze(line, "").Commands {
			tags = append(tags, c.Tags...)
		}
		if got := slices.Contains(tags, TagCatastrophic); got != want {
			t.Errorf("%s: tags %v, catastrophic %v, want %v", line, tags, got, want)
		}
	}
}

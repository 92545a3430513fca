package runtime

import (
	"slices"
	"testing"
)

func TestMergeEnvLastWinsOnce(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "HOME=/h", "EMPTY="}, nil, []string{"PATH=/usr/local/go/bin:/bin", "X=1=2"}, []string{"HOME=/other", "EMPTY"})
	want := []string{"PATH=/usr/local/go/bin:/bin", "HOME=/other", "EMPTY", "X=1=2"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

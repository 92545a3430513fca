package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/store"
)

// A stopped log is tried again at most once a second however often it
// is asked, and in the background until Stop; once space is back it
// runs again. Needs a tmpfs (root).
func TestRetry(t *testing.T) {
	dir, fill, free := fullDisk(t, 8<<20)
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	l, err := Open(ctx, Config{Store: st, Redactor: maskRedactor{}, ReserveFile: filepath.Join(dir, "audit.reserve"), ReserveBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	r := NewRetry(l, func(format string, args ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		mu.Unlock()
	})
	r.Try() // a running log: nothing to do
	fill()
	for i := 0; l.Err() == nil; i++ {
		if i == 200 {
			t.Fatal("the log never failed on a full disk")
		}
		_, _ = l.Record(ctx, Entry{Kind: "exec.end", Payload: map[string]any{"stdout": Blob(strings.Repeat(fmt.Sprint(i), 50000))}})
	}
	r.Try()
	r.Try() // within the second: not tried
	mu.Lock()
	if len(logs) != 1 || !strings.Contains(logs[0], "still stopped") {
		t.Errorf("logs %q, want one try", logs)
	}
	mu.Unlock()
	free()
	r.Start(10 * time.Millisecond)
	defer r.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for l.Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the background retry never recovered the log")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Stop()
	r.Stop() // a second Stop does nothing
}

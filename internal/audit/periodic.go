package audit

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/store"
)

// Bounds of the periodic checkpoint: a tail longer than this is never
// left unsigned (see StartCheckpoints).
const (
	MaxCheckpointEvents   = 100000
	MaxCheckpointInterval = time.Hour
)

// Default periodic checkpoint, as `airlock serve` uses it.
const (
	DefaultCheckpointEvents   = 1000
	DefaultCheckpointInterval = time.Minute
)

// periodic is the state StartCheckpoints shares with Record: Record
// kicks the checkpointer once `events` events have been written since the
// last signed head, without waiting for it (the group commit never signs
// or writes the file itself).
type periodic struct {
	events int64
	kick   chan struct{}
}

// StartCheckpoints signs a checkpoint to path (see Checkpoint) whenever
// events events have been written since the last one, or every interval
// when anything was written since, whichever comes first: a cut or a
// rewrite of the log then shows unless it touches only the last events
// (at most events of them, written within the last interval) before the
// latest checkpoint. Failures go to logf; they do not stop the log.
// events must be in 1..MaxCheckpointEvents and interval in
// (0, MaxCheckpointInterval]. stop ends it (it waits for a checkpoint
// under way); call it before the last Checkpoint of a daemon.
func (l *Log) StartCheckpoints(path string, events int, interval time.Duration, logf func(string, ...any)) (stop func(), err error) {
	if path == "" || events < 1 || events > MaxCheckpointEvents || interval <= 0 || interval > MaxCheckpointInterval {
		return nil, fmt.Errorf("audit: periodic checkpoint: a file, 1..%d events and an interval up to %s are required", MaxCheckpointEvents, MaxCheckpointInterval)
	}
	p := &periodic{events: int64(events), kick: make(chan struct{}, 1)}
	l.mu.Lock()
	if l.periodic != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("audit: periodic checkpoints already started")
	}
	l.periodic = p
	l.mu.Unlock()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			case <-p.kick:
			}
			if !l.unsigned() {
				continue
			}
			if _, err := l.Checkpoint(path); err != nil && logf != nil {
				logf("audit: periodic checkpoint: %v", err)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
			l.mu.Lock()
			l.periodic = nil
			l.mu.Unlock()
		})
	}, nil
}

// unsigned reports whether events were written after the last signed head.
func (l *Log) unsigned() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed == nil && l.cseq > l.signedSeq
}

// kickLocked (l.mu held) wakes the checkpointer when enough events are
// unsigned; it never blocks.
func (l *Log) kickLocked() {
	if p := l.periodic; p != nil && l.cseq-l.signedSeq >= p.events {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// rolledBack says what is wrong when the checkpoint file at path (read as
// a) is older than the log says it must be: the log records two or more
// checkpoints to that file after the event a names, yet each checkpoint's
// file is written before the next one's event is recorded (Checkpoint),
// so only the last can be newer than the file (a crash between its event
// and its file). The file is read again after the log, so a daemon moving
// it on meanwhile is not taken for a rollback. "" means it is not older.
func rolledBack(ctx context.Context, st *store.Store, path string, a *Anchor, pub ed25519.PublicKey) (string, error) {
	rows, err := st.AuditEvents(ctx, store.AuditFilter{Kind: CheckpointKind, AfterSeq: a.Seq, Limit: 1000})
	if err != nil {
		return "", err
	}
	var later []int64
	for _, r := range rows {
		var p struct {
			File string `json:"file"`
		}
		if r.Kind == CheckpointKind && json.Unmarshal([]byte(r.Payload), &p) == nil && p.File == filepath.Base(path) {
			later = append(later, r.Seq)
		}
	}
	if len(later) < 2 {
		return "", nil
	}
	if now, err := ReadAnchor(path, pub); err == nil && now.Seq >= later[len(later)-2] {
		return "", nil
	}
	return fmt.Sprintf("the signed checkpoint names event %d, but the log records checkpoints at events %d and %d after it: the checkpoint was replaced by an older one", a.Seq, later[0], later[1]), nil
}

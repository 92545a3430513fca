package audit

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/store"
)

// Verify recomputes the chain, against the signed checkpoint in
// Config.CheckpointFile (none: from the start), and checks that the log
// still holds the last event this Log wrote; when it all holds, it moves
// the checkpoint to the current head. Problems are in the report, not
// the error.
func (l *Log) Verify(ctx context.Context) (*Report, error) {
	// The daemon knows how far it wrote (taken before the scan: what is
	// written meanwhile is not the question): a log that lacks that event,
	// or holds another one there, was cut or rewritten under it.
	seq, hash := l.Head()
	var rep *Report
	var err error
	if l.checkpoint != "" {
		rep, err = VerifyCheckpointed(ctx, l.st, l.checkpoint, l.PublicKey())
	} else {
		rep, err = Verify(ctx, l.st, nil)
	}
	if err != nil {
		return nil, err
	}
	if seq > 0 {
		rows, err := l.st.AuditEvents(ctx, store.AuditFilter{AfterSeq: seq - 1, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 || rows[0].Seq != seq {
			rep.Problem = append(rep.Problem, Problem{Seq: seq, What: fmt.Sprintf("this daemon wrote up to event %d, but the log ends at event %d: it was cut", seq, rep.Head)})
		} else if rows[0].Hash != hash {
			rep.Problem = append(rep.Problem, Problem{Seq: seq, What: fmt.Sprintf("event %d is not the one this daemon wrote: the log was rewritten", seq)})
		}
	}
	if rep.OK() && l.checkpoint != "" {
		_, _ = l.Checkpoint(l.checkpoint)
	}
	return rep, nil
}

package quotas

import (
	"fmt"
	"strconv"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Error is a create or a command a project's quota refused: the API
// answers it 429 (quota_exceeded) with the quota's name and figures.
type Error struct {
	Project string
	Quota   string  // one of the Name* constants
	Limit   float64 // the quota in force
	Used    float64 // what the project holds (or started, in the last minute) now
	Asked   float64 // what the refused request would have added
}

func (e *Error) Error() string {
	what := "its live sandboxes hold"
	switch e.Quota {
	case NameExecsPerMinute:
		what = "it started in the last minute"
	case NameEgressPerDay:
		what = "its sandboxes' egress moved in the last 24 hours"
	case NameStoredOutput:
		what = "its commands' stored output holds (airlock purge removes old output)"
	}
	return fmt.Sprintf("project %s: quota %s: this asks %s more, %s %s of %s (airlock project usage %s; the operator raises it with airlock project quota)",
		e.Project, e.Quota, num(e.Asked), what, num(e.Used), num(e.Limit), e.Project)
}

// Unwrap makes it an ErrLimitExceeded for errors.Is.
func (e *Error) Unwrap() error { return errdefs.ErrLimitExceeded }

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

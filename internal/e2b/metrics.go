package e2b

import (
	"context"
	"errors"
	"fmt"
	"math"
	goruntime "runtime"
	"strconv"
	"time"

	"net/http"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/usage"
)

// Usage is what the door reads of a live sandbox's use (internal/usage).
type Usage interface {
	// Sample reads a running sandbox's counters now.
	Sample(ctx context.Context, id string) (usage.Sample, error)
	// Disk reads a running sandbox's disk use now; a backend without
	// the ability answers ErrUnsupported.
	Disk(ctx context.Context, id string) (runtime.DiskUsage, error)
	// Live says whether the sandbox is live: false once it is being
	// stopped, before its processes are killed.
	Live(id string) bool
}

// noUsage is the door without the usage module: no metrics, and every
// sandbox is taken to be live (a command's end is reported as it came).
type noUsage struct{}

func (noUsage) Sample(context.Context, string) (usage.Sample, error) {
	return usage.Sample{}, fmt.Errorf("sandbox metrics are not served by this daemon: %w", errdefs.ErrUnsupported)
}
func (noUsage) Disk(context.Context, string) (runtime.DiskUsage, error) {
	return runtime.DiskUsage{}, fmt.Errorf("sandbox metrics are not served by this daemon: %w", errdefs.ErrUnsupported)
}
func (noUsage) Live(string) bool { return true }

// cpuWindow is how long the door watches a sandbox's CPU time to tell
// how busy it is: airlock keeps no history of samples, so each answer
// is a fresh reading.
var cpuWindow = 200 * time.Millisecond

// metric is E2B's SandboxMetric. A figure the backend cannot read (the
// page cache on gVisor, the disk on a backend without a DiskMeter) is
// left out: an absent field, never a made-up 0.
type metric struct {
	Timestamp     string  `json:"timestamp"`
	TimestampUnix int64   `json:"timestampUnix"`
	CPUCount      int     `json:"cpuCount"`
	CPUUsedPct    float64 `json:"cpuUsedPct"`
	MemUsed       int64   `json:"memUsed"`
	MemTotal      int64   `json:"memTotal"`
	MemCache      *int64  `json:"memCache,omitempty"`
	DiskUsed      *int64  `json:"diskUsed,omitempty"`
	DiskTotal     *int64  `json:"diskTotal,omitempty"`
}

func (s *Server) metricsRoutes() {
	s.handle("GET /sandboxes/{id}/metrics", s.metrics)
	// (else the sandbox "metrics", not found: say what it is)
	s.handle("GET /sandboxes/metrics", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotImplemented, "unsupported by airlock: the metrics of many sandboxes at once (GET /sandboxes/metrics): ask each one's GET /sandboxes/{id}/metrics")
	})
}

// metrics is GET /sandboxes/{id}/metrics (the SDKs' getMetrics): one
// sample, now, from the sandbox's cgroup. E2B answers the samples it
// kept between start and end (Unix seconds); airlock keeps none, so a
// range that ends before now is refused rather than answered empty, and
// one that starts after now has no sample.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	sb, ok := s.live(w, r)
	if !ok {
		return
	}
	now := time.Now()
	start, end, err := metricsRange(r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	if end != nil && end.Before(now.Add(-time.Second)) {
		writeAPIError(w, http.StatusBadRequest, "unsupported by airlock: metrics before now (end is in the past): airlock keeps no history of a sandbox's metrics, each answer is one sample taken at the call")
		return
	}
	if start != nil && start.After(now) {
		writeJSON(w, http.StatusOK, []metric{})
		return
	}
	if sb.State == "paused" {
		writeAPIError(w, http.StatusConflict, "sandbox "+sb.ID+" is paused: a paused sandbox is not metered (connect resumes it)")
		return
	}
	m, err := s.sample(r.Context(), sb.ID)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, []metric{m})
}

// metricsRange is the call's start and end (nil: not given).
func metricsRange(r *http.Request) (start, end *time.Time, err error) {
	q := r.URL.Query()
	for k, v := range q {
		if k != "start" && k != "end" {
			return nil, nil, fmt.Errorf("unsupported by airlock: metrics parameter %q (start and end are taken)", k)
		}
		if len(v) != 1 {
			return nil, nil, fmt.Errorf("metrics parameter %q given %d times", k, len(v))
		}
		n, perr := strconv.ParseInt(v[0], 10, 64)
		if perr != nil || n < 0 || n > 1<<40 {
			return nil, nil, fmt.Errorf("metrics parameter %s %q: Unix seconds", k, v[0])
		}
		t := time.Unix(n, 0)
		if k == "start" {
			start = &t
		} else {
			end = &t
		}
	}
	if start != nil && end != nil && end.Before(*start) {
		return nil, nil, fmt.Errorf("metrics range: end %d is before start %d", end.Unix(), start.Unix())
	}
	return start, end, nil
}

// sample reads the sandbox's counters twice, cpuWindow apart: CPU use is
// the CPU time spent over that window as a share of the CPUs it may use
// (its limit, else the host's), as E2B's percentage over all cores. The
// disk is read in the window.
func (s *Server) sample(ctx context.Context, id string) (metric, error) {
	t := time.NewTimer(cpuWindow)
	a, err := s.usage.Sample(ctx, id)
	if err != nil {
		t.Stop()
		return metric{}, err
	}
	disk, err := s.usage.Disk(ctx, id)
	if err != nil && !errors.Is(err, errdefs.ErrUnsupported) {
		t.Stop()
		return metric{}, err
	}
	hasDisk := err == nil
	select {
	case <-ctx.Done():
		t.Stop()
		return metric{}, ctx.Err()
	case <-t.C:
	}
	b, err := s.usage.Sample(ctx, id)
	if err != nil {
		return metric{}, err
	}
	cpus := goruntime.NumCPU()
	if l := b.Limits.CPUs; l > 0 && int(math.Ceil(l)) < cpus {
		cpus = int(math.Ceil(l))
	}
	share := float64(cpus)
	if l := b.Limits.CPUs; l > 0 && l < share {
		share = l
	}
	pct := 0.0
	if wall := b.Time.Sub(a.Time); wall > 0 && b.CPUTime >= a.CPUTime {
		pct = math.Min(100, 100*float64(b.CPUTime-a.CPUTime)/(float64(wall)*share))
	}
	m := metric{
		Timestamp: b.Time.UTC().Format(time.RFC3339), TimestampUnix: b.Time.Unix(), CPUCount: cpus,
		CPUUsedPct: math.Round(pct*100) / 100, MemUsed: b.MemoryBytes, MemTotal: b.Limits.MemoryBytes,
	}
	if b.PageCacheBytes != runtime.UnknownBytes {
		m.MemCache = &b.PageCacheBytes
	}
	if hasDisk {
		m.DiskUsed, m.DiskTotal = &disk.UsedBytes, &disk.TotalBytes
	}
	return m, nil
}

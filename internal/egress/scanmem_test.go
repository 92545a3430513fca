package egress

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/egress/broker"
)

func gzipOf(b []byte) []byte {
	var out bytes.Buffer
	w, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// Review (rv-daemon): a response from a host with a brokered secret that
// is (or looks) gzip is read whole (8 MiB) and inflated whole, up to
// three layers of 32 MiB each, and every view of each layer is another
// copy (lower-cased, entity-, backslash- and percent-decoded, squeezed):
// hundreds of MiB of daemon memory for one request of a few KiB, with no
// bound on how many run at once. A sandbox with a brokered token for a
// host that serves files of its choosing (a repository's raw contents
// through an API host) can fetch a small nested gzip from 256 connections
// at once and exhaust the daemon's memory, outside every cgroup.
func TestBrokeredScanMemoryIsBounded(t *testing.T) {
	// The heap in use is measured: collect often, so that it tracks
	// what is live, not when the collector happened to run (under -race,
	// with other packages' tests alongside, the default pacing let it
	// reach 347 MiB of which most was garbage).
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	body := gzipOf(gzipOf(gzipOf(bytes.Repeat([]byte("a&\\%"), 30<<20/4))))
	t.Logf("body: %d bytes", len(body))
	b := newBrokerEnvWith(t, func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	url := "https://api.secret.example.test:" + itoa(b.up.port) + "/bomb"
	conc := broker.InflateSlots() + 2
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var peak uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
		}
	}()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+placeholder)
			c := b.client(b.sandboxCA)
			resp, err := c.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(stop)
	mu.Lock()
	grew := int64(peak) - int64(before.HeapInuse)
	mu.Unlock()
	t.Logf("%d concurrent requests of a %d-byte body: peak heap grew by %d MiB", conc, len(body), grew>>20)
	if grew > int64(broker.InflateSlots())*128<<20 {
		t.Errorf("%d requests of a %d-byte body took %d MiB of the daemon's heap at once", conc, len(body), grew>>20)
	}
}

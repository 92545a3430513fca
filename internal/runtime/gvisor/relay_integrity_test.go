package gvisor

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// bodyNet is a runtime.Network whose proxy answers GET /N with N
// pseudo-random bytes (the same N bytes every time) and POST with the
// sha256 of the body it read: what a sandbox's proxy connection carries
// must arrive intact in both directions, whatever its size.
type bodyNet struct{}

// body is the N bytes bodyNet serves for /N.
func body(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)})
	_, _ = r.Read(b)
	return b
}

func (bodyNet) ProxyConn(c net.Conn, pid int) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		var out []byte
		if req.Method == http.MethodPost {
			h := sha256.New()
			_, err = io.Copy(h, req.Body)
			out = []byte(hex.EncodeToString(h.Sum(nil)) + "\n")
		} else {
			var n int
			n, err = strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/"))
			out = body(n)
		}
		if err != nil {
			fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(out)); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (bodyNet) DNS(context.Context, []byte, int) ([]byte, error) {
	return nil, fmt.Errorf("no DNS here")
}

// relaySizes are the bodies of TestProxyBodiesIntact: 16 KiB always
// arrived; from about 256 KiB gVisor's came corrupted.
var relaySizes = []int{16 << 10, 64 << 10, 256 << 10, 1 << 20, 8 << 20}

// TestProxyBodiesIntact: bodies of 16 KiB to 8 MiB fetched through the
// sandbox's proxy, and the same sent up through it, have the host's
// sha256 inside the sandbox, on gVisor (its relayed connections) and on
// the native backend (the connection handed to the host), its peer.
func TestProxyBodiesIntact(t *testing.T) {
	g := newTestBackend(t)
	n, err := native.New(native.Config{StateDir: filepath.Join(testRoot, "native"), CgroupParent: cgroupParent + "-native"})
	if err != nil {
		t.Fatalf("native backend: %v", err)
	}
	for _, name := range []string{"gvisor", "native"} {
		be := map[string]runtime.Backend{"gvisor": g, "native": n}[name]
		t.Run(name, func(t *testing.T) {
			spec := hostSpec(t)
			spec.Network = bodyNet{}
			ctx := context.Background()
			sb, err := be.Create(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sb.Destroy(context.Background()) })
			curl := "curl -sS --fail --max-time 60 -x http://" + runtime.ProxyAddr
			var script strings.Builder
			for _, size := range relaySizes {
				// down: the body's sum; up: the sum the host computed of it
				fmt.Fprintf(&script, "%s http://up.example.test/%d -o /tmp/b || echo fail; sha256sum </tmp/b | cut -d' ' -f1; %s --data-binary @/tmp/b http://up.example.test/ || echo fail\n", curl, size, curl)
			}
			r := sh(t, sb, script.String())
			got := strings.Fields(r.Stdout)
			if len(got) != 2*len(relaySizes) {
				t.Fatalf("%d sums, want %d: %q %q", len(got), 2*len(relaySizes), r.Stdout, r.Stderr)
			}
			for i, size := range relaySizes {
				want := fmt.Sprintf("%x", sha256.Sum256(body(size)))
				if got[2*i] != want {
					t.Errorf("%d bytes down: sha256 %s inside, %s sent", size, got[2*i], want)
				}
				if got[2*i+1] != want {
					t.Errorf("%d bytes up: sha256 %s on the host, %s sent", size, got[2*i+1], want)
				}
			}
		})
	}
}

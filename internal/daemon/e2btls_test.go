package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad key pair stops the start, naming the flags, and opens nothing.
func TestE2BListenerRefusesABadKeyPair(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{cert, key}, {filepath.Join(dir, "missing.pem"), key}} {
		ln, err := e2bListener("127.0.0.1:0", c[0], c[1])
		if err == nil {
			ln.Close()
			t.Fatalf("%v: listened", c)
		}
		if !strings.Contains(err.Error(), "--e2b-tls-cert") {
			t.Errorf("%v: %v", c, err)
		}
	}
	ln, err := e2bListener("127.0.0.1:0", "", "")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

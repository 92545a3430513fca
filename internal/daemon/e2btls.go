package daemon

import (
	"crypto/tls"
	"fmt"
	"net"
)

// e2bListener opens the E2B door's listener on addr, TLS when cert and
// key are given: the key pair is loaded here, so that a bad one stops
// the start rather than every handshake. HTTP/1.1 only: the door's
// streams are the SDKs' Connect over HTTP/1.1, as on plain TCP.
func e2bListener(addr, cert, key string) (net.Listener, error) {
	var cfg *tls.Config
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--e2b-tls-cert %s, --e2b-tls-key %s: %w", cert, key, err)
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--e2b-listen %s: %w", addr, err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	return ln, nil
}

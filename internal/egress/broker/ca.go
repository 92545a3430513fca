package broker

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// CA is one sandbox's certificate authority, made on first use (the
// zero value has none yet) and again once it expires, and the leaf
// certificates it signed. Its key never leaves the host. Safe for
// concurrent use.
type CA struct {
	mu     sync.Mutex
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	pem    []byte
	leaves map[string]*tls.Certificate
}

// Made reports whether the CA was ever made.
func (h *CA) Made() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cert != nil
}

// PEM returns the CA's certificate, making (or renewing) the CA first if
// it has none valid at now; life is how long a new one is valid.
func (h *CA) PEM(sandboxID string, now time.Time, life time.Duration) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.ensureLocked(sandboxID, now, life); err != nil {
		return nil, err
	}
	return bytes.Clone(h.pem), nil
}

func (h *CA) ensureLocked(sandboxID string, now time.Time, life time.Duration) error {
	if h.cert != nil && now.Before(h.cert.NotAfter) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("egress CA for %s: %w", sandboxID, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "airlock egress CA for sandbox " + sandboxID, Organization: []string{"airlock"}},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("egress CA for %s: %w", sandboxID, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("egress CA for %s: %w", sandboxID, err)
	}
	h.cert, h.key, h.leaves = cert, key, map[string]*tls.Certificate{}
	h.pem = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// Leaf returns a certificate for host signed by the CA (made first if
// need be), valid a day at most and never past the CA; one is kept per
// host and reused while it has an hour left.
func (h *CA) Leaf(sandboxID, host string, now time.Time, life time.Duration) (*tls.Certificate, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.ensureLocked(sandboxID, now, life); err != nil {
		return nil, err
	}
	if c := h.leaves[host]; c != nil && now.Add(time.Hour).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(24 * time.Hour)
	if notAfter.After(h.cert.NotAfter) {
		notAfter = h.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, h.cert, &key.PublicKey, h.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	if len(h.leaves) > 1000 {
		clear(h.leaves)
	}
	h.leaves[host] = c
	return c, nil
}

package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2BSignedURLsWithTheRealSDK fetches the published SDK's signed
// file URLs (files.downloadUrl, uploadUrl) with plain requests, as a
// browser or curl would (test/node/e2b_urls.mjs), per SDK version pinned
// in test/node: on the shared E2B_SANDBOX_URL (the 2.x SDKs; the
// signature names the sandbox), and on the sandbox's own host
// https://49983-ID.DOMAIN with 'serve --e2b-domain' and a loopback
// certificate this test makes (every SDK: the 1.x line knows no other
// way to reach a sandbox).
func TestE2BSignedURLsWithTheRealSDK(t *testing.T) {
	for _, sdk := range e2bSDKs {
		t.Run(sdk+"/shared-url", func(t *testing.T) { testSignedURLs(t, sdk, false) })
		t.Run(sdk+"/host-tls", func(t *testing.T) { testSignedURLs(t, sdk, true) })
	}
}

// e2bTestDomain is the E2B domain of the host-routed runs: its names are
// sent to the loopback listener by test/node/e2b_hosts.mjs, never to DNS.
const e2bTestDomain = "e2b.test"

func testSignedURLs(t *testing.T, sdk string, byHost bool) {
	node, dir := nodeClient(t, sdk)
	dist, err := os.ReadFile(filepath.Join(dir, "node_modules", sdk, "dist", "index.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if !byHost && !bytes.Contains(dist, []byte("E2B_SANDBOX_URL")) {
		t.Skipf("%s has no E2B_SANDBOX_URL: it reaches sandboxes only by host (the host-tls run)", sdk)
	}
	e := newEnv(t)
	addr := freeAddr(t)
	args := []string{"--e2b-listen", addr}
	env := []string{"E2B_SDK=" + sdk, "E2B_DEBUG="}
	nodeArgs := []string{filepath.Join(dir, "e2b_urls.mjs")}
	if byHost {
		cert, key := loopbackCert(t, e2bTestDomain)
		args = append(args, "--e2b-domain", e2bTestDomain, "--e2b-tls-cert", cert, "--e2b-tls-key", key)
		// No E2B_API_URL or E2B_SANDBOX_URL: the SDK goes where E2B_DOMAIN
		// says, https://api.DOMAIN and https://49983-ID.DOMAIN.
		env = append(env, "E2B_DOMAIN="+e2bTestDomain, "NODE_EXTRA_CA_CERTS="+cert,
			"E2B_HOSTS_DOMAIN="+e2bTestDomain, "E2B_HOSTS_ADDR="+addr, "E2B_API_URL=", "E2B_SANDBOX_URL=")
		nodeArgs = append([]string{"--import", filepath.Join(dir, "e2b_hosts.mjs")}, nodeArgs...)
	} else {
		env = append(env, "E2B_API_URL=http://"+addr, "E2B_SANDBOX_URL=http://"+addr)
	}
	d := e.startDaemon(t, args...)
	key, _, code := e.run("", "apikey", "create", "--socket", d.sock, "--e2b", "--name", "e2b-urls")
	if key = strings.TrimSpace(key); code != 0 {
		t.Fatalf("apikey create --e2b: %d %q", code, key)
	}
	cmd := exec.Command(node, nodeArgs...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "E2B_API_KEY="+key), env...)
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	if err := cmd.Run(); err != nil || !strings.Contains(o.String(), `{"ok":true}`) {
		t.Fatalf("e2b_urls.mjs: %v\nstdout: %s\nstderr: %s\ndaemon: %s", err, o.String(), er.String(), d.log)
	}
	t.Logf("e2b_urls.mjs:\n%s", o.String())
	if byHost && !strings.Contains(o.String(), "https://49983-") {
		t.Errorf("the download URL is not the sandbox's host:\n%s", o.String())
	}
}

// loopbackCert writes a self-signed certificate and key for *.domain
// and domain, valid for an hour, and returns their files.
func loopbackCert(t *testing.T, domain string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "*." + domain},
		DNSNames: []string{"*." + domain, domain}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

package api

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/wire"
)

// abortUpload sends half of a PUT .../files body for p over the socket
// and hangs up.
func (d *daemon) abortUpload(id, p string) {
	d.t.Helper()
	c, err := net.Dial("unix", d.sock)
	if err != nil {
		d.t.Fatal(err)
	}
	half := strings.Repeat("X", 64<<10)
	fmt.Fprintf(c, "PUT /v1/sandboxes/%s/files?path=%s HTTP/1.1\r\nHost: airlock\r\nContent-Length: %d\r\n\r\n%s", id, p, 2*len(half), half)
	time.Sleep(200 * time.Millisecond) // the half is in the sandbox's pipe
	c.Close()
}

// writeStates waits for p's file.write events to end and returns their
// states in order.
func (d *daemon) writeStates(id, p string) []string {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var states []string
		for _, ev := range d.events("sandbox=" + id + "&kind=file.write") {
			var pl struct{ Path, State string }
			_ = json.Unmarshal(ev.Payload, &pl)
			if pl.Path == p {
				states = append(states, pl.State)
			}
		}
		if len(states) > 0 && states[len(states)-1] != "started" || time.Now().After(deadline) {
			return states
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A client that sends half an upload and goes away left a truncated file
// at the path, recorded as a normal write. The file must be as it was
// (or absent), and the record must say the upload was aborted.
func TestAbortedUploadLeavesTheFileAsItWas(t *testing.T) {
	d, _ := auditDaemon(t)
	var sb sandbox.Sandbox
	if code := d.do("POST", "/v1/sandboxes", "", &sb); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := d.do("PUT", "/v1/sandboxes/"+sb.ID+"/files?path=/workspace/kept", "original\n", nil); code != 200 {
		t.Fatalf("write: %d", code)
	}
	d.abortUpload(sb.ID, "/workspace/kept")
	d.abortUpload(sb.ID, "/workspace/absent")
	if got := d.writeStates(sb.ID, "/workspace/kept"); strings.Join(got, ",") != "started,done,started,aborted" {
		t.Errorf("records of /workspace/kept: %v, want started,done,started,aborted", got)
	}
	if got := d.writeStates(sb.ID, "/workspace/absent"); strings.Join(got, ",") != "started,aborted" {
		t.Errorf("records of /workspace/absent: %v, want started,aborted", got)
	}
	_, events, _ := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat /workspace/kept; ls -A /workspace"}})
	out, _, _ := collect(events)
	if out != "original\nkept\n" {
		if len(out) > 200 {
			out = out[:200] + "..."
		}
		t.Errorf("after the aborted uploads the workspace holds %q, want the original file alone", out)
	}
	resp, err := d.client.Get("http://airlock/v1/sandboxes/" + sb.ID + "/files?path=/workspace/kept")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "original\n" {
		t.Errorf("read back %q", b)
	}
}

// A tar upload cut in the middle of an entry: the entries before it are
// written, the cut one leaves its file as it was, no temporary file is
// left, and the record says the upload was aborted.
func TestAbortedTarUploadLeavesTheCutEntryAsItWas(t *testing.T) {
	d, _ := auditDaemon(t)
	var sb sandbox.Sandbox
	if code := d.do("POST", "/v1/sandboxes", "", &sb); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := d.do("PUT", "/v1/sandboxes/"+sb.ID+"/files?path=/workspace/kept", "original\n", nil); code != 200 {
		t.Fatalf("write: %d", code)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "first", Mode: 0o644, Size: 6, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("first\n"))
	_ = tw.WriteHeader(&tar.Header{Name: "kept", Mode: 0o644, Size: 256 << 10, Typeflag: tar.TypeReg})
	cut := buf.Len() + 64<<10 // the second entry's header and a quarter of it
	_, _ = tw.Write(bytes.Repeat([]byte("X"), 256<<10))
	_ = tw.Close()
	c, err := net.Dial("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "PUT /v1/sandboxes/%s/files/tar?path=/workspace HTTP/1.1\r\nHost: airlock\r\nContent-Length: %d\r\n\r\n", sb.ID, buf.Len())
	_, _ = c.Write(buf.Bytes()[:cut])
	time.Sleep(200 * time.Millisecond)
	c.Close()
	var state string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		state = ""
		for _, ev := range d.events("sandbox=" + sb.ID + "&kind=file.upload") {
			var pl struct {
				State string
				Paths []string
			}
			_ = json.Unmarshal(ev.Payload, &pl)
			state = pl.State
			if state == "aborted" && strings.Join(pl.Paths, ",") != "/workspace/first" {
				t.Errorf("the aborted upload records the paths %v, want only the entry written", pl.Paths)
			}
		}
		if state != "" && state != "started" {
			break
		}
	}
	if state != "aborted" {
		t.Errorf("the upload's record ends with state %q, want aborted", state)
	}
	_, events, _ := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat /workspace/first /workspace/kept; ls -A /workspace"}})
	out, _, _ := collect(events)
	if out != "first\noriginal\nfirst\nkept\n" {
		if len(out) > 200 {
			out = out[:200] + "..."
		}
		t.Errorf("after the cut tar upload the workspace holds %q, want first whole and kept as it was", out)
	}
}

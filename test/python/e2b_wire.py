"""A client of airlock's E2B door written against the wire shapes of E2B's
Python SDK (the e2b package on PyPI, whose published source this follows;
the package itself cannot be installed on the test machine, which reaches
no package index). Only the standard library: it sends what the SDK sends
and reads the answers as the SDK reads them.

What it follows of the SDK (packages/python-sdk in e2b-dev/E2B):
- the control plane: POST /sandboxes with NewSandbox.to_dict() for the
  defaults of Sandbox.create() (templateID "base", timeout 300, autoPause
  false, secure true, allow_internet_access true, empty metadata and
  envVars), X-API-KEY; DELETE /sandboxes/{id}; GET /sandboxes/{id}.
- envd: the Connect protocol with the JSON codec (Commands, Filesystem
  clients are made with json=True), protobuf's JSON mapping (camelCase
  names, enums by name, bytes as base64, fields at their default left
  out), Connect-Protocol-Version 1, connect-timeout-ms in whole
  milliseconds, the E2B-Keepalive-Ping header, no Authorization header
  (envd 0.4.0 and later: the default user), the sandbox headers
  E2b-Sandbox-Id, E2b-Sandbox-Port and X-Access-Token.
- files: GET /files?path=, POST /files?path= as multipart "file" parts.
- snapshots: POST /sandboxes/{id}/snapshots {name}, GET /snapshots,
  POST /sandboxes/{id}/fork {timeout, count} (201 for both posts).

env: E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL. Prints one JSON line per
step and {"ok": true} at the end; exits non-zero on the first failure.
"""

import base64
import json
import os
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid

API = os.environ["E2B_API_URL"].rstrip("/")
ENVD = os.environ["E2B_SANDBOX_URL"].rstrip("/")
KEY = os.environ["E2B_API_KEY"]
UA = "e2b-python-sdk/wire-test"


def log(step, **kw):
    print(json.dumps({"step": step, **kw}), flush=True)


def http(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def api(method, path, obj=None):
    body = None if obj is None else json.dumps(obj).encode()
    h = {"X-API-KEY": KEY, "User-Agent": UA, "Content-Type": "application/json"}
    return http(method, API + path, body, h)


class Sandbox:
    def __init__(self, created):
        self.id = created["sandboxID"]
        self.headers = {
            "E2b-Sandbox-Id": self.id,
            "E2b-Sandbox-Port": "49983",
            "X-Access-Token": created["envdAccessToken"],
            "User-Agent": "connect-python",
        }

    def unary(self, proc, msg):
        h = dict(self.headers)
        h.update({"Connect-Protocol-Version": "1", "Content-Encoding": "identity", "Content-Type": "application/json"})
        status, _, body = http("POST", ENVD + "/" + proc, json.dumps(msg).encode(), h)
        out = json.loads(body or b"{}")
        if status != 200:
            raise ConnectError(out.get("code", "unknown"), out.get("message", ""))
        return out

    def stream(self, proc, msg, timeout_s=60):
        """A server stream: the request in one envelope, then every
        message until the end-of-stream envelope (its error raised)."""
        data = json.dumps(msg).encode()
        h = dict(self.headers)
        h.update({
            "Connect-Protocol-Version": "1",
            "Connect-Content-Encoding": "identity",
            "Content-Type": "application/connect+json",
            "connect-timeout-ms": str(int(timeout_s * 1000)),
            "E2B-Keepalive-Ping": "50",
        })
        status, _, body = http("POST", ENVD + "/" + proc, struct.pack(">BI", 0, len(data)) + data, h)
        if status != 200:
            out = json.loads(body or b"{}")
            raise ConnectError(out.get("code", "unknown"), out.get("message", ""))
        msgs = []
        while body:
            flags, n = struct.unpack(">BI", body[:5])
            payload, body = body[5:5 + n], body[5 + n:]
            if flags & 2:
                end = json.loads(payload)
                if "error" in end:
                    raise ConnectError(end["error"].get("code", "unknown"), end["error"].get("message", ""))
                return msgs
            msgs.append(json.loads(payload))
        raise ConnectError("unknown", "stream without an end")

    def run(self, cmd, cwd=None, envs=None, timeout_s=60):
        """commands.run: bash -l -c, stdin false; returns (stdout, stderr,
        exit code) as the SDK's CommandResult has them."""
        process = {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}
        if cwd:
            process["cwd"] = cwd
        if envs:
            process["envs"] = envs
        out, err, code = b"", b"", None
        for m in self.stream("process.Process/Start", {"process": process, "stdin": False}, timeout_s):
            ev = m.get("event", {})
            if "data" in ev:
                out += base64.b64decode(ev["data"].get("stdout", ""))
                err += base64.b64decode(ev["data"].get("stderr", ""))
            if "end" in ev:
                code = ev["end"].get("exitCode", 0)
        return out.decode(), err.decode(), code

    def write(self, path, data):
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        h = dict(self.headers)
        h["Content-Type"] = "multipart/form-data; boundary=" + boundary
        status, _, b = http("POST", ENVD + "/files?" + urllib.parse.urlencode({"path": path}), body, h)
        return status, json.loads(b or b"null")

    def read(self, path):
        status, _, b = http("GET", ENVD + "/files?" + urllib.parse.urlencode({"path": path}), None, self.headers)
        return status, b


class ConnectError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    # Sandbox.create() with the SDK's defaults.
    body = {"templateID": "base", "autoPause": False, "metadata": {}, "timeout": 300,
            "envVars": {}, "secure": True, "allow_internet_access": True}
    status, _, b = api("POST", "/sandboxes", body)
    check(status == 201, f"create: {status} {b!r}")
    created = json.loads(b)
    check(created["envdVersion"] == "0.6.3" and created["envdAccessToken"], f"create answer: {created}")
    sbx = Sandbox(created)
    log("create", id=sbx.id)

    # A bad key: the SDK's AuthenticationException (401).
    status, _, _ = http("GET", API + "/sandboxes/" + sbx.id, None, {"X-API-KEY": "e2b_" + "0" * 40})
    check(status == 401, f"bad key: {status}")

    # commands.run: output, the user and home, the environment, the exit.
    out, err, code = sbx.run('echo "$GREETING from $(pwd) as $(whoami)"; echo oops >&2', envs={"GREETING": "hi"})
    check((out, err, code) == ("hi from /home/user as user\n", "oops\n", 0), f"run: {out!r} {err!r} {code}")
    out, _, code = sbx.run("exit 3")
    check(code == 3, f"exit 3: {code}")
    out, _, _ = sbx.run("pwd", cwd="/workspace")
    check(out == "/workspace\n", f"cwd: {out!r}")
    # A timeout the command outlives is deadline_exceeded (the SDK's
    # TimeoutException).
    try:
        sbx.run("sleep 20", timeout_s=0.7)
        check(False, "sleep past its timeout ran on")
    except ConnectError as e:
        check(e.code == "deadline_exceeded", f"timeout: {e}")
    log("commands")

    # commands.list and commands.kill (SendSignal, the enum by name): no
    # command is left running; an unknown pid is not_found (the SDK's
    # False).
    procs = sbx.unary("process.Process/List", {})
    check(procs.get("processes", []) == [], f"list: {procs}")
    try:
        sbx.unary("process.Process/SendSignal", {"process": {"pid": 999999}, "signal": "SIGNAL_SIGKILL"})
        check(False, "kill of an unknown pid")
    except ConnectError as e:
        check(e.code == "not_found", f"kill unknown pid: {e}")

    # files: write (multipart), read, stat, list, mkdir, remove.
    status, written = sbx.write("notes/a.txt", b"one\ntwo\n")
    check(status == 200 and written[0]["path"] == "/home/user/notes/a.txt", f"write: {status} {written}")
    status, data = sbx.read("/home/user/notes/a.txt")
    check(status == 200 and data == b"one\ntwo\n", f"read: {status} {data!r}")
    st = sbx.unary("filesystem.Filesystem/Stat", {"path": "/home/user/notes/a.txt"})
    check(st["entry"]["type"] == "FILE_TYPE_FILE" and int(st["entry"]["size"]) == 8, f"stat: {st}")
    ls = sbx.unary("filesystem.Filesystem/ListDir", {"path": "/home/user/notes", "depth": 1})
    check([e["name"] for e in ls["entries"]] == ["a.txt"], f"list: {ls}")
    sbx.unary("filesystem.Filesystem/MakeDir", {"path": "/workspace/d"})
    try:
        sbx.unary("filesystem.Filesystem/MakeDir", {"path": "/workspace/d"})
        check(False, "mkdir twice")
    except ConnectError as e:
        check(e.code == "already_exists", f"mkdir twice: {e}")
    sbx.unary("filesystem.Filesystem/Remove", {"path": "/workspace/d"})
    status, _ = sbx.read("/workspace/nope")
    check(status == 404, f"read a missing file: {status}")
    try:
        sbx.unary("filesystem.Filesystem/Stat", {"path": "/workspace/nope"})
        check(False, "stat of a missing file")
    except ConnectError as e:
        check(e.code == "not_found", f"stat missing: {e}")
    log("files")

    # create_snapshot (SandboxSnapshotRequest {name}, 201 SnapshotInfo),
    # a sandbox from it, list_snapshots, fork (SandboxForkRequest with the
    # SDK's default timeout and count, 201 one result per fork).
    status, _, b = api("POST", "/sandboxes/" + sbx.id + "/snapshots", {"name": "py-snap"})
    check(status == 201 and json.loads(b) == {"snapshotID": "py-snap", "names": ["py-snap"]}, f"snapshot: {status} {b!r}")
    status, _, b = api("POST", "/sandboxes", dict(body, templateID="py-snap"))
    check(status == 201, f"create from the snapshot: {status} {b!r}")
    copy = Sandbox(json.loads(b))
    out, _, _ = copy.run("cat notes/a.txt")
    check(out == "one\ntwo\n", f"the snapshot's files: {out!r}")
    status, _, b = api("GET", "/snapshots?" + urllib.parse.urlencode({"sandboxID": sbx.id}))
    check(status == 200 and [x["snapshotID"] for x in json.loads(b)] == ["py-snap"], f"list snapshots: {status} {b!r}")
    status, _, b = api("POST", "/sandboxes/" + sbx.id + "/fork", {"timeout": 300, "count": 1})
    forks = json.loads(b)
    check(status == 201 and len(forks) == 1 and "sandbox" in forks[0], f"fork: {status} {b!r}")
    out, _, _ = Sandbox(forks[0]["sandbox"]).run("cat /home/user/notes/a.txt")
    check(out == "one\ntwo\n", f"the fork's files: {out!r}")
    for other in (copy.id, forks[0]["sandbox"]["sandboxID"]):
        status, _, _ = api("DELETE", "/sandboxes/" + other)
        check(status == 204, f"kill {other}: {status}")
    log("snapshots")

    # kill: 204, then 404 (the SDK's False), and the sandbox is gone.
    status, _, _ = api("DELETE", "/sandboxes/" + sbx.id)
    check(status == 204, f"kill: {status}")
    status, _, _ = api("DELETE", "/sandboxes/" + sbx.id)
    check(status == 404, f"kill again: {status}")
    status, _, _ = api("GET", "/sandboxes/" + sbx.id)
    check(status == 404, f"get after kill: {status}")
    log("kill", id=sbx.id)
    print(json.dumps({"ok": True}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except (AssertionError, ConnectError) as e:
        print(json.dumps({"ok": False, "error": str(e)}), flush=True)
        sys.exit(1)

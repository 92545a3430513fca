// Drives airlock's E2B-compatible API with the published E2B SDK, as an
// agent written for E2B would, unmodified: only E2B_API_KEY, E2B_API_URL
// and E2B_SANDBOX_URL point at airlock. Prints one JSON line per step and
// {"ok":true} at the end; the Go test (cmd/airlock) checks the daemon's
// side: approvals, exec records, audit.
// env: E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL (the 1.x line: E2B_DOMAIN,
// the sandbox hosts); E2B_SDK names the package (an npm alias of
// package.json: e2b, e2b-2-45, e2b-1-13).
//
// What the 1.x line has not, it cannot send, so those steps are 2.x only
// (v2 below): network, lifecycle and updateNetwork, the list's order,
// template and startedAfter filters (and its paginator), getInfo's state,
// stdin: true and closeStdin, pause, snapshots and fork. Its errors
// differ: a bad key is a SandboxError "401: ..." (2.x:
// AuthenticationError), a control-plane 404 a SandboxError "404: ..."
// (2.x: NotFoundError); an instance's kill answers nothing.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const sdk = process.env.E2B_SDK || "e2b";
const { Sandbox, CommandExitError, NotFoundError, TimeoutError, AuthenticationError, SandboxError } = await import(sdk);
const version = JSON.parse(readFileSync(new URL(`./node_modules/${sdk}/package.json`, import.meta.url))).version;
const v2 = Number(version.split(".")[0]) >= 2;

const log = (step, v) => console.log(JSON.stringify({ step, ...v }));
const rejects = async (p) => {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected an error");
};
// 2.x: a paginator; 1.x: a promise of the list.
const list = (opts) => {
  const l = Sandbox.list(opts);
  return typeof l.nextItems === "function" ? l.nextItems() : l;
};
log("sdk", { sdk, version });

// A bad key is refused.
let e = await rejects(Sandbox.create({ apiKey: "e2b_" + "0".repeat(40) }));
if (v2) {
  assert.ok(e instanceof AuthenticationError, String(e));
} else {
  assert.ok(e instanceof SandboxError && !(e instanceof AuthenticationError), String(e));
  assert.match(e.message, /^401: a valid API key is required/);
}

// Options airlock does not have are refused, not ignored.
if (v2) {
  e = await rejects(Sandbox.create({ metadata: { suite: "refused" }, lifecycle: { onTimeout: { action: "pause", keepMemory: false } } }));
  assert.match(e.message, /unsupported by airlock: lifecycle onTimeout keepMemory false/);
}

// allowInternetAccess (every SDK's default is true) is airlock's policy;
// false is no egress at all (the Go test checks the sandbox's policy).
const closed = await Sandbox.create({ metadata: { suite: "closed" }, allowInternetAccess: false, timeoutMs: 300_000 });
log("closed", { id: closed.sandboxId });
const open = await Sandbox.create({ metadata: { suite: "open" }, timeoutMs: 300_000 });
log("open", { id: open.sandboxId });
// network: denyOut ALL_TRAFFIC with an allowOut exception narrows the
// daemon's policy (the Go test asks the sandbox's proxy); what airlock
// cannot honour is refused.
if (v2) {
  const fenced = await Sandbox.create({ metadata: { suite: "fenced" }, network: { denyOut: ["0.0.0.0/0"], allowOut: ["1.2.3.4"] }, timeoutMs: 60_000 });
  log("fenced", { id: fenced.sandboxId });
  e = await rejects(Sandbox.create({ metadata: { suite: "refused" }, network: { denyOut: ["0.0.0.0/0"], allowOut: ["1.2.3.4:443"] } }));
  assert.match(e.message, /unsupported by airlock: network\.allowOut\[0\]/);
  e = await rejects(Sandbox.create({ metadata: { suite: "refused" }, network: { egressProxy: { address: "proxy.example.test:1080" } } }));
  assert.match(e.message, /unsupported by airlock: network\.egressProxy/);
  // updateNetwork replaces the rules at once (the Go test asks the proxy);
  // getInfo shows them, as E2B's does.
  const rewired = await Sandbox.create({ metadata: { suite: "rewired" }, network: { denyOut: ["0.0.0.0/0"], allowOut: ["1.2.3.4"] }, timeoutMs: 60_000 });
  let netInfo = await rewired.getInfo();
  assert.deepEqual(netInfo.network?.allowOut, ["1.2.3.4"]);
  await rewired.updateNetwork({ denyOut: ["1.2.3.5"] });
  netInfo = await rewired.getInfo();
  assert.deepEqual(netInfo.network?.denyOut, ["1.2.3.5"]);
  assert.equal(netInfo.network?.allowOut, undefined);
  e = await rejects(rewired.updateNetwork({ egressProxy: { address: "proxy.example.test:1080" } }));
  assert.match(e.message, /unsupported by airlock: network\.egressProxy/);
  log("rewired", { id: rewired.sandboxId });
}

// Create, with metadata and environment.
const sbx = await Sandbox.create({ metadata: { suite: "e2b", run: "1" }, envs: { GREETING: "hi" }, timeoutMs: 300_000, allowInternetAccess: true });
log("create", { id: sbx.sandboxId });
let info = await sbx.getInfo();
assert.equal(info.state, v2 ? "running" : undefined);
assert.equal(info.metadata.suite, "e2b");
assert.equal(info.templateId, "host");
assert.equal(info.envdVersion, "0.6.3");
assert.ok(info.endAt.getTime() > Date.now() + 200_000);
const listed = await list({ query: { metadata: { suite: "e2b" } } });
assert.deepEqual(listed.map((s) => s.sandboxId), [sbx.sandboxId]);
assert.equal((await list({ query: { metadata: { suite: "other" } } })).length, 0);
// Newest first by default, and the filters E2B's list takes.
const both = [sbx.sandboxId, closed.sandboxId];
const ours = (l) => l.map((s) => s.sandboxId).filter((id) => both.includes(id));
assert.deepEqual(ours(await list()), both);
if (v2) {
  assert.deepEqual(ours(await list({ order: "asc" })), [closed.sandboxId, sbx.sandboxId]);
  assert.deepEqual(ours(await list({ query: { template: "base" } })), both);
  assert.deepEqual(ours(await list({ query: { template: "other" } })), []);
  const sbxStart = (await Sandbox.getInfo(sbx.sandboxId)).startedAt;
  assert.deepEqual(ours(await list({ query: { startedAfter: sbxStart } })), [sbx.sandboxId]);
}

// Older SDKs send timeout 300 on every connect: it never shortens.
await sbx.setTimeout(1_200_000);
const end = (await sbx.getInfo()).endAt.getTime();
await Sandbox.connect(sbx.sandboxId, { timeoutMs: 300_000 });
assert.ok((await sbx.getInfo()).endAt.getTime() >= end, "connect shortened the sandbox's life");
await sbx.setTimeout(300_000);

// commands.run: output, environment, working directory.
let r = await sbx.commands.run('echo "$GREETING $WHO from $(pwd)"; echo oops >&2', { envs: { WHO: "e2b" } });
assert.equal(r.exitCode, 0);
assert.equal(r.stdout, "hi e2b from /home/user\n");
assert.equal(r.stderr, "oops\n");
// E2B's user and home: "user", /home/user; not root underneath.
r = await sbx.commands.run('whoami; echo "$HOME"; id -u');
assert.equal(r.stdout, "user\n/home/user\n1000\n");
r = await sbx.commands.run("pwd", { cwd: "/workspace" });
assert.equal(r.stdout, "/workspace\n");
// E2B's base has python as well as python3 (where the host has python3).
r = await sbx.commands.run("if command -v python3 >/dev/null; then python -c 'print(6*7)'; else echo 42; fi");
assert.equal(r.stdout, "42\n");

// Output is streamed as it comes, not at the end.
const seen = [];
const t0 = Date.now();
r = await sbx.commands.run("for i in 1 2 3; do echo line$i; sleep 0.3; done", { onStdout: (d) => seen.push([d, Date.now() - t0]) });
assert.equal(r.stdout, "line1\nline2\nline3\n");
assert.equal(seen.length, 3, JSON.stringify(seen));
assert.ok(seen[2][1] - seen[0][1] >= 400, "chunks arrived together: " + JSON.stringify(seen));
log("stream", { seen });

// A non-zero exit raises the SDK's error.
e = await rejects(sbx.commands.run("echo partial; echo bad >&2; exit 3"));
assert.ok(e instanceof CommandExitError, String(e));
assert.equal(e.exitCode, 3);
assert.equal(e.stdout, "partial\n");
assert.equal(e.stderr, "bad\n");

// Background commands: listed, fed stdin, connected to, killed.
const sleeper = await sbx.commands.run("sleep 60", { background: true });
if (v2) {
  const bg = await sbx.commands.run("cat; echo done-cat", { background: true, stdin: true });
  let procs = await sbx.commands.list();
  assert.deepEqual(procs.map((p) => p.pid).sort(), [bg.pid, sleeper.pid].sort());
  await sbx.commands.sendStdin(bg.pid, "typed\n");
  await sbx.commands.closeStdin(bg.pid);
  r = await bg.wait();
  assert.equal(r.stdout, "typed\ndone-cat\n");
} else {
  assert.deepEqual((await sbx.commands.list()).map((p) => p.pid), [sleeper.pid]);
}
assert.deepEqual((await sbx.commands.list()).find((p) => p.pid === sleeper.pid).args, ["-l", "-c", "sleep 60"]);
const ticker = await sbx.commands.run("for i in $(seq 1 50); do echo tick$i; sleep 0.1; done", { background: true });
await ticker.disconnect();
const again = await sbx.commands.connect(ticker.pid);
r = await again.wait();
assert.match(r.stdout, /tick50\n$/);
assert.equal(await sleeper.kill(), true);
e = await rejects(sleeper.wait());
assert.ok(e instanceof CommandExitError);
assert.equal(e.exitCode, -1);
assert.equal(await sbx.commands.kill(999999), false);
assert.equal((await sbx.commands.list()).length, 0);

// A command that runs past its timeout is stopped.
e = await rejects(sbx.commands.run("sleep 20", { timeoutMs: 700 }));
assert.ok(e instanceof TimeoutError, String(e));

// Files: write, read, list, stat, mkdir, remove.
const w = await sbx.files.write("notes/a.txt", "one\ntwo\n");
assert.equal(w.path, "/home/user/notes/a.txt");
assert.equal(await sbx.files.read("/home/user/notes/a.txt"), "one\ntwo\n");
await sbx.files.write([
  { path: "/workspace/src/x.js", data: "console.log(1)\n" },
  { path: "/workspace/src/y.bin", data: new Uint8Array([0, 1, 2, 255]).buffer },
]);
assert.deepEqual(Array.from(await sbx.files.read("/workspace/src/y.bin", { format: "bytes" })), [0, 1, 2, 255]);
await sbx.files.write("/workspace/empty", "");
assert.equal(await sbx.files.read("/workspace/empty"), "");
const entries = await sbx.files.list("/workspace/src");
assert.deepEqual(entries.map((x) => [x.name, x.type, x.size]), [["x.js", "file", 15], ["y.bin", "file", 4]]);
assert.equal(entries[0].owner, "user");
assert.equal((await sbx.files.list("/workspace", { depth: 2 })).filter((x) => x.path.startsWith("/workspace/src/")).length, 2);
assert.equal(await sbx.files.makeDir("/workspace/dir/sub"), true);
assert.equal(await sbx.files.makeDir("/workspace/dir/sub"), false);
assert.equal((await sbx.files.getInfo("/workspace/dir")).type, "dir");
assert.equal(await sbx.files.exists("/workspace/nope"), false);
e = await rejects(sbx.files.read("/workspace/nope"));
assert.ok(e instanceof NotFoundError, String(e));
await sbx.files.remove("/workspace/dir");
assert.equal(await sbx.files.exists("/workspace/dir"), false);
r = await sbx.commands.run("cat /workspace/src/x.js");
assert.equal(r.stdout, "console.log(1)\n");

// Commands run as the sandbox user, never root.
e = await rejects(sbx.commands.run("id", { user: "root" }));
assert.match(e.message, /unprivileged user "user"/);

// The policy applies through this door too.
e = await rejects(sbx.commands.run("cat /workspace/.env"));
assert.ok(e instanceof SandboxError, String(e));
assert.match(e.message, /airlock policy: .*secret/);
e = await rejects(sbx.files.write("/workspace/.env", "TOKEN=x"));
assert.match(e.message, /secret/);
// A held command waits for a human: the Go test approves this one...
log("held", { command: "approve-me" });
r = await sbx.commands.run("rm -rf /workspace/approve-me && echo approved-ran");
assert.equal(r.stdout, "approved-ran\n");
// ...and lets this one wait until the daemon gives up.
e = await rejects(sbx.commands.run("rm -rf /workspace/leave-me"));
assert.match(e.message, /airlock policy: approval ap-\S+ was not given within/);
log("held-timeout", { message: e.message });

// Terminal: an interactive shell escapes per-command classification, so
// the default policy holds it for a human too (the Go test approves it).
let ptyOut = "";
const term = await sbx.pty.create({ cols: 100, rows: 30, onData: (d) => (ptyOut += new TextDecoder().decode(d)) });
await sbx.pty.sendInput(term.pid, new TextEncoder().encode("stty size; exit\n"));
await term.wait().catch(() => {});
assert.match(ptyOut, /30 100/);

// Snapshots (2.x): airlock's snapshot templates, files only (/workspace
// and /home/user; not processes or memory). A sandbox starts from one by
// its id; fork is a snapshot and sandboxes made from it; deleting one is
// refused (the operator's).
if (v2) {
  const snap = await sbx.createSnapshot({ name: "e2b-session" });
  assert.deepEqual(snap, { snapshotId: "e2b-session", names: ["e2b-session"] });
  assert.deepEqual((await sbx.listSnapshots().nextItems()).map((x) => x.snapshotId), ["e2b-session"]);
  const fromSnap = await Sandbox.create(snap.snapshotId, { timeoutMs: 60_000 });
  r = await fromSnap.commands.run("cat notes/a.txt /workspace/src/x.js; whoami");
  assert.equal(r.stdout, "one\ntwo\nconsole.log(1)\nuser\n");
  assert.equal(await fromSnap.kill(), true);
  const forks = await sbx.fork({ count: 2, timeoutMs: 60_000 });
  assert.equal(forks.length, 2);
  for (const f of forks) {
    assert.ok(f instanceof Sandbox, String(f));
    assert.equal(await f.files.read("/home/user/notes/a.txt"), "one\ntwo\n");
    assert.equal((await f.getInfo()).metadata.suite, "e2b");
    assert.equal(await f.kill(), true);
  }
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false); // gone: not found
  await rejects(Sandbox.create(snap.snapshotId, { timeoutMs: 60_000 }));
  log("snapshot", { id: snap.snapshotId, forks: forks.map((f) => f.sandboxId) });
}

// Timeout, pause, connect (resume), kill.
await sbx.setTimeout(120_000);
info = await sbx.getInfo();
assert.ok(info.endAt.getTime() < Date.now() + 125_000);
if (v2) {
  assert.equal(await sbx.pause(), true);
  assert.equal(await Sandbox.pause(sbx.sandboxId), false); // already paused
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, "paused");
  assert.equal(await sbx.isRunning(), false);
}
const back = await Sandbox.connect(sbx.sandboxId);
if (v2) assert.equal((await back.getInfo()).state, "running");
r = await back.commands.run("cat /home/user/notes/a.txt");
assert.equal(r.stdout, "one\ntwo\n");
assert.equal(await back.isRunning(), true);
// (1.x: the instance's kill answers nothing, and getInfo's 404 is a
// SandboxError "404: ...")
assert.equal(await back.kill(), v2 ? true : undefined);
assert.equal(await Sandbox.kill(sbx.sandboxId), false);
e = await rejects(Sandbox.getInfo(sbx.sandboxId));
if (v2) assert.ok(e instanceof NotFoundError, String(e));
else assert.match(e.message, /^404: /);
assert.equal(await back.isRunning(), false);
log("end", { id: sbx.sandboxId });
console.log(JSON.stringify({ ok: true }));
// 1.x's commands.start leaves its request timer (60 s) pending when a
// start fails (the denied command above), which keeps node alive for a
// minute; nothing of the door's is open (the 2.x runs end on their own).
if (!v2) process.exit(0);

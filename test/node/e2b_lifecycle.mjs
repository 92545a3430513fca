// Drives E2B's sandbox lifecycle through the door with the published SDK,
// unmodified: lifecycle {onTimeout: 'pause'} (its timeout pauses the
// sandbox, which getInfo, list and isRunning report; calls into it are
// refused until connect resumes it with a new timeout) and autoResume (a
// call into it resumes it). With E2B_LIFECYCLE=maxlife, the daemon's
// --max-lifetime destroys a sandbox its timeout paused. Prints
// {"ok":true} at the end.
// env: E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL; E2B_SDK names the
// package (an npm alias of package.json: e2b, e2b-2-45).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const sdk = process.env.E2B_SDK || "e2b";
const { Sandbox, SandboxError, NotFoundError } = await import(sdk);
const version = JSON.parse(readFileSync(new URL(`./node_modules/${sdk}/package.json`, import.meta.url))).version;
const log = (step, v) => console.log(JSON.stringify({ step, ...v }));
const rejects = async (p) => {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected an error");
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// waitFor polls until f() is true (10 s at most).
const waitFor = async (what, f) => {
  const deadline = Date.now() + 10_000;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error("timed out waiting for " + what);
    await sleep(50);
  }
};
const stateOf = async (id) => (await Sandbox.getInfo(id)).state;
log("sdk", { sdk, version });
const metadata = { suite: "e2b-lifecycle" };

if (process.env.E2B_LIFECYCLE === "maxlife") {
  // Paused by its timeout, then destroyed by the daemon's maximum lifetime.
  const s = await Sandbox.create({ timeoutMs: 1_000, lifecycle: { onTimeout: "pause" }, metadata });
  await waitFor("paused", async () => (await stateOf(s.sandboxId)) === "paused");
  log("paused", { id: s.sandboxId });
  await waitFor("destroyed", async () => {
    try {
      await Sandbox.getInfo(s.sandboxId);
      return false;
    } catch (e) {
      if (e instanceof NotFoundError) return true;
      throw e;
    }
  });
  log("destroyed", {});
  console.log(JSON.stringify({ ok: true }));
  process.exit(0);
}

// onTimeout pause, no autoResume.
const a = await Sandbox.create({ timeoutMs: 2_000, lifecycle: { onTimeout: "pause" }, metadata });
await a.files.write("note.txt", "kept");
await a.commands.run("sleep 600 >/dev/null 2>&1 &");
await waitFor("paused", async () => (await stateOf(a.sandboxId)) === "paused");
let info = await a.getInfo();
assert.deepEqual(info.lifecycle, { onTimeout: "pause", autoResume: false });
assert.equal(await a.isRunning(), false);
const listed = async (state) =>
  (await Sandbox.list({ query: { state: [state], metadata } }).nextItems()).map((x) => x.sandboxId);
assert.ok((await listed("paused")).includes(a.sandboxId));
assert.ok(!(await listed("running")).includes(a.sandboxId));
let e = await rejects(a.commands.run("echo no"));
assert.ok(e instanceof SandboxError && /paused/.test(e.message), String(e));
const runError = e.message;
e = await rejects(a.files.read("note.txt"));
assert.ok(e instanceof SandboxError && /paused/.test(e.message), String(e));
assert.equal(await stateOf(a.sandboxId), "paused"); // the refused calls did not wake it
log("paused", { id: a.sandboxId, runError, readError: e.message });

// connect resumes it with the timeout it gives; its files and its
// process are as they were.
const before = Date.now();
const a2 = await Sandbox.connect(a.sandboxId, { timeoutMs: 60_000 });
info = await a2.getInfo();
assert.equal(info.state, "running");
const left = info.endAt.getTime() - before;
assert.ok(left > 55_000 && left < 62_000, `endAt after connect: ${info.endAt.toISOString()} (${left} ms)`);
assert.equal(await a2.isRunning(), true);
assert.equal(await a2.files.read("note.txt"), "kept");
const r = await a2.commands.run("pgrep -x sleep >/dev/null && echo still");
assert.equal(r.stdout, "still\n");
await a2.kill();
log("connect", {});

// autoResume: a call into it resumes it, with at least five minutes.
const b = await Sandbox.create({ timeoutMs: 1_000, lifecycle: { onTimeout: "pause", autoResume: true }, metadata });
await waitFor("paused", async () => (await stateOf(b.sandboxId)) === "paused");
info = await b.getInfo();
assert.deepEqual(info.lifecycle, { onTimeout: "pause", autoResume: true });
const out = await b.commands.run("echo awake");
assert.equal(out.stdout, "awake\n");
info = await b.getInfo();
assert.equal(info.state, "running");
assert.ok(info.endAt.getTime() - Date.now() > 290_000, `endAt after auto-resume: ${info.endAt.toISOString()}`);
await b.kill();
log("autoResume", {});

// What the SDK itself refuses, and what airlock cannot do.
e = await rejects(Sandbox.create({ lifecycle: { onTimeout: "kill", autoResume: true } }));
assert.match(e.message, /autoResume/);
e = await rejects(Sandbox.create({ lifecycle: { onTimeout: { action: "pause", keepMemory: false } }, metadata }));
assert.match(e.message, /unsupported by airlock: lifecycle onTimeout keepMemory false/);
log("refused", {});

console.log(JSON.stringify({ ok: true }));

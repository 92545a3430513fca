// Drives the E2B door's files, metrics and command-end semantics with the
// published E2B SDK, unmodified: rename, remove of a missing path,
// symlink targets, getMetrics, watchDir, and a
// sandbox killed under a running command. Prints {"ok":true} at the end.
// env: E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL; E2B_SDK names the
// package (an npm alias of package.json: e2b, e2b-2-45).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const sdk = process.env.E2B_SDK || "e2b";
const { Sandbox, NotFoundError, TimeoutError } = await import(sdk);
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
log("sdk", { sdk, version });

const sbx = await Sandbox.create({ metadata: { suite: "e2b-files" }, timeoutMs: 120_000 });
log("create", { id: sbx.sandboxId });

// files.rename: the destination's parents are made, the entry answered.
await sbx.files.write("a.txt", "one\n");
let entry = await sbx.files.rename("a.txt", "/home/user/moved/deep/b.txt");
assert.equal(entry.path, "/home/user/moved/deep/b.txt");
assert.equal(entry.name, "b.txt");
assert.equal(entry.type, "file");
assert.equal(await sbx.files.read("/home/user/moved/deep/b.txt"), "one\n");
assert.equal(await sbx.files.exists("/home/user/a.txt"), false);
await sbx.files.makeDir("/workspace/d/sub");
await sbx.files.write("/workspace/d/sub/x", "x");
entry = await sbx.files.rename("/workspace/d", "/workspace/e");
assert.equal(entry.type, "dir");
assert.equal(await sbx.files.read("/workspace/e/sub/x"), "x");
let e = await rejects(sbx.files.rename("/home/user/nope", "/home/user/b"));
assert.ok(e instanceof NotFoundError, String(e));
// (the policy judges a rename as a read and a write)
e = await rejects(sbx.files.rename("/home/user/moved/deep/b.txt", "/workspace/.env"));
assert.match(e.message, /secret/);
log("rename", {});

// Removing what is not there succeeds, as on E2B.
await sbx.files.remove("/home/user/never-there");
await sbx.files.remove("/home/user/never/there/either");
await sbx.files.remove("/home/user/moved");
assert.equal(await sbx.files.exists("/home/user/moved"), false);
log("remove", {});

// A symlink's target is the path it resolves to, and its type the type
// of what it names (E2B's EntryInfo).
await sbx.files.write("/home/user/t/real.txt", "real");
let r = await sbx.commands.run("cd /home/user && ln -s t/real.txt rel && ln -s /home/user/t dir && ln -s dir/real.txt chain && ln -s missing dangling");
assert.equal(r.exitCode, 0);
for (const [p, type, target] of [
  ["rel", "file", "/home/user/t/real.txt"],
  ["dir", "dir", "/home/user/t"],
  ["chain", "file", "/home/user/t/real.txt"],
]) {
  const info = await sbx.files.getInfo("/home/user/" + p);
  assert.equal(info.type, type, p);
  assert.equal(info.symlinkTarget, target, p);
  assert.equal(info.path, "/home/user/" + p);
}
const listed = Object.fromEntries((await sbx.files.list("/home/user")).map((x) => [x.name, x]));
assert.equal(listed.rel.symlinkTarget, "/home/user/t/real.txt");
assert.equal(listed.dir.type, "dir");
assert.equal(listed.dangling, undefined); // no type: the SDK leaves it out, as with E2B
log("symlinks", {});

// getMetrics: one sample now, from the sandbox's cgroup and its disk.
const metricsNow = async () => {
  const out = [];
  for (const ms of [await sbx.getMetrics(), await Sandbox.getMetrics(sbx.sandboxId)]) {
    assert.equal(ms.length, 1);
    const m = ms[0];
    assert.ok(m.timestamp instanceof Date && Math.abs(m.timestamp.getTime() - Date.now()) < 60_000, String(m.timestamp));
    assert.ok(m.cpuCount >= 1 && m.cpuUsedPct >= 0 && m.cpuUsedPct <= 100, JSON.stringify(m));
    assert.ok(m.memUsed > 0 && m.memTotal >= m.memUsed, JSON.stringify(m));
    assert.ok(m.memCache >= 0 && m.memCache <= m.memUsed, JSON.stringify(m));
    assert.ok(m.diskUsed > 0 && m.diskTotal > m.diskUsed, JSON.stringify(m));
    out.push(m);
  }
  return out[1];
};
const before = await metricsNow();
// A file of known size on the disk (/home/user, with /workspace) is
// counted at once.
await sbx.files.write("/home/user/ten.bin", new Uint8Array(10 << 20).buffer);
const after = await metricsNow();
const grew = after.diskUsed - before.diskUsed;
assert.ok(grew >= 10 << 20 && grew <= 11 << 20, JSON.stringify({ before, after }));
assert.equal(after.diskTotal, before.diskTotal);
await sbx.files.remove("/home/user/ten.bin");
e = await rejects(sbx.getMetrics({ end: new Date(Date.now() - 3600_000) }));
assert.match(e.message, /keeps no history/);
log("metrics", { diskUsed: after.diskUsed, diskTotal: after.diskTotal, memCache: after.memCache, grew });

// watchDir: the changes of a directory's tree, as E2B names them.
await sbx.files.makeDir("/home/user/wd");
const seen = [];
const handle = await sbx.files.watchDir("/home/user/wd", (ev) => seen.push(`${ev.type} ${ev.name}`), { recursive: true });
await sbx.files.write("/home/user/wd/a.txt", "1");
// A new directory is watched once its creation is seen (inotify's, here as
// in E2B's envd: what a command does in it before that is not seen), so
// the test waits for it before writing in it.
r = await sbx.commands.run("mkdir /home/user/wd/s");
assert.equal(r.exitCode, 0);
for (let i = 0; i < 100 && !seen.includes("create s"); i++) await new Promise((res) => setTimeout(res, 50));
await new Promise((res) => setTimeout(res, 200));
r = await sbx.commands.run("echo 2 > /home/user/wd/s/b.txt && mv /home/user/wd/a.txt /home/user/wd/c.txt && rm /home/user/wd/s/b.txt");
assert.equal(r.exitCode, 0);
const want = ["create a.txt", "write a.txt", "create s", "create s/b.txt", "write s/b.txt", "rename a.txt", "create c.txt", "remove s/b.txt"];
for (let i = 0; i < 100 && !want.every((w) => seen.includes(w)); i++) await new Promise((res) => setTimeout(res, 50));
assert.deepEqual(want.filter((w) => !seen.includes(w)), [], JSON.stringify(seen));
await handle.stop();
// Only the trees airlock watches (/workspace, the home) can be watched.
e = await rejects(sbx.files.watchDir("/etc", () => {}));
assert.match(e.message, /can be watched/);
// includeEntry (envd 0.6.3): each event carries its path's entry.
const entries = [];
const h2 = await sbx.files.watchDir("/home/user/wd", (ev) => entries.push(ev), { includeEntry: true });
await sbx.commands.run("printf abc > /home/user/wd/e.txt && chmod 640 /home/user/wd/e.txt");
const chmodOf = () => entries.find((ev) => ev.name === "e.txt" && ev.type === "chmod");
for (let i = 0; i < 100 && !chmodOf(); i++) await new Promise((res) => setTimeout(res, 50));
await h2.stop();
const ent = chmodOf()?.entry;
assert.ok(ent, JSON.stringify(entries));
assert.equal(ent.path, "/home/user/wd/e.txt");
assert.equal(ent.type, "file");
assert.equal(ent.size, 3);
assert.equal(ent.permissions, "-rw-r-----");
assert.equal(ent.owner, "user");
assert.ok(ent.modifiedTime instanceof Date && !isNaN(ent.modifiedTime), String(ent.modifiedTime));
log("watch", { seen, entry: ent });
// File metadata (envd 0.6.2): the SDK sends it; airlock refuses it whole.
e = await rejects(sbx.files.write("/home/user/meta.txt", "x", { metadata: { k: "v" } }));
assert.match(e.message, /unsupported by airlock: file metadata/);
assert.equal(await sbx.files.exists("/home/user/meta.txt"), false);
log("metadata", { refused: e.message });

// What airlock does not have stays refused, saying so: another port
// than the in-sandbox API's (getHost's hosts; the SDK only makes the
// name, so the door is asked as a client of such a host asks it).
const res = await fetch(`${process.env.E2B_SANDBOX_URL}/health`, { headers: { "E2b-Sandbox-Id": sbx.sandboxId, "E2b-Sandbox-Port": "8080" } });
assert.ok(res.status >= 500, String(res.status));
assert.match(await res.text(), /no preview ports yet \(getHost\)/);
log("refused", { host: sbx.getHost(8080) });

// A sandbox killed under a running command: the command's wait ends
// with a TimeoutError, as on E2B.
const bg = await sbx.commands.run("sleep 60", { background: true });
const waited = rejects(bg.wait());
assert.equal(await sbx.kill(), true);
e = await waited;
assert.ok(e instanceof TimeoutError, `${e?.name}: ${e?.message}`);
log("killed", { message: e.message });
console.log(JSON.stringify({ ok: true }));

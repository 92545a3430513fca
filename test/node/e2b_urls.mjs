// Signed file URLs (files.downloadUrl / uploadUrl) of the published E2B
// SDK against airlock's E2B door, fetched as a browser or curl would:
// plain requests with no header. The Go test (cmd/airlock) runs it on
// the shared E2B_SANDBOX_URL and on sandbox hosts over TLS
// (E2B_DOMAIN, with e2b_hosts.mjs preloaded). Prints {"ok":true} at the end.
// env: E2B_API_KEY, E2B_API_URL or E2B_DOMAIN, E2B_SANDBOX_URL (or not);
// E2B_SDK names the package (an npm alias of package.json).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const sdk = process.env.E2B_SDK || "e2b";
const { Sandbox } = await import(sdk);
const version = JSON.parse(readFileSync(new URL(`./node_modules/${sdk}/package.json`, import.meta.url))).version;
const log = (step, v) => console.log(JSON.stringify({ step, ...v }));
log("sdk", { sdk, version });

const sbx = await Sandbox.create({ metadata: { suite: "urls" }, secure: true, timeoutMs: 120_000 });
const other = await Sandbox.create({ metadata: { suite: "urls-other" }, secure: true, timeoutMs: 120_000 });
log("create", { id: sbx.sandboxId, other: other.sandboxId });
await sbx.files.write("/workspace/down.txt", "downloaded through a signed URL\n");
await other.files.write("/workspace/down.txt", "the other sandbox's file\n");

// Download: the URL alone fetches the file, with or without an expiry.
const dl = await sbx.downloadUrl("/workspace/down.txt");
log("downloadUrl", { url: dl.replace(/signature=[^&]+/, "signature=...") });
let res = await fetch(dl);
assert.equal(res.status, 200, await res.clone().text());
assert.equal(await res.text(), "downloaded through a signed URL\n");
const dlExp = await sbx.downloadUrl("/workspace/down.txt", { useSignatureExpiration: 60 });
assert.match(dlExp, /signature_expiration=\d+/);
res = await fetch(dlExp);
assert.equal(await res.text(), "downloaded through a signed URL\n");

// Upload: a multipart POST to the URL writes the file.
const ul = await sbx.uploadUrl("/workspace/up.txt", { useSignatureExpiration: 60 });
const form = new FormData();
form.append("file", new Blob(["uploaded through a signed URL\n"]), "up.txt");
res = await fetch(ul, { method: "POST", body: form });
assert.equal(res.status, 200, await res.clone().text());
assert.equal(await sbx.files.read("/workspace/up.txt"), "uploaded through a signed URL\n");

// Refused: another path, a moved expiry, the other sandbox's file.
const moved = new URL(dl);
moved.searchParams.set("path", "/workspace/up.txt");
res = await fetch(moved);
assert.equal(res.status, 401);
assert.match((await res.json()).message, /invalid signature/);
const later = new URL(dlExp);
later.searchParams.set("signature_expiration", String(Number(later.searchParams.get("signature_expiration")) + 3600));
res = await fetch(later);
assert.equal(res.status, 401);
const otherUrl = new URL(await other.downloadUrl("/workspace/down.txt"));
if (otherUrl.host !== new URL(dl).host) {
  // (host routing: sandbox A's signature on sandbox B's host)
  const swapped = new URL(dl);
  swapped.host = otherUrl.host;
  res = await fetch(swapped);
  assert.equal(res.status, 401);
}
res = await fetch(otherUrl);
assert.equal(await res.text(), "the other sandbox's file\n");

// No replay once the sandbox is gone.
await sbx.kill();
await other.kill();
res = await fetch(dl);
assert.ok(res.status === 401 || res.status === 404, String(res.status));
log("end", { id: sbx.sandboxId });
console.log(JSON.stringify({ ok: true }));

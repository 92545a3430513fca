// Round trip of commands.run('true') through the published E2B SDK, against
// airlock's native API from the same process (fetch over TCP with a key):
// the same command line the SDK sends (bash -l -c true) and a bare `true`.
// Prints one JSON line of medians (ms). env: E2B_API_KEY, E2B_API_URL,
// E2B_SANDBOX_URL, AIRLOCK_URL, AIRLOCK_KEY, N (default 300)
import { Sandbox } from "e2b";

const N = Number(process.env.N || 300);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const time = async (fn) => {
  for (let i = 0; i < 20; i++) await fn(); // warm up
  const xs = [];
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    await fn();
    xs.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return xs;
};

const sbx = await Sandbox.create();
const base = process.env.AIRLOCK_URL;
const auth = { Authorization: "Bearer " + process.env.AIRLOCK_KEY, "Content-Type": "application/json" };
const native = (argv) => async () => {
  const r = await fetch(`${base}/v1/sandboxes/${sbx.sandboxId}/exec`, { method: "POST", headers: auth, body: JSON.stringify({ argv }) });
  const text = await r.text();
  if (r.status !== 200 || !text.includes('"code":0')) throw new Error(`native exec: ${r.status} ${text}`);
};
// Interleave the three so that drift hits all alike.
const out = { e2b: [], native_bash: [], native_true: [] };
const sdk = async () => {
  const r = await sbx.commands.run("true");
  if (r.exitCode !== 0) throw new Error("exit " + r.exitCode);
};
for (let round = 0; round < 3; round++) {
  out.e2b.push(...(await time(sdk)));
  out.native_bash.push(...(await time(native(["/bin/bash", "-l", "-c", "true"]))));
  out.native_true.push(...(await time(native(["true"]))));
}
await sbx.kill();
console.log(JSON.stringify({ n: out.e2b.length, e2b_ms: median(out.e2b), native_bash_ms: median(out.native_bash), native_true_ms: median(out.native_true) }));

// Drives airlock's MCP server with the published MCP TypeScript SDK.
// Usage: node mcp_client.mjs stdio|http
// env: AIRLOCK_BIN, AIRLOCK_SOCKET (stdio); MCP_URL, AIRLOCK_KEY (http); REPO (a git repository)
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const mode = process.argv[2];
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({
    command: process.env.AIRLOCK_BIN,
    args: ["mcp", "--socket", process.env.AIRLOCK_SOCKET],
    env: process.env,
  });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
    requestInit: { headers: { Authorization: "Bearer " + process.env.AIRLOCK_KEY } },
  });
} else {
  throw new Error("usage: mcp_client.mjs stdio|http");
}

const client = new Client({ name: "airlock-test", version: "1.0.0" });
await client.connect(transport);
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const call = (name, args) => client.callTool({ name, arguments: args });

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
assert.deepEqual(names, ["create_sandbox", "destroy", "diff", "edit_file", "exec", "exec_input", "exec_kill", "exec_output", "export_bundle",
  "finish_task", "get_approval", "list_execs", "list_files", "list_sandboxes", "list_tasks", "read_file", "reset_sandbox", "run_tests", "search",
  "snapshot_sandbox", "start_task", "upload_tree", "write_file"]);
for (const t of tools) {
  assert.ok(t.title && t.annotations && typeof t.annotations.readOnlyHint === "boolean", t.name + " has no title or annotations");
}

// A sandbox, a command, its output.
let r = await call("create_sandbox", {});
assert.ok(!r.isError, text(r));
const sb = r.structuredContent.sandbox_id;
r = await call("exec", { sandbox_id: sb, command: "echo hello from $(uname -s)" });
assert.ok(!r.isError, text(r));
assert.match(text(r), /hello from Linux/);
assert.equal(r.structuredContent.exit_code, 0);
r = await call("exec", { sandbox_id: sb, command: "exit 3" });
assert.ok(r.isError);
assert.equal(r.structuredContent.exit_code, 3);

// The policy applies: a secret read is denied, a destructive command waits for a human.
r = await call("exec", { sandbox_id: sb, command: "cat /workspace/.env" });
assert.ok(r.isError);
assert.equal(r.structuredContent.code, "policy_denied");
r = await call("exec", { sandbox_id: sb, command: "rm -rf /workspace/old" });
assert.ok(r.isError);
assert.match(text(r), /^pending approval ap-/);
const approval = r.structuredContent.approval_id;
assert.equal(r.structuredContent.approval_state, "pending");
assert.match(approval, /^ap-/);

// Files.
r = await call("write_file", { sandbox_id: sb, path: "/workspace/notes/a.txt", content: "one\ntwo\n" });
assert.ok(!r.isError, text(r));
r = await call("read_file", { sandbox_id: sb, path: "/workspace/notes/a.txt" });
assert.equal(text(r), "     1\tone\n     2\ttwo\n");
r = await call("list_files", { sandbox_id: sb, path: "/workspace/notes" });
assert.deepEqual(r.structuredContent.entries.map((e) => e.name), ["a.txt"]);
r = await call("read_file", { sandbox_id: sb, path: "/workspace/missing" });
assert.ok(r.isError);
r = await call("destroy", { sandbox_id: sb });
assert.ok(!r.isError, text(r));

// A task: checkout, change, tests, diff, bundle. Over TCP (http mode) a
// repository on the daemon's host is refused: only URLs may be cloned.
let blob = Buffer.alloc(0);
let tsb = "";
if (mode === "http") {
  r = await call("start_task", { repo: process.env.REPO, test: "true" });
  assert.ok(r.isError);
  assert.match(text(r), /over TCP, repo must be/);
} else {
  r = await call("start_task", { repo: process.env.REPO, scope: ["**"], test: "grep -q fixed README", prompt: "fix the README" });
  assert.ok(!r.isError, text(r));
  const task = r.structuredContent.task_id;
  tsb = r.structuredContent.sandbox_id;
  r = await call("run_tests", { task_id: task });
  assert.ok(r.isError);
  assert.equal(r.structuredContent.passed, false);
  r = await call("exec", { sandbox_id: tsb, command: "echo fixed >> README" });
  assert.ok(!r.isError, text(r));
  r = await call("run_tests", { task_id: task });
  assert.equal(r.structuredContent.passed, true, text(r));
  r = await call("diff", { task_id: task });
  assert.match(text(r), /\+fixed/);
  r = await call("export_bundle", { task_id: task });
  const link = r.content.find((c) => c.type === "resource_link");
  assert.ok(link, JSON.stringify(r.content));
  const rr = await client.readResource({ uri: link.uri });
  blob = Buffer.from(rr.contents[0].blob, "base64");
  assert.equal(blob[0], 0x1f);
  assert.equal(blob[1], 0x8b);
}

// Bad input is a tool error, not a crash.
r = await call("exec", { sandbox_id: tsb || "nope" });
assert.ok(r.isError);
assert.match(text(r), /command/);

await client.close();
console.log(JSON.stringify({ ok: true, mode, approval, bundle_bytes: blob.length }));

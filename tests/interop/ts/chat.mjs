// A tiny ACP client on the official TypeScript SDK: starts an agent binary, opens a session
// in the current directory, sends each prompt given on the command line, and prints what the
// agent streams back. File reads/writes are served from the real disk; permission requests
// are answered "allow" (and printed). Used by scripts/demo. ACP_DEMO_DIRS (paths separated
// by `:`) are sent as the session's additionalDirectories when the agent advertises them.
//
//   node chat.mjs <agent-binary> <prompt> [<prompt> ...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import * as acp from "@agentclientprotocol/sdk";

const [binary, ...prompts] = process.argv.slice(2);
if (!binary || prompts.length === 0) {
  console.error("usage: node chat.mjs <agent-binary> <prompt> [<prompt> ...]");
  process.exit(2);
}

const child = spawn(binary, [], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const out = (s) => process.stdout.write(s);

const app = acp.client({ name: "acp-demo-chat" });
app.onNotification("session/update", ({ params }) => {
  const u = params.update;
  switch (u.sessionUpdate) {
    case "agent_message_chunk":
      out(u.content.type === "text" ? u.content.text : `[${u.content.type}]`);
      break;
    case "agent_thought_chunk":
      out(`\x1b[2m${u.content.text ?? ""}\x1b[0m`);
      break;
    case "plan":
      out(`\n[plan] ${u.entries.map((e) => `${e.status === "completed" ? "✓" : "·"} ${e.content}`).join("  ")}\n`);
      break;
    case "tool_call":
      out(`\n[tool] ${u.title} (${u.kind ?? "other"}) ${u.status ?? "pending"}\n`);
      break;
    case "tool_call_update":
      if (u.status) out(`[tool] ${u.toolCallId} ${u.status}\n`);
      break;
    default:
      out(`\n[${u.sessionUpdate}]\n`);
  }
});
app.onRequest("fs/read_text_file", ({ params }) => {
  try {
    return { content: readFileSync(params.path, "utf8") };
  } catch {
    throw acp.RequestError.resourceNotFound(params.path);
  }
});
app.onRequest("fs/write_text_file", ({ params }) => {
  writeFileSync(params.path, params.content);
  return {};
});
app.onRequest("session/request_permission", ({ params }) => {
  const option = params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
  out(`[permission] ${params.toolCall.title ?? params.toolCall.toolCallId}: answering "${option.name}"\n`);
  return { outcome: { outcome: "selected", optionId: option.optionId } };
});

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
  });
  const info = init.agentInfo ?? { name: "agent" };
  out(`connected to ${info.title ?? info.name} ${info.version ?? ""} (protocol v${init.protocolVersion})\n`);
  // An agent that needs the user to sign in answers -32000; a real editor shows its
  // authMethods. This client uses the first one the agent runs itself (type "agent").
  const dirs = (process.env.ACP_DEMO_DIRS ?? "").split(":").filter(Boolean).map((d) => resolve(d));
  const build = () => {
    const builder = ctx.buildSession(process.cwd());
    return dirs.length && init.agentCapabilities?.sessionCapabilities?.additionalDirectories ? builder.withAdditionalDirectories(dirs) : builder;
  };
  let session;
  try {
    session = await build().start();
  } catch (e) {
    const method = (init.authMethods ?? []).find((m) => (m.type ?? "agent") === "agent");
    if (e?.code !== -32000 || !method) throw e;
    out(`[auth] signing in with "${method.name}"\n`);
    await ctx.request("authenticate", { methodId: method.id });
    session = await build().start();
  }
  for (const text of prompts) {
    out(`\n> ${text}\n`);
    const answer = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text }],
    });
    out(`\n[${answer.stopReason}]\n`);
  }
});
child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", resolve));
process.exit(code ?? 1);

#!/usr/bin/env node
// A reference ACP agent on the official TypeScript SDK's own agent side (2.4.0): protocol v2
// through `experimental/v2`'s agent() app, v1 (initialize only) through the v1 agent() app,
// chosen per connection by the SDK's agentProtocolRouter. It exists to prove the v2 drivers
// (interop.mjs): they must pass on it, and fail on each defect REF_AGENT_DEFECT switches on
// (prove.mjs runs both).
//
// Behaviour, modelled on examples/echo.rs (prompt text): `permission` (a tool call asking
// allow/reject), `sleep` (waits for cancel), `stream <n>` (n chunks), `call say {"text": T}`
// (a tool call saying T, like examples/mcp.rs), anything else is echoed word by word under a
// plan. Sessions are kept in $ACP_DATA_DIR/reference-agent/sessions.json (list, resume with
// replay across processes). Prompts sent while a turn runs are held and run in order.
// REF_AGENT_AUTH=1: declares an `api-key` auth method and gates session methods on it.
//
// Nothing but frames on stdout; diagnostics go to stderr.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as v1 from "@agentclientprotocol/sdk";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const DEFECTS = new Set((process.env.REF_AGENT_DEFECT ?? "").split(",").filter(Boolean));
const AUTH = process.env.REF_AGENT_AUTH === "1";
const STORE = join(process.env.ACP_DATA_DIR ?? tmpdir(), "reference-agent", "sessions.json");

const load = () => {
  try {
    return JSON.parse(readFileSync(STORE, "utf8"));
  } catch {
    return {};
  }
};
function save(sid, change) {
  const all = load();
  all[sid] = change(all[sid]);
  mkdirSync(dirname(STORE), { recursive: true });
  writeFileSync(STORE, JSON.stringify(all));
}

let counter = 0;
const newId = (prefix) => `${prefix}_${process.pid}_${++counter}`;
const text = (t) => ({ type: "text", text: t });

/** Sessions active on this connection: sessionId -> {sid, client, running, queue}. */
const active = new Map();
let loggedIn = false;

function gate() {
  if (AUTH && !loggedIn && !DEFECTS.has("auth_open")) throw acp.RequestError.authRequired();
}
function activeSession(sid) {
  const s = active.get(sid);
  if (!s) throw acp.RequestError.sessionNotFound(sid);
  return s;
}
const update = (s, u) => s.client.notify("session/update", { sessionId: s.sid, update: u });
const state = (s, st, stopReason) => update(s, { sessionUpdate: "state_update", state: st, ...(stopReason ? { stopReason } : {}) });

/** One turn's agent message: chunks share a messageId; the text is kept for replay. */
async function say(s, turn, t) {
  turn.agentMessageId ??= newId("msg_agent");
  turn.said += t;
  await update(s, { sessionUpdate: "agent_message_chunk", messageId: turn.agentMessageId, content: text(t) });
}

const cancelled = (turn) => new Promise((resolve) => (turn.abort.signal.aborted ? resolve() : turn.abort.signal.addEventListener("abort", resolve)));

async function permission(s, turn) {
  const toolCallId = newId("call");
  const created = { toolCallId, title: "Dangerous action", kind: "execute", status: "pending" };
  await update(s, { sessionUpdate: DEFECTS.has("v1_tool_call") ? "tool_call" : "tool_call_update", ...created });
  if (!DEFECTS.has("no_requires_action")) await state(s, "requires_action");
  let outcome;
  try {
    const res = await s.client.request(
      "session/request_permission",
      {
        sessionId: s.sid,
        title: "Run the dangerous action?",
        subject: { type: "tool_call", toolCall: created },
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      },
      { cancellationSignal: turn.abort.signal, stopWaitingOnCancel: true },
    );
    outcome = res.outcome;
  } catch {
    outcome = { outcome: "cancelled" };
  }
  if (outcome.outcome !== "selected" || turn.abort.signal.aborted) {
    await update(s, { sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    return "cancelled";
  }
  if (!DEFECTS.has("no_running_after_permission")) await state(s, "running");
  if (outcome.optionId === "allow") {
    await update(s, { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
    await update(s, { sessionUpdate: "tool_call_update", toolCallId, status: "completed", content: [{ type: "content", content: text("done") }] });
    await say(s, turn, "allowed");
  } else {
    await update(s, { sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    await say(s, turn, "rejected");
  }
  return "end_turn";
}

async function callSay(s, turn, args) {
  const toolCallId = newId("call");
  await update(s, { sessionUpdate: "tool_call_update", toolCallId, title: `Say ${args.text}`, kind: "other", status: "pending", rawInput: args });
  await update(s, { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
  await update(s, { sessionUpdate: "tool_call_content_chunk", toolCallId, content: { type: "content", content: text(args.text) } });
  await update(s, { sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
  await say(s, turn, args.text);
  return "end_turn";
}

async function echo(s, turn, t) {
  const plan = (status) => update(s, { sessionUpdate: "plan_update", plan: { type: "items", planId: "echo", entries: [{ content: "Echo the prompt", priority: "medium", status }] } });
  await plan("in_progress");
  await update(s, { sessionUpdate: "agent_thought_chunk", messageId: newId("msg_thought"), content: text("Repeating what you said.") });
  for (const word of t.match(/\S+\s*/g) ?? []) await say(s, turn, word);
  await plan("completed");
  return "end_turn";
}

async function runTurn(s, turn, prompt) {
  const t = prompt.trim();
  const [command] = t.split(" ", 1);
  const rest = t.slice(command.length).trim();
  if (command === "permission") return permission(s, turn);
  if (command === "sleep") {
    await say(s, turn, "sleeping");
    await cancelled(turn);
    return "cancelled";
  }
  if (command === "stream") {
    for (let i = 0; i < Number(rest); i++) await say(s, turn, `chunk ${i}\n`);
    return "end_turn";
  }
  if (command === "call" && rest.startsWith("say ")) return callSay(s, turn, JSON.parse(rest.slice(4)));
  return echo(s, turn, t);
}

/** Runs the next held prompt of `s` unless a turn runs (or, with `no_queue`, always). */
async function pump(s) {
  if ((s.running && !DEFECTS.has("no_queue")) || s.queue.length === 0) return;
  const item = s.queue.shift();
  const turn = { abort: new AbortController(), said: "", agentMessageId: undefined };
  turn.finished = new Promise((resolve) => (turn.done = resolve));
  s.running = turn;
  const messageId = newId("msg_user");
  await state(s, "running");
  await update(s, { sessionUpdate: "user_message", messageId, content: item.prompt });
  save(s.sid, (r) => ({ ...r, updatedAt: new Date().toISOString(), history: [...r.history, { role: "user", messageId, content: item.prompt }] }));
  item.resolve(DEFECTS.has("no_message_id") ? {} : { messageId });
  let stop;
  try {
    stop = await runTurn(s, turn, item.prompt.filter((b) => b.type === "text").map((b) => b.text).join(""));
  } catch (e) {
    process.stderr.write(`reference-agent: turn failed: ${e?.stack ?? e}\n`);
    stop = "refusal";
  }
  if (turn.abort.signal.aborted) stop = DEFECTS.has("cancel_end_turn") ? "end_turn" : "cancelled";
  if (turn.said) save(s.sid, (r) => ({ ...r, history: [...r.history, { role: "agent", messageId: turn.agentMessageId, content: [text(turn.said)] }] }));
  if (!DEFECTS.has("skip_idle")) await state(s, "idle", stop);
  if (DEFECTS.has("late_update")) await say(s, turn, " (late)");
  if (s.running === turn) s.running = null;
  turn.done();
  pump(s);
}

/** Answers every held prompt of `s` with -32800 (the SDK's rule for cancel and close). */
function dropHeld(s) {
  for (const item of s.queue.splice(0)) item.reject(acp.RequestError.requestCancelled());
}

const v2 = acp
  .agent({ name: "reference-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: 2,
    info: { name: "reference-agent", version: "0.0.0" },
    capabilities: { session: {} },
    ...(AUTH ? { authMethods: [{ type: "agent", methodId: "api-key", name: "Use an API key" }] } : {}),
    ...(DEFECTS.has("init_v1_fields") ? { agentCapabilities: {} } : {}),
  }))
  .onRequest("auth/login", ({ params }) => {
    if (params.methodId !== "api-key") throw acp.RequestError.invalidParams(undefined, "unknown auth method; use `api-key`");
    loggedIn = true;
    return {};
  })
  .onRequest("auth/logout", () => {
    loggedIn = false;
    return {};
  })
  .onRequest("session/new", ({ params, client }) => {
    gate();
    const sid = newId("sess");
    save(sid, () => ({ sessionId: sid, cwd: params.cwd, updatedAt: new Date().toISOString(), history: [] }));
    active.set(sid, { sid, client, running: null, queue: [] });
    return { sessionId: sid };
  })
  .onRequest("session/list", ({ params }) => {
    gate();
    const sessions = DEFECTS.has("list_empty") ? [] : Object.values(load()).filter((r) => !params.cwd || r.cwd === params.cwd);
    return { sessions: sessions.map(({ sessionId, cwd, updatedAt }) => ({ sessionId, cwd, updatedAt })) };
  })
  .onRequest("session/resume", async ({ params, client }) => {
    gate();
    const record = load()[params.sessionId];
    if (!record) throw acp.RequestError.sessionNotFound(params.sessionId);
    if (params.replayFrom && params.replayFrom.type !== "start") throw acp.RequestError.invalidParams(undefined, "unsupported replayFrom");
    const s = active.get(params.sessionId) ?? { sid: params.sessionId, running: null, queue: [] };
    s.client = client;
    const replay = DEFECTS.has("replay_always") ? true : DEFECTS.has("no_replay") ? false : params.replayFrom?.type === "start";
    if (replay) {
      for (const m of record.history) await update(s, { sessionUpdate: m.role === "user" ? "user_message" : "agent_message", messageId: m.messageId, content: m.content });
    }
    if (!DEFECTS.has("no_resume_state")) await state(s, s.running ? "running" : "idle");
    active.set(s.sid, s);
    return {};
  })
  .onRequest("session/close", async ({ params }) => {
    const s = activeSession(params.sessionId);
    dropHeld(s);
    const turn = s.running;
    turn?.abort.abort();
    if (turn && !DEFECTS.has("close_answers_first")) await turn.finished;
    active.delete(s.sid);
    return {};
  })
  .onRequest("session/prompt", ({ params, client }) => {
    const s = activeSession(params.sessionId);
    s.client = client;
    return new Promise((resolve, reject) => {
      s.queue.push({ prompt: params.prompt, resolve, reject });
      pump(s);
    });
  })
  .onNotification("session/cancel", ({ params }) => {
    const s = active.get(params.sessionId);
    if (!s) return;
    dropHeld(s);
    s.running?.abort.abort();
  });

// v1 clients get initialize only: enough to show a v1 answer still comes back in v1 shape.
const v1App = v1.agent({ name: "reference-agent-v1" }).onRequest("initialize", () => ({
  protocolVersion: 1,
  agentCapabilities: {},
  agentInfo: { name: "reference-agent", version: "0.0.0" },
}));

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = acp.agentProtocolRouter().withV1(v1App).withV2(v2).connect(stream);
await connection.closed;
process.exit(0);

#!/usr/bin/env node
// `coder` (examples/coder.rs), a coding agent on a real model loop, under the official
// TypeScript client SDK (@agentclientprotocol/sdk). Its model is an OpenAI-compatible server
// in this same process (lib/model_server.mjs): the scenario decides each streamed reply from
// the request's messages and asserts what coder sent it. coder is started as a user would:
// `OPENAI_BASE_URL` pointing at that server, `ACP_MODEL` naming the model, an API key it must
// send and never show, a temporary HOME, cwd and session store (ACP_DATA_DIR).
//
// The client answers as an editor does: fs/read_text_file and fs/write_text_file on the
// project directory, session/request_permission by the scenario's policy, and terminal/* by
// really running the command. Each scenario asserts the exact sequence of coder's frames for
// a prompt turn on the raw tap (lib/agent.mjs), the files on disk, and the model's requests;
// every agent frame is validated against the SDK's JSON Schema (lib/validator.mjs).
//
// usage: node coder.mjs <coder-binary> [scenario ...]
//        node coder.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { spawnAgent } from "./lib/agent.mjs";
import { ScenarioFailure, WAIT_MS, describeError, runCli, scenario, withTimeout } from "./lib/harness.mjs";
import { ModelServer, call, chunksOf, say, toolResults } from "./lib/model_server.mjs";
import { toolCallNumber, turnOf as sharedTurnOf } from "./lib/turns.mjs";
import { FrameValidator } from "./lib/validator.mjs";

const MODEL = "interop-coder-1";
/** The key coder must send as `Authorization: Bearer …` and never write to a frame or a log. */
const API_KEY = "sk-interop-DO-NOT-SHOW-3f9c1e";
/** The context window coder is told of (`ACP_CONTEXT_WINDOW`): its usage_update reports it. */
const CONTEXT_WINDOW = 32_768;
// The client asks for the turn's token usage in the prompt answer (Unstable: the runtime sends
// it only to a client that opts in).
const CAPS = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  _meta: { unstable_end_turn_token_usage: true },
};
/** The tools coder offers the model (the editor configured no MCP server). */
const TOOLS = ["edit", "grep", "list", "plan", "read", "run", "task", "write"];

const GREET = "greet.sh";
const GREET_TEXT = 'echo "hello, world"\n';

// ---------------------------------------------------------------------------
// Client fixture: a temporary project (the client's file system and the session's cwd), HOME
// and data dir; the model server; coder processes.

class Fixture {
  constructor(binary, validator, checks) {
    this.binary = binary;
    this.validator = validator;
    this.checks = checks;
    this.root = mkdtempSync(join(tmpdir(), "acp-interop-coder-"));
    this.project = this.dir("project");
    this.home = this.dir("home");
    this.dataDir = this.dir("data");
    this.permissionPolicy = "allow_once";
    this.permissionCalls = []; // params of session/request_permission
    this.fsCalls = []; // [method, path]
    this.terminals = new Map(); // terminalId -> { params, child, output, exit: Promise }
    this.agents = [];
    this.model = undefined;
  }

  dir(name) {
    const d = join(this.root, name);
    mkdirSync(d, { recursive: true });
    return d;
  }

  file(name) {
    return join(this.project, name);
  }

  /** Starts the model server, answering as `respond(messages, body, n)` says. */
  async startModel(respond) {
    this.model = await new ModelServer(respond).start();
  }

  /** Fails the scenario for a path outside the project. */
  guardPath(method, path) {
    const rel = typeof path === "string" && isAbsolute(path) ? relative(this.project, path) : "..";
    if (rel.startsWith("..") || isAbsolute(rel)) {
      this.checks.check(false, `${method} for a path outside the project ${this.project}: ${JSON.stringify(path)}`);
      throw acp.RequestError.invalidParams({ path }, "path outside the workspace");
    }
  }

  terminal(params) {
    const t = this.terminals.get(params.terminalId);
    if (!t) throw acp.RequestError.resourceNotFound(params.terminalId);
    return t;
  }

  client() {
    const app = acp.client({ name: "acp-interop-coder" });
    app.onNotification("session/update", () => {});
    app.onRequest("fs/read_text_file", ({ params }) => {
      this.fsCalls.push(["fs/read_text_file", params.path]);
      this.guardPath("fs/read_text_file", params.path);
      if (!existsSync(params.path)) throw acp.RequestError.resourceNotFound(params.path);
      return { content: readFileSync(params.path, "utf8") };
    });
    app.onRequest("fs/write_text_file", ({ params }) => {
      this.fsCalls.push(["fs/write_text_file", params.path]);
      this.guardPath("fs/write_text_file", params.path);
      writeFileSync(params.path, params.content);
      return {};
    });
    app.onRequest("session/request_permission", ({ params }) => {
      this.permissionCalls.push(params);
      const option = params.options.find((o) => o.kind === this.permissionPolicy);
      if (!option) throw new Error(`no option of kind ${this.permissionPolicy} in ${JSON.stringify(params.options)}`);
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
    // A real terminal: the command runs in the project, its output is collected.
    app.onRequest("terminal/create", ({ params }) => {
      const cwd = params.cwd ?? this.project;
      this.guardPath("terminal/create cwd", cwd);
      const env = Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value]));
      const child = spawn(params.command, params.args ?? [], { cwd, env: { ...process.env, HOME: this.home, ...env } });
      const terminalId = `term-${this.terminals.size + 1}`;
      const t = { params, child, output: "", status: undefined, released: false };
      for (const s of [child.stdout, child.stderr]) s.on("data", (d) => (t.output += d.toString("utf8")));
      t.exit = new Promise((resolve) => {
        child.on("error", (e) => resolve((t.status = { exitCode: 127, signal: null, error: String(e) })));
        child.on("close", (code, signal) => resolve((t.status = { exitCode: code, signal })));
      });
      this.terminals.set(terminalId, t);
      return { terminalId };
    });
    app.onRequest("terminal/wait_for_exit", async ({ params }) => {
      const { exitCode, signal } = await this.terminal(params).exit;
      return { exitCode, signal };
    });
    app.onRequest("terminal/output", ({ params }) => {
      const t = this.terminal(params);
      const exitStatus = t.status ? { exitCode: t.status.exitCode, signal: t.status.signal } : null;
      return { output: t.output, truncated: false, exitStatus };
    });
    app.onRequest("terminal/kill", ({ params }) => {
      this.terminal(params).child.kill("SIGKILL");
      return {};
    });
    app.onRequest("terminal/release", ({ params }) => {
      const t = this.terminal(params);
      t.released = true;
      if (!t.status) t.child.kill("SIGKILL");
      return {};
    });
    return app;
  }

  /**
   * Spawns coder on the model server and runs `body(ctx, agent)` inside connectWith.
   * Afterwards its stdin is closed and it must exit with status 0 — unless the body killed it
   * (`agent.killed`), when it must have died of SIGKILL.
   */
  async run(name, body) {
    this.checks.must(existsSync(this.binary), `coder binary not found: ${this.binary} (cargo build --example coder)`);
    this.checks.must(this.model, "the scenario starts the model server before coder");
    const env = {
      OPENAI_BASE_URL: this.model.baseUrl,
      OPENAI_API_KEY: API_KEY,
      ACP_PROVIDER: "openai",
      ACP_MODEL: MODEL,
      // Empty counts as unset: nothing from the developer's environment leaks in.
      ACP_SMALL_MODEL: "",
      ACP_CONTEXT_WINDOW: String(CONTEXT_WINDOW),
      ANTHROPIC_API_KEY: "",
      ANTHROPIC_BASE_URL: "",
      HOME: this.home,
      XDG_DATA_HOME: join(this.home, ".local", "share"),
      ACP_DATA_DIR: this.dataDir,
    };
    const agent = spawnAgent(this.binary, this.validator, { env, cwd: this.home });
    agent.name = name;
    agent.killed = false;
    this.agents.push(agent);
    let bodyDone;
    try {
      return await this.client().connectWith(agent.stream, (ctx) => (bodyDone = Promise.resolve().then(() => body(ctx, agent))));
    } catch (e) {
      // Once the body killed the agent, connectWith may reject as the connection goes down.
      if (!(agent.killed && bodyDone && /connection closed/i.test(String(e?.message)))) throw e;
      return await bodyDone;
    } finally {
      const { code, signal, error } = await agent.shutdown(10_000);
      if (agent.killed) {
        this.checks.check(signal === "SIGKILL", `${name}: coder should have died of SIGKILL, got code=${code} signal=${signal}`);
      } else {
        this.checks.check(code === 0, `${name}: coder should exit with status 0 after stdin EOF, got code=${code} signal=${signal}${error ? " error=" + error : ""}`);
      }
    }
  }

  /** initialize + session/new in the project; returns the session/new answer. */
  async open(ctx) {
    const init = await this.initialize(ctx);
    this.checks.equal(init.agentCapabilities?.loadSession, true, "initialize: agentCapabilities.loadSession");
    const created = await ctx.request("session/new", { cwd: this.project, mcpServers: [] });
    this.checks.must(typeof created.sessionId === "string" && created.sessionId.length > 0, "session/new returned a sessionId");
    return created;
  }

  async initialize(ctx) {
    const params = { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: CAPS, clientInfo: { name: "acp-interop-coder", version: "0.0.0" } };
    const res = await ctx.request("initialize", params);
    this.checks.equal(res.protocolVersion, acp.PROTOCOL_VERSION, "initialize.protocolVersion");
    return res;
  }

  async prompt(ctx, sessionId, text) {
    const res = await withTimeout(ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }), WAIT_MS, `answer to the prompt ${JSON.stringify(text)}`);
    return res;
  }

  /** Checks common to every scenario once its agents are done: the key stayed secret, the model server saw nothing odd. */
  finish() {
    const c = this.checks;
    for (const p of this.model?.problems ?? []) c.check(false, p);
    for (const [i, r] of (this.model?.requests ?? []).entries()) {
      c.equal([r.body.model, r.authorization], [MODEL, `Bearer ${API_KEY}`], `model request #${i + 1}: [model, Authorization]`);
    }
    for (const agent of this.agents) {
      const leaked = agent.tap.frames.filter((f) => f.raw.includes(API_KEY)).map((f) => f.seq);
      c.equal(leaked, [], `${agent.name}: frames containing the API key`);
      c.check(!agent.stderr().includes(API_KEY), `${agent.name}: the API key appears in coder's stderr`);
    }
  }

  cleanup() {
    this.model?.close();
    for (const t of this.terminals.values()) if (!t.status) t.child.kill("SIGKILL");
    rmSync(this.root, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// One prompt turn on the raw tap, as a readable sequence.

const turnOf = (agent, sessionId, promptText) => {
  const turn = sharedTurnOf(agent, sessionId, promptText, labelOf);
  // Streamed text may arrive in any number of chunks: a run of them is one "message".
  turn.labels = turn.labels.filter((l, i) => !(l === "message" && turn.labels[i - 1] === "message"));
  return turn;
};

function labelOf(agent, f) {
  const m = f.msg;
  if (m.method === "session/update") {
    const u = m.params.update;
    if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
      const status = u.status ?? (u.sessionUpdate === "tool_call" ? "pending" : undefined);
      const kinds = (u.content ?? []).map((c) => (c.type === "content" ? c.content?.type : c.type)).join(",");
      return `${u.sessionUpdate}#${toolCallNumber(agent, u.toolCallId)}${status ? " " + status : ""}${kinds ? ` [${kinds}]` : ""}`;
    }
    if (u.sessionUpdate === "agent_message_chunk") return "message";
    return `update ${u.sessionUpdate}`;
  }
  if (m.method === "session/request_permission") return `request_permission#${toolCallNumber(agent, m.params?.toolCall?.toolCallId)}`;
  if ("method" in m) return `${"id" in m ? "request" : "notification"} ${m.method}`;
  if ("error" in m) return `answer error ${m.error?.code}`;
  return `answer ${m.result?.stopReason}`;
}

function messageText(turn) {
  return turn.frames
    .filter((f) => f.msg.method === "session/update" && f.msg.params.update.sessionUpdate === "agent_message_chunk")
    .map((f) => f.msg.params.update.content?.text ?? "")
    .join("");
}

/** The tool_call / tool_call_update params of call `n`, in order. */
function callUpdates(turn, n, agent) {
  return turn.frames
    .filter((f) => f.msg.method === "session/update" && f.msg.params.update.toolCallId !== undefined)
    .map((f) => f.msg.params.update)
    .filter((u) => toolCallNumber(agent, u.toolCallId) === n);
}

/** The merged view of call `n` (each update's fields over the previous ones). */
const callState = (turn, n, agent) => Object.assign({}, ...callUpdates(turn, n, agent));

/**
 * The frames of a tool call the model names, from shown to running (asked first if `asked`):
 * shown as soon as it is named, the model call's usage (its usage chunk ends the stream), its
 * arguments once complete, the permission request, in progress.
 */
const started = (n, asked) => [
  `tool_call#${n} pending`,
  "update usage_update",
  `tool_call_update#${n}`,
  ...(asked ? [`request_permission#${n}`] : []),
  `tool_call_update#${n} in_progress`,
];

/** `used` of each usage_update of the turn, and their `size`s. */
function usageOf(turn) {
  const updates = turn.frames.map((f) => f.msg.params?.update).filter((u) => u?.sessionUpdate === "usage_update");
  return { used: updates.map((u) => u.used), sizes: [...new Set(updates.map((u) => u.size))] };
}

/** What the model server reported for requests `from..to` (exclusive): `used` per call, the summed usage. */
function serverUsage(from, to) {
  const used = [];
  const sum = { totalTokens: 0, inputTokens: 0, outputTokens: 0 };
  for (let n = from; n < to; n++) {
    const u = chunksOf(say(""), MODEL, n).at(-1).usage;
    used.push(u.total_tokens);
    sum.totalTokens += u.total_tokens;
    sum.inputTokens += u.prompt_tokens;
    sum.outputTokens += u.completion_tokens;
  }
  return { used, sum };
}

/** The model's request that must follow a tool result: fails the scenario's model otherwise. */
function onlyResult(messages, name) {
  const results = toolResults(messages);
  if (results.length !== 1 || results[0].name !== name) {
    throw new Error(`expected the result of one \`${name}\` call last, got ${JSON.stringify(messages.at(-1))}`);
  }
  return results[0];
}

// ---------------------------------------------------------------------------
// Scenarios

scenario(
  "read_edit_run",
  "a task that reads greet.sh, edits it by search/replace and runs it, each permission answered allow_once: the exact frame sequence (tool calls shown when named, permission for edit and run only, completed with text, diff, terminal), the file changed on disk, the tool results (file text, command output) back to the model, the tools offered with their schemas",
  async ({ fx, c }) => {
    writeFileSync(fx.file(GREET), GREET_TEXT);
    const edited = 'echo "hello, ACP"\n';
    await fx.startModel((messages) => {
      if (messages.at(-1).role === "user") return call("read", { path: GREET }, "Let me look.");
      const last = toolResults(messages)[0];
      switch (last?.name) {
        case "read":
          return call("edit", { path: GREET, old: "world", new: "ACP" });
        case "edit":
          return call("run", { command: `sh ${GREET}` });
        case "run":
          return say(" It now prints hello, ACP.");
        default:
          throw new Error(`no reply to ${JSON.stringify(messages.at(-1))}`);
      }
    });
    const prompt = "Make greet.sh greet ACP and run it.";
    await fx.run("coder", async (ctx, agent) => {
      const { sessionId } = await fx.open(ctx);
      const res = await fx.prompt(ctx, sessionId, prompt);
      c.equal(res.stopReason, "end_turn", "stopReason");
      const turn = turnOf(agent, sessionId, prompt);
      c.equal(
        turn.labels.filter((l) => l !== "request terminal/release"),
        [
          "message",
          ...started(1, false),
          "request fs/read_text_file",
          "tool_call_update#1 completed [text]",
          ...started(2, true),
          "request fs/read_text_file",
          "request fs/write_text_file",
          "tool_call_update#2 completed [diff]",
          ...started(3, true),
          "request terminal/create",
          "tool_call_update#3 [terminal]",
          "request terminal/wait_for_exit",
          "request terminal/output",
          "tool_call_update#3 completed [terminal,text]",
          "message",
          "update usage_update",
          "answer end_turn",
        ],
        "exact frame sequence of the turn (terminal/release left out: it is sent when the tool's terminal is dropped, on its own task)",
      );
      await agent.tap.waitFor((f) => f.dir === "agent" && f.msg?.method === "terminal/release", "terminal/release", WAIT_MS);
      const usage = serverUsage(0, 4);
      c.equal(usageOf(turn), { used: usage.used, sizes: [CONTEXT_WINDOW] }, "usage_update after each model call [used, size]");
      c.equal(res.usage, usage.sum, "the prompt answer's usage: the sum of the model calls' usage chunks");
      c.equal(messageText(turn), "Let me look. It now prints hello, ACP.", "the model's text, streamed");
      const file = fx.file(GREET);
      const [read, edit, run] = [1, 2, 3].map((n) => callState(turn, n, agent));
      c.equal([read.title, read.kind, read.rawInput, read.status], [`Read ${GREET}`, "read", { path: GREET, line: null, limit: null }, "completed"], "read call [title, kind, rawInput, status]");
      c.equal([edit.title, edit.kind, edit.status], [`Edit ${GREET}`, "edit", "completed"], "edit call [title, kind, status]");
      c.equal(edit.content, [{ type: "diff", path: file, oldText: GREET_TEXT, newText: edited }], "edit call content: the diff");
      c.equal([run.title, run.kind, run.status], [`Run sh ${GREET}`, "execute", "completed"], "run call [title, kind, status]");
      c.equal(
        fx.permissionCalls.map((p) => [toolCallNumber(agent, p.toolCall.toolCallId), p.options.map((o) => o.kind)]),
        [2, 3].map((n) => [n, ["allow_once", "allow_always", "reject_once", "reject_always"]]),
        "permission requests [call, option kinds]",
      );
      c.equal(readFileSync(file, "utf8"), edited, `${GREET} on disk after the edit`);
      c.equal(fx.fsCalls, [["fs/read_text_file", file], ["fs/read_text_file", file], ["fs/write_text_file", file]], "fs requests [method, path]");
      const [term] = fx.terminals.values();
      c.equal([term?.params.command, term?.params.args, term?.params.cwd, term?.released], ["sh", ["-c", `sh ${GREET}`], fx.project, true], "terminal [command, args, cwd, released]");
    });

    // What coder sent the model.
    const requests = fx.model.requests;
    c.equal(requests.length, 4, "model requests");
    const first = requests[0]?.body;
    c.equal(first?.messages.map((m) => m.role), ["system", "user"], "request #1: message roles");
    c.check(/^You are coder/.test(first?.messages[0].content), `request #1: coder's system prompt first: ${JSON.stringify(first?.messages[0].content)}`);
    c.equal(first?.messages[1], { role: "user", content: prompt }, "request #1: the user's prompt");
    c.equal(first?.stream_options, { include_usage: true }, "request #1: stream_options");
    const tools = first?.tools ?? [];
    c.equal(tools.map((t) => [t.type, t.function.name]).sort(), TOOLS.map((n) => ["function", n]), "request #1: the tools offered [type, name]");
    const schema = (name) => tools.find((t) => t.function.name === name)?.function.parameters;
    c.equal([schema("edit")?.type, Object.keys(schema("edit")?.properties ?? {}).sort(), [...(schema("edit")?.required ?? [])].sort()], ["object", ["new", "old", "path"], ["new", "old", "path"]], "edit's parameters [type, properties, required]");
    c.equal([Object.keys(schema("read")?.properties ?? {}).sort(), schema("read")?.required], [["limit", "line", "path"], ["path"]], "read's parameters [properties, required]");
    c.check(tools.every((t) => typeof t.function.description === "string" && t.function.description.length > 0), "every tool has a description");
    const result = (n, name) => {
      try {
        return onlyResult(requests[n]?.body.messages ?? [], name);
      } catch (e) {
        c.check(false, `request #${n + 1}: ${e.message}`);
        return { content: "" };
      }
    };
    c.equal(requests[1]?.body.messages.at(-2)?.tool_calls?.map((t) => [t.function.name, JSON.parse(t.function.arguments)]), [["read", { path: GREET }]], "request #2: the assistant's read call");
    c.equal(requests[1]?.body.messages.at(-2)?.content, "Let me look.", "request #2: the assistant's text with its call");
    c.equal(result(1, "read").content, GREET_TEXT, "request #2: the read result is the file's text");
    c.check(/./.test(result(2, "edit").content) && !result(2, "edit").content.startsWith("Error"), `request #3: the edit result is no error: ${JSON.stringify(result(2, "edit").content)}`);
    const ran = result(3, "run").content;
    c.check(ran.includes("hello, ACP") && ran.includes("exit code 0"), `request #4: the run result carries the command's output and exit code: ${JSON.stringify(ran)}`);
    fx.finish();
  },
);

scenario(
  "ask_mode_refuses_edit",
  "session/set_mode ask, then the model calls edit: the call fails before any permission request or write, the file is unchanged, the refusal (naming ask mode) goes back to the model as an error result, and its answer ends the turn",
  async ({ fx, c }) => {
    writeFileSync(fx.file(GREET), GREET_TEXT);
    await fx.startModel((messages) => {
      if (messages.at(-1).role === "user") return call("edit", { path: GREET, old: "world", new: "ACP" });
      onlyResult(messages, "edit");
      return say("I can only answer questions in ask mode.");
    });
    const prompt = "Make greet.sh greet ACP.";
    await fx.run("coder", async (ctx, agent) => {
      const created = await fx.open(ctx);
      const { sessionId } = created;
      c.equal(
        [created.modes?.currentModeId, created.modes?.availableModes.map((m) => m.id)],
        ["code", ["ask", "code"]],
        "session/new modes [currentModeId, availableModes ids]",
      );
      await ctx.request("session/set_mode", { sessionId, modeId: "ask" });
      const res = await fx.prompt(ctx, sessionId, prompt);
      c.equal(res.stopReason, "end_turn", "stopReason");
      const turn = turnOf(agent, sessionId, prompt);
      c.equal(
        turn.labels,
        ["tool_call#1 pending", "update usage_update", "tool_call_update#1", "tool_call_update#1 failed [text]", "message", "update usage_update", "answer end_turn"],
        "exact frame sequence of the turn (no permission request, no in_progress, no fs request)",
      );
      c.equal(usageOf(turn), { used: serverUsage(0, 2).used, sizes: [CONTEXT_WINDOW] }, "usage_update after each model call [used, size]");
      const edit = callState(turn, 1, agent);
      c.equal([edit.title, edit.kind, edit.status], [`Edit ${GREET}`, "edit", "failed"], "edit call [title, kind, status]");
      const shown = edit.content?.[0]?.content?.text ?? "";
      c.check(shown.includes("ask mode"), `the failed call tells the user about ask mode: ${JSON.stringify(shown)}`);
      c.equal(messageText(turn), "I can only answer questions in ask mode.", "the model's answer");
    });
    c.equal(fx.permissionCalls.length, 0, "permission requests");
    c.equal(fx.fsCalls, [], "fs requests");
    c.equal(readFileSync(fx.file(GREET), "utf8"), GREET_TEXT, `${GREET} on disk is unchanged`);
    const requests = fx.model.requests;
    c.equal(requests.length, 2, "model requests");
    const refusal = toolResults(requests[1]?.body.messages ?? [])[0]?.content ?? "";
    c.check(refusal.startsWith("Error") && refusal.includes("refused in ask mode"), `request #2: the refusal reaches the model as an error result: ${JSON.stringify(refusal)}`);
    fx.finish();
  },
);

scenario(
  "restart_resumes_history",
  "coder A on a session store in the temp dir: one turn (a read, then an answer); A is killed (SIGKILL) right after its answer; coder B on the same store: session/load replays the turn as A sent it, the next prompt's model request carries the whole first turn (prompt, tool call, tool result, answer) before the new prompt",
  async ({ fx, c }) => {
    writeFileSync(fx.file(GREET), GREET_TEXT);
    const first = "What does greet.sh print?";
    const second = "And who does it greet?";
    await fx.startModel((messages, _body, n) => {
      if (n === 0) return call("read", { path: GREET });
      if (n === 1) return say(`It prints "hello, world". ${onlyResult(messages, "read").content.length} bytes.`);
      if (messages.at(-1).content === second) return say("The world.");
      throw new Error(`unexpected request #${n + 1}`);
    });
    let sessionId;
    let live; // the session/update params A sent during its turn
    await fx.run("coder A", async (ctx, agent) => {
      ({ sessionId } = await fx.open(ctx));
      const res = await fx.prompt(ctx, sessionId, first);
      c.equal(res.stopReason, "end_turn", "A: stopReason");
      const turn = turnOf(agent, sessionId, first);
      c.equal(messageText(turn), `It prints "hello, world". ${GREET_TEXT.length} bytes.`, "A: the model's answer");
      live = turn.frames.filter((f) => f.msg.method === "session/update").map((f) => f.msg.params);
      agent.killed = true;
      agent.child.kill("SIGKILL");
      await agent.exit;
    });
    c.must(fx.model.requests.length === 2, `A made ${fx.model.requests.length} model requests, not 2`);

    await fx.run("coder B", async (ctx, agent) => {
      const init = await fx.initialize(ctx);
      c.equal(init.agentCapabilities?.loadSession, true, "B: initialize: agentCapabilities.loadSession");
      await withTimeout(ctx.request("session/load", { sessionId, cwd: fx.project, mcpServers: [] }), WAIT_MS, "B: session/load");
      // The replay: the prompt, then every update A sent in its turn (tool call, usage, answer).
      const load = agent.tap.responseTo("session/load");
      const replayed = agent.tap
        .agentFrames()
        .filter((f) => f.msg.method === "session/update" && f.seq < load.seq)
        .map((f) => f.msg.params);
      // A load tells the session's slash commands before its answer (not history).
      const commands = replayed.filter((p) => p.update.sessionUpdate === "available_commands_update");
      c.equal(commands.map((p) => p.update.availableCommands.map((a) => a.name)), [["compact"]], "B: session/load tells coder's commands");
      const [prompt, ...rest] = replayed.filter((p) => p.update.sessionUpdate !== "available_commands_update");
      c.equal([prompt?.update.sessionUpdate, prompt?.update.content], ["user_message_chunk", { type: "text", text: first }], "B: session/load replays the first prompt [sessionUpdate, content]");
      c.equal(rest, live, "B: session/load replays the updates A sent in its turn, unchanged");
      const res = await fx.prompt(ctx, sessionId, second);
      c.equal(res.stopReason, "end_turn", "B: stopReason");
      c.equal(messageText(turnOf(agent, sessionId, second)), "The world.", "B: the model's answer");
    });

    const requests = fx.model.requests;
    c.equal(requests.length, 3, "model requests (2 from A, 1 from B)");
    const before = requests[1]?.body.messages ?? [];
    const after = requests[2]?.body.messages ?? [];
    c.equal(before.map((m) => m.role), ["system", "user", "assistant", "tool"], "A's second request: message roles");
    c.equal(
      after,
      [...before, { role: "assistant", content: `It prints "hello, world". ${GREET_TEXT.length} bytes.` }, { role: "user", content: second }],
      "B's request: A's whole conversation (system, prompt, read call, its result, answer), then the new prompt",
    );
    c.equal(toolResults(before)[0]?.content, GREET_TEXT, "the read result in the history is the file's text");
    fx.finish();
  },
);

scenario(
  "editor_reroutes_the_model",
  "providers/* (unstable): initialize advertises agentCapabilities.providers; providers/list shows the endpoint `main` on coder's own server; providers/set points it at the editor's gateway with the editor's headers; the next turn's model request goes there, carrying those headers (its Authorization replacing coder's key) and nothing to coder's server; disabling the required `main` is invalid params",
  async ({ fx, c }) => {
    await fx.startModel(() => {
      throw new Error("coder's own server must not be called once the editor rerouted the model");
    });
    const gateway = await new ModelServer(() => say("Through the gateway.")).start();
    const GATEWAY_TOKEN = "gw-token-interop-7d2a";
    try {
      await fx.run("coder", async (ctx) => {
        const init = await fx.initialize(ctx);
        c.equal(init.agentCapabilities?.providers, {}, "initialize: agentCapabilities.providers");
        const current = (list) => list.providers.map((p) => [p.providerId, p.required, p.supported, p.current]);
        const before = await ctx.request("providers/list", {});
        c.equal(current(before), [["main", true, ["openai", "anthropic"], { apiType: "openai", baseUrl: fx.model.baseUrl }]], "providers/list before [id, required, supported, current]");
        const headers = { Authorization: `Bearer ${GATEWAY_TOKEN}`, "X-Request-Source": "acp-interop" };
        c.equal(await ctx.request("providers/set", { providerId: "main", apiType: "openai", baseUrl: gateway.baseUrl, headers }), {}, "providers/set answer");
        const after = await ctx.request("providers/list", {});
        c.equal(current(after), [["main", true, ["openai", "anthropic"], { apiType: "openai", baseUrl: gateway.baseUrl }]], "providers/list after [id, required, supported, current]");
        c.check(!JSON.stringify(after).includes(GATEWAY_TOKEN), "providers/list never shows the headers");
        let refused;
        try {
          await ctx.request("providers/disable", { providerId: "main" });
        } catch (e) {
          refused = e;
        }
        c.equal(refused?.code, -32602, "providers/disable of the required `main`: error code");
        const { sessionId } = await ctx.request("session/new", { cwd: fx.project, mcpServers: [] });
        const res = await fx.prompt(ctx, sessionId, "Hello?");
        c.equal(res.stopReason, "end_turn", "stopReason");
      });
      c.equal(fx.model.requests.length, 0, "requests to coder's own server after the reroute");
      c.equal(gateway.problems, [], "the gateway saw nothing odd");
      const sent = gateway.requests.map((r) => [r.body.model, r.headers.authorization, r.headers["x-request-source"]]);
      c.equal(sent, [[MODEL, `Bearer ${GATEWAY_TOKEN}`, "acp-interop"]], "the gateway's requests [model, Authorization, X-Request-Source]");
    } finally {
      gateway.close();
    }
    fx.finish();
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "coder.mjs",
  targetArg: "coder-binary",
  title: "ACP coder interop (a model server in process)",
  targetLabel: "coder",
  fixture: (binary, validator, checks) => new Fixture(binary, validator, checks),
  multiline: true,
  rawLimit: 600,
  describeError: (e) => describeError(e, { errorObjects: false }),
  // coder is built with the unstable features it uses (token usage, providers/*): its frames
  // are validated against the SDK's unstable schema (the stable one plus those).
  validator: () => new FrameValidator({ unstable: true }),
  // ACP_INTEROP_TRANSCRIPT=1 prints the frame transcript of passing scenarios as well.
  transcriptOnPass: Boolean(process.env.ACP_INTEROP_TRANSCRIPT),
});

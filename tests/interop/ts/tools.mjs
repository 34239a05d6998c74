#!/usr/bin/env node
// Tool-call interop: drives the `scribe`, `model` and `shell` example agents with the
// official TypeScript client SDK (@agentclientprotocol/sdk) and checks the tool-call
// lifecycle that `#[acp::tool]` generates (acp-core/src/tools.rs, `expand::run_tool`):
//
//   tool_call pending -> [session/request_permission] -> tool_call_update in_progress
//     -> tool_call_update completed (with content) | failed
//
// Each scenario asserts the exact ordered sequence of the agent's frames for one prompt turn
// on the raw tap (lib/agent.mjs), up to and including the prompt answer; every agent frame is
// validated against the SDK's JSON Schema (lib/validator.mjs).
//
// usage: node tools.mjs <examples-dir> [scenario ...]
//        node tools.mjs --list
//
// <examples-dir> holds the example binaries (cargo puts them in <target>/debug/examples).
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { spawnAgent } from "./lib/agent.mjs";
import { ScenarioFailure, WAIT_MS, describeError, runCli, scenario, sleep, withTimeout } from "./lib/harness.mjs";
import { toolCallNumber, turnOf as sharedTurnOf } from "./lib/turns.mjs";

/** How long the shell agent gets to release (or kill) its terminal after a cancel. */
const RELEASE_WITHIN_MS = 5_000;
const EXE = process.platform === "win32" ? ".exe" : "";

// ---------------------------------------------------------------------------
// Client fixture: one workdir (served as the client's file system) + agent processes.

const FS_ONLY = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };
const FS_AND_TERMINAL = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };

/** The permission options every `#[acp::tool(permission)]` call offers (optionId = kind). */
const PERMISSION_KINDS = ["allow_once", "allow_always", "reject_once", "reject_always"];

class Fixture {
  constructor(examplesDir, validator, checks) {
    this.examplesDir = examplesDir;
    this.validator = validator;
    this.checks = checks;
    this.workdir = mkdtempSync(join(tmpdir(), "acp-interop-tools-"));
    this.permissionPolicy = "allow_once"; // the option kind the client selects
    this.refuseTerminals = false; // terminal/create throws, as acpx does by default
    this.permissionCalls = []; // params of session/request_permission
    this.fsCalls = []; // {method, params}
    this.terminalCalls = []; // {method, params}
    this.terminals = new Map(); // terminalId -> {params, exit: Promise, finish(status), killed, released}
    this.nextTerminal = 1;
    this.agents = [];
  }

  binary(name) {
    return join(this.examplesDir, `${name}${EXE}`);
  }

  /** Fails the scenario for a path the agent may not touch; the fs is the workdir. */
  guardPath(method, path) {
    const rel = typeof path === "string" && isAbsolute(path) ? relative(this.workdir, path) : "..";
    if (rel.startsWith("..") || isAbsolute(rel)) {
      this.checks.check(false, `${method} for a path outside the client's workdir ${this.workdir}: ${JSON.stringify(path)}`);
      throw acp.RequestError.invalidParams({ path }, "path outside the workspace");
    }
  }

  terminal(method, params) {
    this.terminalCalls.push({ method, params });
    const t = this.terminals.get(params.terminalId);
    if (!t) {
      this.checks.check(false, `${method} for unknown terminal ${JSON.stringify(params.terminalId)}`);
      throw acp.RequestError.resourceNotFound(params.terminalId);
    }
    return t;
  }

  client() {
    const app = acp.client({ name: "acp-interop-tools" });
    app.onNotification("session/update", () => {});
    app.onRequest("fs/read_text_file", ({ params }) => {
      this.fsCalls.push({ method: "fs/read_text_file", params });
      this.guardPath("fs/read_text_file", params.path);
      if (!existsSync(params.path)) throw acp.RequestError.resourceNotFound(params.path);
      return { content: readFileSync(params.path, "utf8") };
    });
    app.onRequest("fs/write_text_file", ({ params }) => {
      this.fsCalls.push({ method: "fs/write_text_file", params });
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
    // A terminal whose command never exits by itself: wait_for_exit resolves only once the
    // agent kills or releases it.
    app.onRequest("terminal/create", ({ params }) => {
      this.terminalCalls.push({ method: "terminal/create", params });
      // acpx's refusal: a plain exception, which the SDK answers -32603 with data.details.
      if (this.refuseTerminals) throw new Error("Permission denied for terminal/create");
      const terminalId = `term-${this.nextTerminal++}`;
      let finish;
      const exit = new Promise((resolve) => (finish = resolve));
      this.terminals.set(terminalId, { params, exit, finish, killed: false, released: false, waitEnded: undefined });
      return { terminalId };
    });
    app.onRequest("terminal/wait_for_exit", ({ params, signal }) => {
      const t = this.terminal("terminal/wait_for_exit", params);
      return new Promise((resolve, reject) => {
        t.exit.then((status) => {
          t.waitEnded ??= "resolved after kill/release";
          resolve(status);
        });
        signal.addEventListener("abort", () => {
          t.waitEnded ??= "aborted by the agent ($/cancel_request or connection close)";
          reject(signal.reason);
        });
      });
    });
    app.onRequest("terminal/output", ({ params }) => {
      const t = this.terminal("terminal/output", params);
      return { output: "", truncated: false, exitStatus: t.status ?? null };
    });
    app.onRequest("terminal/kill", ({ params }) => {
      const t = this.terminal("terminal/kill", params);
      t.killed = true;
      t.status = { exitCode: null, signal: "SIGKILL" };
      t.finish(t.status);
      return {};
    });
    app.onRequest("terminal/release", ({ params }) => {
      const t = this.terminal("terminal/release", params);
      t.released = true;
      t.status ??= { exitCode: null, signal: "SIGKILL" };
      t.finish(t.status);
      return {};
    });
    return app;
  }

  /**
   * Spawn the example `name` and run `body(ctx, agent)` inside connectWith. Afterwards the
   * agent's stdin is closed and it must exit with status 0.
   */
  async run(name, body) {
    const binary = this.binary(name);
    this.checks.must(existsSync(binary), `example binary not found: ${binary} (cargo build --example ${name})`);
    const agent = spawnAgent(binary, this.validator);
    agent.name = name;
    this.agents.push(agent);
    try {
      return await this.client().connectWith(agent.stream, (ctx) => body(ctx, agent));
    } finally {
      const { code, signal, error } = await agent.shutdown(10_000);
      this.checks.check(
        code === 0,
        `${name}: agent process should exit with status 0 after stdin EOF, got code=${code} signal=${signal}${error ? " error=" + error : ""}`,
      );
    }
  }

  async initialize(ctx, clientCapabilities) {
    const params = { protocolVersion: acp.PROTOCOL_VERSION, clientInfo: { name: "acp-interop-tools", version: "0.0.0" } };
    // `null` means: leave clientCapabilities out of the request entirely.
    if (clientCapabilities !== null) params.clientCapabilities = clientCapabilities;
    const res = await ctx.request("initialize", params);
    this.checks.equal(res.protocolVersion, acp.PROTOCOL_VERSION, "initialize.protocolVersion");
    const created = await ctx.request("session/new", { cwd: this.workdir, mcpServers: [] });
    this.checks.must(typeof created.sessionId === "string" && created.sessionId.length > 0, "session/new returned a sessionId");
    return created.sessionId;
  }

  prompt(ctx, sessionId, text) {
    return ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  }

  cleanup() {
    rmSync(this.workdir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// One prompt turn on the raw tap, as a readable sequence.

const turnOf = (agent, sessionId, promptText) => sharedTurnOf(agent, sessionId, promptText, labelOf);


function contentKinds(content) {
  return content.map((c) => (c.type === "content" ? c.content?.type : c.type)).join(",");
}

function labelOf(agent, f) {
  const m = f.msg;
  if (m.method === "session/update") {
    const u = m.params.update;
    if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
      // A tool_call without `status` is pending: the spec gives `pending` as its default.
      const status = u.status ?? (u.sessionUpdate === "tool_call" ? "pending" : undefined);
      const content = Array.isArray(u.content) && u.content.length ? ` [${contentKinds(u.content)}]` : "";
      return `${u.sessionUpdate}#${toolCallNumber(agent, u.toolCallId)}${status ? " " + status : ""}${content}`;
    }
    if (u.sessionUpdate === "agent_message_chunk") return "message";
    return `update ${u.sessionUpdate}`;
  }
  if (m.method === "session/request_permission") return `request_permission#${toolCallNumber(agent, m.params?.toolCall?.toolCallId)}`;
  if ("method" in m) return `${"id" in m ? "request" : "notification"} ${m.method}`;
  if ("error" in m) return `answer error ${m.error?.code}`;
  return `answer ${m.result?.stopReason}`;
}

function updatesOf(turn, kind) {
  return turn.frames.filter((f) => f.msg.method === "session/update" && f.msg.params.update.sessionUpdate === kind).map((f) => f.msg.params.update);
}

function messageText(turn) {
  return updatesOf(turn, "agent_message_chunk")
    .map((u) => (u.content?.type === "text" ? u.content.text : `[${u.content?.type}]`))
    .join("");
}

/** The tool_call / tool_call_update params of one call, in order. */
function callUpdates(turn, n, agent) {
  return turn.frames
    .filter((f) => f.msg.method === "session/update" && f.msg.params.update.toolCallId !== undefined)
    .map((f) => f.msg.params.update)
    .filter((u) => toolCallNumber(agent, u.toolCallId) === n);
}

const textContent = (text) => [{ type: "content", content: { type: "text", text } }];

/** Checks the permission request for tool call `u` (a tool_call update). */
function checkPermissionRequest(c, fx, agent, turn, call, what) {
  const req = turn.frames.find((f) => f.msg.method === "session/request_permission");
  if (!c.check(req, `${what}: a session/request_permission frame`)) return;
  const p = req.msg.params;
  c.equal(p.toolCall?.toolCallId, call.toolCallId, `${what}: request_permission.toolCall.toolCallId`);
  c.equal(
    (p.options ?? []).map((o) => [o.optionId, o.kind]),
    PERMISSION_KINDS.map((k) => [k, k]),
    `${what}: permission options [optionId, kind]`,
  );
  // The answer to the permission request precedes the in_progress update.
  const answer = agent.tap.clientFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === JSON.stringify(req.msg.id));
  const progress = turn.frames.find((f) => f.msg.params?.update?.toolCallId === call.toolCallId && f.msg.params.update.status === "in_progress");
  if (progress) c.check(answer && answer.seq < progress.seq, `${what}: in_progress is sent only after the client answered the permission request`);
  return p;
}

// ---------------------------------------------------------------------------
// Scenarios

const NOTES = "NOTES.md";

/** The frames of a scribe turn whose write call is allowed (with or without asking). */
function scribeAllowedSequence(first, asked) {
  const read = first;
  const write = first + 1;
  return [
    `tool_call#${read} pending`,
    `tool_call_update#${read} in_progress`,
    "request fs/read_text_file",
    `tool_call_update#${read} completed [text]`,
    `tool_call#${write} pending`,
    ...(asked ? [`request_permission#${write}`] : []),
    `tool_call_update#${write} in_progress`,
    "request fs/read_text_file",
    "request fs/write_text_file",
    `tool_call_update#${write} completed [diff]`,
    "message",
    "answer end_turn",
  ];
}

/** Checks the read and write calls of a scribe turn against the notes before/after it. */
function checkScribeCalls(c, fx, agent, turn, first, before, after, what) {
  const notes = join(fx.workdir, NOTES);
  const [readCall, ...readRest] = callUpdates(turn, first, agent);
  if (readCall) {
    c.equal(
      [readCall.sessionUpdate, readCall.title, readCall.kind, readCall.rawInput, readCall.locations],
      ["tool_call", `Read ${notes}`, "read", { path: notes }, [{ path: notes }]],
      `${what}: read tool_call [sessionUpdate, title, kind, rawInput, locations]`,
    );
    // A missing file reads as empty.
    c.equal(readRest.at(-1)?.content, textContent(before ?? ""), `${what}: content of the completed read call`);
  }
  const [writeCall, ...writeRest] = callUpdates(turn, first + 1, agent);
  if (writeCall && after !== undefined) {
    c.equal(
      [writeCall.sessionUpdate, writeCall.title, writeCall.kind, writeCall.rawInput, writeCall.locations],
      ["tool_call", `Write ${notes}`, "edit", { path: notes, content: after }, [{ path: notes }]],
      `${what}: write tool_call [sessionUpdate, title, kind, rawInput, locations]`,
    );
    const done = writeRest.at(-1);
    const diff = done?.content?.[0];
    c.equal(done?.content?.length, 1, `${what}: content items of the completed write call`);
    c.equal([diff?.type, diff?.path, diff?.newText], ["diff", notes, after], `${what}: diff [type, path, newText]`);
    c.equal(diff?.oldText ?? null, before ?? null, `${what}: diff oldText (null for a new file)`);
    c.equal(readFileSync(notes, "utf8"), diff?.newText, `${what}: ${NOTES} on disk equals the diff's newText`);
  }
  return writeCall;
}

scenario(
  "scribe_allow_once",
  "scribe, permission answered allow_once: read call pending->in_progress->completed, write call pending->request_permission->in_progress->completed with a diff matching the file on disk, 'Noted.', end_turn",
  async ({ fx, c }) => {
    const notes = join(fx.workdir, NOTES);
    const before = "# Notes\n- an earlier line ✓\n";
    const after = `${before}- buy milk\n`;
    writeFileSync(notes, before);
    fx.permissionPolicy = "allow_once";
    await fx.run("scribe", async (ctx, agent) => {
      const sid = await fx.initialize(ctx, FS_ONLY);
      const res = await withTimeout(fx.prompt(ctx, sid, "buy milk"), WAIT_MS, "prompt answer");
      c.equal(res.stopReason, "end_turn", "stopReason");
      const turn = turnOf(agent, sid, "buy milk");
      c.equal(turn.labels, scribeAllowedSequence(1, true), "exact frame sequence of the turn");
      c.equal(messageText(turn), "Noted.", "agent message");
      const write = checkScribeCalls(c, fx, agent, turn, 1, before, after, "turn");
      if (write) checkPermissionRequest(c, fx, agent, turn, write, "turn");
      c.equal(
        fx.fsCalls.map((x) => [x.method, x.params.path, x.params.sessionId]),
        [
          ["fs/read_text_file", notes, sid],
          ["fs/read_text_file", notes, sid],
          ["fs/write_text_file", notes, sid],
        ],
        "fs requests [method, path, sessionId]",
      );
      c.equal(readFileSync(notes, "utf8"), after, `${NOTES} on disk`);
    });
  },
);

scenario(
  "scribe_allow_always",
  "scribe, allow_always on the first prompt; the second prompt's write runs without a session/request_permission; the file has both lines",
  async ({ fx, c }) => {
    const notes = join(fx.workdir, NOTES);
    fx.permissionPolicy = "allow_always";
    await fx.run("scribe", async (ctx, agent) => {
      const sid = await fx.initialize(ctx, FS_ONLY);
      const res1 = await withTimeout(fx.prompt(ctx, sid, "first"), WAIT_MS, "first prompt answer");
      c.equal(res1.stopReason, "end_turn", "first stopReason");
      // A second question would be a bug: answer it with reject so it shows.
      fx.permissionPolicy = "reject_once";
      const res2 = await withTimeout(fx.prompt(ctx, sid, "second"), WAIT_MS, "second prompt answer");
      c.equal(res2.stopReason, "end_turn", "second stopReason");

      const t1 = turnOf(agent, sid, "first");
      c.equal(t1.labels, scribeAllowedSequence(1, true), "exact frame sequence of the first turn");
      c.equal(messageText(t1), "Noted.", "first agent message");
      const w1 = checkScribeCalls(c, fx, agent, t1, 1, undefined, undefined, "first turn");
      if (w1) checkPermissionRequest(c, fx, agent, t1, w1, "first turn");
      const d1 = callUpdates(t1, 2, agent).at(-1)?.content?.[0];
      c.equal([d1?.type, d1?.oldText ?? null, d1?.newText], ["diff", null, "- first\n"], "first turn diff [type, oldText, newText] (new file)");

      const t2 = turnOf(agent, sid, "second");
      c.equal(t2.labels, scribeAllowedSequence(3, false), "exact frame sequence of the second turn (no request_permission)");
      c.equal(messageText(t2), "Noted.", "second agent message");
      checkScribeCalls(c, fx, agent, t2, 3, "- first\n", "- first\n- second\n", "second turn");

      c.equal(fx.permissionCalls.length, 1, "session/request_permission calls over both turns");
      c.equal(agent.tap.agentRequests("session/request_permission").length, 1, "session/request_permission frames on the tap");
      c.equal(readFileSync(notes, "utf8"), "- first\n- second\n", `${NOTES} on disk`);
    });
  },
);

scenario(
  "scribe_reject_once",
  "scribe, reject_once: read call completes, write call pending->request_permission->failed, no fs/write_text_file, 'Not noted: you said no.', end_turn",
  async ({ fx, c }) => {
    const notes = join(fx.workdir, NOTES);
    const before = "- keep me\n";
    writeFileSync(notes, before);
    fx.permissionPolicy = "reject_once";
    await fx.run("scribe", async (ctx, agent) => {
      const sid = await fx.initialize(ctx, FS_ONLY);
      const res = await withTimeout(fx.prompt(ctx, sid, "do not write"), WAIT_MS, "prompt answer");
      c.equal(res.stopReason, "end_turn", "stopReason");
      const turn = turnOf(agent, sid, "do not write");
      c.equal(
        turn.labels,
        [
          "tool_call#1 pending",
          "tool_call_update#1 in_progress",
          "request fs/read_text_file",
          "tool_call_update#1 completed [text]",
          "tool_call#2 pending",
          "request_permission#2",
          "tool_call_update#2 failed [text]",
          "message",
          "answer end_turn",
        ],
        "exact frame sequence of the turn",
      );
      c.equal(messageText(turn), "Not noted: you said no.", "agent message");
      const write = checkScribeCalls(c, fx, agent, turn, 1, before, undefined, "turn");
      if (write) checkPermissionRequest(c, fx, agent, turn, write, "turn");
      const failed = callUpdates(turn, 2, agent).at(-1);
      c.note(`failed write call content: ${JSON.stringify(failed?.content)}`);
      c.equal(agent.tap.agentRequests("fs/write_text_file").length, 0, "fs/write_text_file requests");
      c.equal(fx.fsCalls.map((x) => x.method), ["fs/read_text_file"], "fs requests");
      c.equal(readFileSync(notes, "utf8"), before, `${NOTES} on disk is unchanged`);
    });
  },
);

scenario(
  "model_bad_arguments",
  "model, prompt 'bad': read_file called by name with invalid arguments -> tool_call pending (when named) -> its arguments -> failed (naming `path`); message 'The tool failed: …'; end_turn",
  async ({ fx, c }) => {
    await fx.run("model", async (ctx, agent) => {
      const sid = await fx.initialize(ctx, FS_ONLY);
      const res = await withTimeout(fx.prompt(ctx, sid, "bad"), WAIT_MS, "prompt answer");
      c.equal(res.stopReason, "end_turn", "stopReason");
      const turn = turnOf(agent, sid, "bad");
      // Shown as soon as the model names the tool (titled by it), then given its arguments.
      c.equal(turn.labels, ["tool_call#1 pending", "tool_call_update#1", "tool_call_update#1 failed [text]", "message", "answer end_turn"], "exact frame sequence of the turn");
      const [shown, call, failed] = callUpdates(turn, 1, agent);
      if (shown) c.equal([shown.title, shown.kind], ["Read …", "read"], "tool_call [title, kind] when named");
      if (call) c.equal([call.title, call.kind, call.rawInput], ["Read 42", "read", { path: 42 }], "tool_call_update [title, kind, rawInput]");
      const problem = failed?.content?.[0]?.content?.text ?? "";
      c.check(problem.includes("`path`"), `the failed call's content names \`path\`: ${JSON.stringify(problem)}`);
      const text = messageText(turn);
      c.check(text.startsWith("The tool failed:"), `message starts with "The tool failed:": ${JSON.stringify(text)}`);
      c.check(text.includes("`path`"), `message names \`path\`: ${JSON.stringify(text)}`);
      // The model is handed the error's Display (`e.to_string()` in examples/model.rs), which may
      // prefix the problem the client was shown; the problem itself must reach the model.
      c.check(problem.length > 0 && text.endsWith(problem), `message ends with the failed call's content ${JSON.stringify(problem)}: ${JSON.stringify(text)}`);
      c.note(`message: ${JSON.stringify(text)}`);
      c.equal(fx.fsCalls.length, 0, "fs requests");
    });
  },
);

scenario(
  "model_read_by_name",
  "model, prompt 'read <file>': read_file called by name -> pending (when named) -> its arguments -> in_progress -> fs/read_text_file -> completed with the file text; message 'Done. The tool returned:\\n<text>'; end_turn",
  async ({ fx, c }) => {
    const file = join(fx.workdir, "poem.txt");
    const text = "Roses are red,\n  violets are blue ✓\n\tlast line without newline";
    writeFileSync(file, text);
    const prompt = `read ${file}`;
    await fx.run("model", async (ctx, agent) => {
      const sid = await fx.initialize(ctx, FS_ONLY);
      const res = await withTimeout(fx.prompt(ctx, sid, prompt), WAIT_MS, "prompt answer");
      c.equal(res.stopReason, "end_turn", "stopReason");
      const turn = turnOf(agent, sid, prompt);
      c.equal(
        turn.labels,
        ["tool_call#1 pending", "tool_call_update#1", "tool_call_update#1 in_progress", "request fs/read_text_file", "tool_call_update#1 completed [text]", "message", "answer end_turn"],
        "exact frame sequence of the turn",
      );
      const updates = callUpdates(turn, 1, agent);
      // Shown as soon as the model names the tool (titled by it), then given its arguments.
      if (updates[0]) c.equal([updates[0].title, updates[0].kind], ["Read …", "read"], "tool_call [title, kind] when named");
      const call = updates[1];
      if (call) {
        c.equal(
          [call.title, call.kind, call.rawInput, call.locations],
          [`Read ${file}`, "read", { path: file }, [{ path: file }]],
          "tool_call_update [title, kind, rawInput, locations]",
        );
      }
      c.equal(updates.at(-1)?.content, textContent(text), "content of the completed call");
      c.equal(messageText(turn), `Done. The tool returned:\n${text}`, "agent message");
      c.equal(fx.fsCalls.map((x) => [x.method, x.params.path, x.params.sessionId]), [["fs/read_text_file", file, sid]], "fs requests");
    });
  },
);

scenario(
  "shell_cancel_releases_terminal",
  "shell with a terminal client, 'sleep 100' allowed; session/cancel once the terminal is embedded -> stopReason cancelled, the call ends failed, no update after the answer, the terminal is released (or killed)",
  async ({ fx, c }) => {
    const command = "sleep 100";
    fx.permissionPolicy = "allow_once";
    await fx.run("shell", async (ctx, agent) => {
      const sid = await fx.initialize(ctx, FS_AND_TERMINAL);
      const promptP = fx.prompt(ctx, sid, command);
      promptP.catch(() => {});
      const isAgent = (f, pred) => f.dir === "agent" && f.msg !== undefined && pred(f.msg);
      const embed = await agent.tap.waitFor(
        (f) =>
          isAgent(
            f,
            (m) =>
              m.method === "session/update" &&
              m.params?.update?.sessionUpdate === "tool_call_update" &&
              (m.params.update.content ?? []).some((x) => x.type === "terminal"),
          ),
        "the tool_call_update embedding the terminal",
        WAIT_MS,
      );
      const terminalId = embed.msg.params.update.content.find((x) => x.type === "terminal").terminalId;
      // The command is running once the agent waits for it (sent right after the embed).
      await agent.tap.waitFor((f) => isAgent(f, (m) => m.method === "terminal/wait_for_exit"), "terminal/wait_for_exit", WAIT_MS);
      await ctx.notify("session/cancel", { sessionId: sid });
      const res = await withTimeout(promptP, WAIT_MS, "prompt answer after session/cancel");
      c.equal(res.stopReason, "cancelled", "stopReason after session/cancel");

      const freed = await agent.tap
        .waitFor(
          (f) => isAgent(f, (m) => (m.method === "terminal/release" || m.method === "terminal/kill") && m.params?.terminalId === terminalId),
          "terminal/release or terminal/kill",
          RELEASE_WITHIN_MS,
        )
        .catch(() => undefined);
      // Give a misbehaving agent time to leak updates, then round-trip a barrier request.
      await sleep(300);
      await ctx.request("session/new", { cwd: fx.workdir, mcpServers: [] });

      const turn = turnOf(agent, sid, command);
      // Releasing the terminal happens when the tool's future is dropped, on its own task:
      // its position relative to the answer is not fixed, so it is checked separately.
      const freeing = (l) => l === "request terminal/release" || l === "request terminal/kill";
      c.equal(
        turn.labels.filter((l) => !freeing(l)),
        [
          "tool_call#1 pending",
          "request_permission#1",
          "tool_call_update#1 in_progress",
          "request terminal/create",
          "tool_call_update#1 [terminal]",
          "request terminal/wait_for_exit",
          // The cancel cascades to the wait the turn was blocked on.
          "notification $/cancel_request",
          // The terminal stays shown, the failure after it.
          "tool_call_update#1 failed [terminal,text]",
          "answer cancelled",
        ],
        "exact frame sequence of the turn (terminal/release and terminal/kill left out)",
      );
      const updates = callUpdates(turn, 1, agent);
      const call = updates[0];
      if (call) c.equal([call.title, call.kind, call.rawInput], ["Run `sleep 100`", "execute", { command }], "tool_call [title, kind, rawInput]");
      if (call) checkPermissionRequest(c, fx, agent, turn, call, "turn");
      const statuses = updates.map((u) => u.status).filter((s) => s !== undefined);
      c.equal(statuses.at(-1), "failed", "last status of the tool call");
      c.note(`failed call content: ${JSON.stringify(updates.at(-1)?.content)}`);
      c.equal(embed.msg.params.update.content, [{ type: "terminal", terminalId }], "content of the embedding tool_call_update");

      const create = fx.terminalCalls.find((x) => x.method === "terminal/create");
      if (c.check(create, "terminal/create was handled")) {
        c.equal(
          [create.params.sessionId, create.params.command, create.params.args, create.params.cwd],
          [sid, "sh", ["-c", command], fx.workdir],
          "terminal/create [sessionId, command, args, cwd]",
        );
      }
      c.check(freed, `terminal/release or terminal/kill for ${terminalId} within ${RELEASE_WITHIN_MS} ms after the answer`);
      if (freed) {
        c.note(`${freed.msg.method} arrived ${freed.seq > turn.answer.seq ? "after" : "before"} the prompt answer`);
      }
      const late = agent.tap.updates(sid).filter((u) => u.seq > turn.answer.seq);
      c.check(late.length === 0, `session/update after the prompt answer: ${late.map((u) => JSON.stringify(u.update)).join(" | ")}`);
      const t = fx.terminals.get(terminalId);
      c.note(
        `client saw for ${terminalId}: ${fx.terminalCalls.map((x) => x.method).join(", ")}; wait_for_exit ${t?.waitEnded ?? "still pending"}`,
      );
      // The withdrawn request is the wait_for_exit, and the SDK aborted its handler.
      const cancels = agent.tap.agentFrames().filter((f) => f.msg.method === "$/cancel_request");
      const wait = agent.tap.agentFrames().find((f) => f.msg.method === "terminal/wait_for_exit");
      c.equal(
        cancels.map((f) => JSON.stringify(f.msg.params?.requestId)),
        [JSON.stringify(wait?.msg.id)],
        "$/cancel_request frames the agent wrote (the wait_for_exit's id)",
      );
      c.equal(fx.permissionCalls.length, 1, "session/request_permission calls");
    });
  },
);

scenario(
  "shell_terminal_refused",
  "shell with a client that advertises a terminal but refuses terminal/create (throws, as acpx does unless terminal commands are approved): the call ends failed, a message tells the user what the editor said, stopReason end_turn (not a -32603 error)",
  async ({ fx, c }) => {
    const command = "git status";
    fx.permissionPolicy = "allow_once";
    fx.refuseTerminals = true;
    await fx.run("shell", async (ctx, agent) => {
      const sid = await fx.initialize(ctx, FS_AND_TERMINAL);
      const res = await withTimeout(fx.prompt(ctx, sid, command), WAIT_MS, "prompt answer");
      c.equal(res.stopReason, "end_turn", "stopReason");
      const turn = turnOf(agent, sid, command);
      c.equal(
        turn.labels,
        [
          "tool_call#1 pending",
          "request_permission#1",
          "tool_call_update#1 in_progress",
          "request terminal/create",
          "tool_call_update#1 failed [text]",
          "message",
          "answer end_turn",
        ],
        "exact frame sequence of the turn",
      );
      const create = agent.tap.clientFrames().find((f) => !("method" in f.msg) && f.msg.error);
      c.equal(
        [create?.msg.error?.code, create?.msg.error?.data?.details],
        [-32603, "Permission denied for terminal/create"],
        "the SDK's answer to terminal/create [code, data.details]",
      );
      const text = messageText(turn);
      c.check(
        text.startsWith("The editor would not run it") && text.includes("Permission denied for terminal/create"),
        `the message tells the user what the editor said: ${JSON.stringify(text)}`,
      );
    });
    c.equal(fx.terminalCalls.map((x) => x.method), ["terminal/create"], "terminal handler invocations on the client");
    c.equal(fx.terminals.size, 0, "terminals created");
  },
);

scenario(
  "shell_without_terminal",
  "shell with a client without the terminal capability (false, and capabilities omitted): a message explains there is no terminal; no tool call; no terminal/* request",
  async ({ fx, c }) => {
    for (const [label, caps] of [
      ["terminal: false", FS_ONLY],
      ["clientCapabilities omitted", null],
    ]) {
      await fx.run("shell", async (ctx, agent) => {
        const sid = await fx.initialize(ctx, caps);
        const res = await withTimeout(fx.prompt(ctx, sid, "ls -la"), WAIT_MS, `[${label}] prompt answer`);
        c.equal(res.stopReason, "end_turn", `[${label}] stopReason`);
        const turn = turnOf(agent, sid, "ls -la");
        c.equal(turn.labels, ["message", "answer end_turn"], `[${label}] exact frame sequence of the turn`);
        const text = messageText(turn);
        c.check(/no `terminal` capability/.test(text), `[${label}] the message says there is no terminal: ${JSON.stringify(text)}`);
        const terminalReqs = agent.tap.agentRequests().filter((f) => f.msg.method.startsWith("terminal/"));
        c.check(terminalReqs.length === 0, `[${label}] terminal requests sent: ${terminalReqs.map((f) => f.raw).join(" | ")}`);
        const calls = agent.tap.updates(sid).filter((u) => u.update.sessionUpdate.startsWith("tool_call"));
        c.check(calls.length === 0, `[${label}] tool call updates sent: ${calls.map((u) => JSON.stringify(u.update)).join(" | ")}`);
      });
    }
    c.equal(fx.terminalCalls.length, 0, "terminal handler invocations on the client");
    c.equal(fx.permissionCalls.length, 0, "permission requests");
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "tools.mjs",
  targetArg: "examples-dir",
  title: "ACP tool-call interop",
  targetLabel: "examples",
  fixture: (examplesDir, validator, checks) => new Fixture(examplesDir, validator, checks),
  multiline: true,
  rawLimit: 600,
  // An unexpected exception other than an SDK RequestError is reported with its stack.
  describeError: (e) => describeError(e, { errorObjects: false }),
  // ACP_INTEROP_TRANSCRIPT=1 prints the frame transcript of passing scenarios as well.
  transcriptOnPass: Boolean(process.env.ACP_INTEROP_TRANSCRIPT),
});

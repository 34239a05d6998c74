#!/usr/bin/env node
// Runtime guarantees through the official TypeScript client SDK (@agentclientprotocol/sdk):
// drives the `probe` test agent (tests/agents/probe_agent.rs, built as the example `probe`),
// whose prompt commands each exercise one guarantee of the runtime (acp-core/src/connection.rs):
//
//   sleep     sends `sleeping`, waits for the cancel, then returns an error anyway
//   stubborn  sends `tick N` every 5 ms and ignores cancellation
//   panic     panics
//   ask       a tool call asking for permission
//   steps     sends `step N`, then reads `a.txt` through the client, and again
//   other     echoed back as one chunk
//
// Each scenario asserts the exact frames the agent sends on the raw tap (lib/agent.mjs), up to
// and including the prompt answer; every agent frame is validated against the SDK's JSON
// Schema (lib/validator.mjs), and the agent must exit 0 once its stdin closes.
//
// usage: node guarantees.mjs <probe-binary> [scenario ...]
//        node guarantees.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { spawnAgent } from "./lib/agent.mjs";
import { ScenarioFailure, WAIT_MS, describeError, runCli, scenario, sleep, withTimeout } from "./lib/harness.mjs";
import { toolCallNumber, turnOf as sharedTurnOf } from "./lib/turns.mjs";

/** The runtime drops a turn that ignores its cancel after a 50 ms grace: 10 ticks of 5 ms. */
const MAX_TICKS_AFTER_CANCEL = 40;
/** How long a scenario waits for a misbehaving agent to leak frames after an answer. */
const LEAK_WINDOW_MS = 300;

// ---------------------------------------------------------------------------
// Client fixture: one temp cwd (served as the client's file system) + agent processes.

const FS_READ = { fs: { readTextFile: true, writeTextFile: false }, terminal: false };

class Fixture {
  constructor(binary, validator, checks) {
    this.binary = binary;
    this.validator = validator;
    this.checks = checks;
    this.workdir = mkdtempSync(join(tmpdir(), "acp-interop-guarantees-"));
    this.fsReads = []; // params of fs/read_text_file, in order
    /** `(n) => Promise | undefined`: the answer to the n-th read (1-based) waits for it. */
    this.holdRead = () => undefined;
    /** session/request_permission as the SDK handed it over: {params, requestId, abandoned}. */
    this.permissionRequests = [];
    this.agents = [];
  }

  client() {
    const app = acp.client({ name: "acp-interop-guarantees" });
    app.onNotification("session/update", () => {});
    app.onRequest("fs/read_text_file", async ({ params }) => {
      this.fsReads.push(params);
      const n = this.fsReads.length;
      const expected = join(this.workdir, "a.txt");
      if (params.path !== expected) {
        this.checks.check(false, `fs/read_text_file #${n} for ${JSON.stringify(params.path)}, expected ${JSON.stringify(expected)}`);
        throw acp.RequestError.resourceNotFound(params.path);
      }
      await this.holdRead(n);
      return { content: readFileSync(params.path, "utf8") };
    });
    // Never answered: the returned promise settles only when the SDK aborts the incoming
    // request (a `$/cancel_request` from the agent, or the connection closing), and then
    // rejects with the abort reason, as a handler honouring `signal` does.
    app.onRequest("session/request_permission", ({ params, signal, requestId }) => {
      const entry = { params, requestId, abandoned: undefined };
      this.permissionRequests.push(entry);
      return new Promise((_, reject) => {
        signal.addEventListener(
          "abort",
          () => {
            const reason = signal.reason;
            entry.abandoned = reason instanceof acp.RequestError ? describeError(reason) : `${reason?.name}: ${reason?.message}`;
            reject(signal.reason);
          },
          { once: true },
        );
      });
    });
    return app;
  }

  /**
   * Spawn the probe and run `body(ctx, agent)` inside connectWith. Afterwards the agent's
   * stdin is closed and it must exit with status 0.
   */
  async run(body) {
    this.checks.must(existsSync(this.binary), `probe binary not found: ${this.binary} (cargo build --example probe)`);
    const agent = spawnAgent(this.binary, this.validator);
    this.agents.push(agent);
    try {
      return await this.client().connectWith(agent.stream, (ctx) => body(ctx, agent));
    } finally {
      const { code, signal, error } = await agent.shutdown(10_000);
      this.checks.check(
        code === 0,
        `agent process should exit with status 0 after stdin EOF, got code=${code} signal=${signal}${error ? " error=" + error : ""}`,
      );
    }
  }

  /** initialize (advertising fs.readTextFile) + session/new in the temp cwd; the session id. */
  async initialize(ctx) {
    const res = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: FS_READ,
      clientInfo: { name: "acp-interop-guarantees", version: "0.0.0" },
    });
    this.checks.equal(res.protocolVersion, acp.PROTOCOL_VERSION, "initialize.protocolVersion");
    const created = await ctx.request("session/new", { cwd: this.workdir, mcpServers: [] });
    this.checks.must(typeof created.sessionId === "string" && created.sessionId.length > 0, "session/new returned a sessionId");
    return created.sessionId;
  }

  /** session/prompt with one text block; `options` are the SDK's request options. */
  prompt(ctx, sessionId, text, options) {
    const p = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, options);
    p.catch(() => {}); // awaited later (or deliberately not, when the scenario already failed)
    return p;
  }

  cleanup() {
    rmSync(this.workdir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// One prompt turn on the raw tap, as a readable sequence.

function textOf(update) {
  return update?.content?.type === "text" ? update.content.text : undefined;
}

const turnOf = (agent, sessionId, promptText) => sharedTurnOf(agent, sessionId, promptText, labelOf);


function labelOf(agent, f) {
  const m = f.msg;
  if (m.method === "session/update") {
    const u = m.params.update;
    if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
      // A tool_call without `status` is pending: the spec gives `pending` as its default.
      const status = u.status ?? (u.sessionUpdate === "tool_call" ? "pending" : undefined);
      return `${u.sessionUpdate}#${toolCallNumber(agent, u.toolCallId)}${status ? " " + status : ""}`;
    }
    if (u.sessionUpdate === "agent_message_chunk") return `message ${JSON.stringify(textOf(u) ?? `[${u.content?.type}]`)}`;
    return `update ${u.sessionUpdate}`;
  }
  if (m.method === "session/request_permission") return `request_permission#${toolCallNumber(agent, m.params?.toolCall?.toolCallId)}`;
  if ("method" in m) return `${"id" in m ? "request" : "notification"} ${m.method}`;
  if ("error" in m) return `answer error ${m.error?.code}`;
  return `answer ${m.result?.stopReason}`;
}

/** A label for a client frame: its method, or `response to <agent method>`. */
function clientLabel(agent, f) {
  const m = f.msg;
  if ("method" in m) return m.method;
  const key = JSON.stringify(m.id);
  const req = agent.tap.agentFrames().find((a) => "method" in a.msg && "id" in a.msg && JSON.stringify(a.msg.id) === key);
  return `${"error" in m ? "error" : "response"} to ${req ? req.msg.method : `unknown id ${key}`}`;
}

/** The agent_message_chunk `text` for this session, on the tap. */
function waitForChunk(agent, sessionId, text) {
  return agent.tap
    .waitFor(
      (f) =>
        f.dir === "agent" &&
        f.msg?.method === "session/update" &&
        f.msg.params?.sessionId === sessionId &&
        f.msg.params.update?.sessionUpdate === "agent_message_chunk" &&
        textOf(f.msg.params.update) === text,
      `the chunk ${JSON.stringify(text)}`,
      WAIT_MS,
    )
    .catch((e) => {
      throw new ScenarioFailure(e.message);
    });
}

/** The last client frame with this method (the one just sent). */
function lastClientFrame(agent, method) {
  return agent.tap
    .clientFrames()
    .filter((f) => f.msg.method === method)
    .at(-1);
}

/** Awaits a prompt that must be answered with a result; an error response fails the scenario. */
async function answerOf(promptP, what) {
  try {
    return await withTimeout(promptP, WAIT_MS, what);
  } catch (e) {
    if (e instanceof ScenarioFailure) throw e;
    throw new ScenarioFailure(`${what}: expected a result, got ${describeError(e)}`);
  }
}

/**
 * Gives a misbehaving agent time to leak frames of the turns before, then proves the session
 * still works: prompt `hello` answers end_turn with exactly the chunk `hello`.
 */
async function checkNextPromptWorks(c, fx, ctx, agent, sid, what) {
  await sleep(LEAK_WINDOW_MS);
  const res = await answerOf(fx.prompt(ctx, sid, "hello"), `the answer to 'hello' ${what}`);
  c.equal(res.stopReason, "end_turn", `stopReason of 'hello' ${what}`);
  c.equal(turnOf(agent, sid, "hello").labels, ['message "hello"', "answer end_turn"], `exact frame sequence of 'hello' ${what}`);
}

/** Agent frames for the session after `answer` that are not part of a later turn. */
function framesAfter(agent, sid, answer, laterPrompts = ["hello"]) {
  const later = laterPrompts.map((t) => turnOf(agent, sid, t));
  return agent.tap
    .agentFrames()
    .filter((f) => f.seq > answer.seq && !later.some((t) => t.all.includes(f)))
    .map((f) => labelOf(agent, f));
}

// ---------------------------------------------------------------------------
// Scenarios

scenario(
  "error_after_cancel",
  "'sleep', session/cancel on the 'sleeping' chunk: the agent's code returns an error after the cancel, yet the prompt answers stopReason cancelled (a result, not an error)",
  async ({ fx, c }) => {
    await fx.run(async (ctx, agent) => {
      const sid = await fx.initialize(ctx);
      const promptP = fx.prompt(ctx, sid, "sleep");
      await waitForChunk(agent, sid, "sleeping");
      await ctx.notify("session/cancel", { sessionId: sid });
      const res = await answerOf(promptP, "the answer to 'sleep' after session/cancel");
      c.equal(res.stopReason, "cancelled", "stopReason after session/cancel");
      const turn = turnOf(agent, sid, "sleep");
      c.equal(turn.labels, ['message "sleeping"', "answer cancelled"], "exact frame sequence of the turn");
      c.equal(turn.answer.msg, { jsonrpc: "2.0", id: turn.request.msg.id, result: { stopReason: "cancelled" } }, "the answer frame");
      c.equal(turn.clientFrames.map((f) => clientLabel(agent, f)), ["session/cancel"], "client frames during the turn");
      await checkNextPromptWorks(c, fx, ctx, agent, sid, "after the cancelled turn");
      c.equal(framesAfter(agent, sid, turn.answer), [], "agent frames after the answer (other than the next turn's)");
    });
  },
);

scenario(
  "turn_ignoring_cancel_is_answered",
  `'stubborn' (a tick every 5 ms, ignores cancellation), session/cancel after 'tick 3': answered cancelled once the 50 ms grace ends, at most ${MAX_TICKS_AFTER_CANCEL} ticks between the cancel and the answer, none after it; the next prompt works`,
  async ({ fx, c }) => {
    await fx.run(async (ctx, agent) => {
      const sid = await fx.initialize(ctx);
      const promptP = fx.prompt(ctx, sid, "stubborn");
      await waitForChunk(agent, sid, "tick 3");
      await ctx.notify("session/cancel", { sessionId: sid });
      const cancelledAt = Date.now();
      const cancel = lastClientFrame(agent, "session/cancel");
      const res = await answerOf(promptP, "the answer to 'stubborn' after session/cancel");
      const answeredAfter = Date.now() - cancelledAt;
      c.equal(res.stopReason, "cancelled", "stopReason after session/cancel");
      await checkNextPromptWorks(c, fx, ctx, agent, sid, "after the dropped turn");

      const turn = turnOf(agent, sid, "stubborn");
      // Consecutive ticks from `tick 0`, then the answer: nothing else, no gap.
      const ticks = turn.frames.length;
      c.equal(
        turn.labels,
        [...Array.from({ length: ticks }, (_, i) => `message ${JSON.stringify(`tick ${i}`)}`), "answer cancelled"],
        "exact frame sequence of the turn",
      );
      const afterCancel = turn.frames.filter((f) => f.seq > cancel.seq).length;
      c.check(
        afterCancel <= MAX_TICKS_AFTER_CANCEL,
        `ticks between session/cancel and the answer: expected at most ${MAX_TICKS_AFTER_CANCEL}, got ${afterCancel} (the turn was not dropped after its grace)`,
      );
      c.check(ticks >= 4, `the ticks up to 'tick 3' are in the turn, got ${ticks}`);
      c.note(`${ticks} ticks in all, ${afterCancel} of them after session/cancel; answered ${answeredAfter} ms after the cancel was written`);
      c.equal(framesAfter(agent, sid, turn.answer), [], "agent frames after the answer (other than the next turn's)");
      c.equal(turn.clientFrames.map((f) => clientLabel(agent, f)), ["session/cancel"], "client frames during the turn");
    });
  },
);

scenario(
  "panic_answers_internal_error",
  "'panic': the prompt is answered with JSON-RPC error -32603 whose message carries the panic message; the next prompt on the same session answers end_turn with the chunk 'hello'",
  async ({ fx, c }) => {
    await fx.run(async (ctx, agent) => {
      const sid = await fx.initialize(ctx);
      let error;
      try {
        const res = await withTimeout(fx.prompt(ctx, sid, "panic"), WAIT_MS, "the answer to 'panic'");
        c.check(false, `'panic' should be answered with an error, got the result ${JSON.stringify(res)}`);
      } catch (e) {
        if (e instanceof ScenarioFailure) throw e;
        error = e;
      }
      if (error) {
        c.check(error instanceof acp.RequestError, `the SDK rejects the prompt with a RequestError, got ${describeError(error, { errorObjects: false })}`);
        c.equal(error.code, -32603, "error code seen by the SDK");
        c.check(
          String(error.message).includes("the probe panicked on purpose"),
          `the error message names the panic ("the probe panicked on purpose"): ${JSON.stringify(error.message)}`,
        );
        c.note(`the SDK rejected the prompt with ${describeError(error)}`);
      }
      const turn = turnOf(agent, sid, "panic");
      c.equal(turn.labels, ["answer error -32603"], "exact frame sequence of the turn");
      const e = turn.answer.msg.error;
      c.check(
        typeof e?.message === "string" && e.message.includes("panicked") && e.message.includes("the probe panicked on purpose"),
        `the error frame's message mentions the panic: ${turn.answer.raw}`,
      );
      await checkNextPromptWorks(c, fx, ctx, agent, sid, "after the panic");
      c.equal(framesAfter(agent, sid, turn.answer), [], "agent frames after the answer (other than the next turn's)");
    });
  },
);

scenario(
  "cancel_request_cancels_prompt",
  "'sleep' sent with the SDK's cancellationSignal option; aborting it on the 'sleeping' chunk makes the SDK send $/cancel_request with the prompt's id: the turn answers stopReason cancelled",
  async ({ fx, c }) => {
    await fx.run(async (ctx, agent) => {
      const sid = await fx.initialize(ctx);
      // The SDK's own mechanism: aborting `cancellationSignal` sends `$/cancel_request` for the
      // request and (without `stopWaitingOnCancel`) keeps waiting for the agent's answer.
      const controller = new AbortController();
      const promptP = fx.prompt(ctx, sid, "sleep", { cancellationSignal: controller.signal });
      await waitForChunk(agent, sid, "sleeping");
      controller.abort(new Error("the user pressed stop"));
      const res = await answerOf(promptP, "the answer to 'sleep' after aborting its cancellationSignal");
      c.equal(res.stopReason, "cancelled", "stopReason after $/cancel_request");

      const turn = turnOf(agent, sid, "sleep");
      c.equal(turn.labels, ['message "sleeping"', "answer cancelled"], "exact frame sequence of the turn");
      const cancels = agent.tap.clientFrames().filter((f) => f.msg.method === "$/cancel_request");
      c.equal(
        cancels.map((f) => f.msg),
        [{ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: turn.request.msg.id } }],
        "$/cancel_request frames the SDK wrote (the prompt's request id)",
      );
      c.equal(turn.clientFrames.map((f) => clientLabel(agent, f)), ["$/cancel_request"], "client frames during the turn (no session/cancel)");
      await checkNextPromptWorks(c, fx, ctx, agent, sid, "after the cancelled turn");
      c.equal(framesAfter(agent, sid, turn.answer), [], "agent frames after the answer (other than the next turn's)");
    });
  },
);

scenario(
  "unanswered_permission_then_cancel",
  "'ask': the client never answers session/request_permission and only sends session/cancel: tool_call pending -> request_permission -> tool_call_update failed -> stopReason cancelled; the SDK releases the pending request without a diagnostic",
  async ({ fx, c }) => {
    await fx.run(async (ctx, agent) => {
      const sid = await fx.initialize(ctx);
      const promptP = fx.prompt(ctx, sid, "ask");
      await agent.tap
        .waitFor((f) => f.dir === "agent" && f.msg?.method === "session/request_permission", "session/request_permission", WAIT_MS)
        .catch((e) => {
          throw new ScenarioFailure(e.message);
        });
      await ctx.notify("session/cancel", { sessionId: sid });
      const res = await answerOf(promptP, "the answer to 'ask' after session/cancel");
      c.equal(res.stopReason, "cancelled", "stopReason after session/cancel");

      const turn = turnOf(agent, sid, "ask");
      c.equal(
        turn.labels,
        ["tool_call#1 pending", "request_permission#1", "tool_call_update#1 failed", "answer cancelled"],
        "exact frame sequence of the turn",
      );
      const call = turn.frames[0]?.msg.params?.update;
      if (call?.sessionUpdate === "tool_call") c.equal([call.title, call.kind], ["Risky", "execute"], "tool_call [title, kind]");
      const failed = turn.frames.find((f) => f.msg.params?.update?.sessionUpdate === "tool_call_update");
      if (failed) c.note(`failed call: ${JSON.stringify(failed.msg.params.update)}`);
      // The client wrote nothing but the cancel: the permission request stays unanswered.
      c.equal(turn.clientFrames.map((f) => clientLabel(agent, f)), ["session/cancel"], "client frames during the turn");
      c.equal(fx.permissionRequests.length, 1, "session/request_permission requests handed to the client's handler");
      c.equal(fx.permissionRequests[0]?.abandoned, undefined, "the permission handler's signal while the connection is open");
      await checkNextPromptWorks(c, fx, ctx, agent, sid, "after the cancelled turn");
      c.equal(framesAfter(agent, sid, turn.answer), [], "agent frames after the answer (other than the next turn's)");
      // A client that cancels a turn answers its permission requests itself (the spec's
      // MUST): the agent does not withdraw them with $/cancel_request.
      const cancelRequests = agent.tap.agentFrames().filter((f) => f.msg.method === "$/cancel_request");
      c.equal(cancelRequests.map((f) => f.raw), [], "$/cancel_request frames the agent wrote");
    });
    // connectWith closed the connection: the SDK aborts the handler of the request that was
    // never answered (its rejection is dropped quietly; a console diagnostic fails the run).
    const entry = fx.permissionRequests[0];
    if (entry) {
      const responses = fx.agents[0].tap
        .clientFrames()
        .filter((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === JSON.stringify(entry.requestId));
      c.equal(responses.map((f) => f.raw), [], "client responses to session/request_permission over the whole connection");
      c.check(entry.abandoned !== undefined, "the SDK aborted the never-answered permission handler when the connection closed");
      c.note(`permission handler released by the SDK with: ${entry.abandoned}`);
    }
  },
);

scenario(
  "cancel_before_further_updates",
  "'steps' with a client serving <cwd>/a.txt: session/cancel on 'step 3', before the read that follows is answered: stopReason cancelled, chunks exactly 'step 0'..'step 3', nothing after",
  async ({ fx, c }) => {
    const file = join(fx.workdir, "a.txt");
    writeFileSync(file, "alpha ✓\n");
    let cancelSent;
    const cancelWritten = new Promise((resolve) => (cancelSent = resolve));
    // The read following `step 3` is answered only once the cancel is on the wire.
    fx.holdRead = (n) => (n === 4 ? cancelWritten : undefined);
    await fx.run(async (ctx, agent) => {
      const sid = await fx.initialize(ctx);
      const promptP = fx.prompt(ctx, sid, "steps");
      await waitForChunk(agent, sid, "step 3");
      await ctx.notify("session/cancel", { sessionId: sid });
      cancelSent();
      const res = await answerOf(promptP, "the answer to 'steps' after session/cancel");
      c.equal(res.stopReason, "cancelled", "stopReason after session/cancel");
      await checkNextPromptWorks(c, fx, ctx, agent, sid, "after the cancelled turn");

      const turn = turnOf(agent, sid, "steps");
      const read = "request fs/read_text_file";
      c.equal(
        turn.labels,
        ['message "step 0"', read, 'message "step 1"', read, 'message "step 2"', read, 'message "step 3"', read, "notification $/cancel_request", "answer cancelled"],
        "exact frame sequence of the turn",
      );
      c.equal(
        agent.tap.updates(sid).map((u) => textOf(u.update)).filter((t) => t !== "hello"),
        ["step 0", "step 1", "step 2", "step 3"],
        "every chunk of the session (but the next turn's 'hello')",
      );
      c.equal(fx.fsReads.map((p) => [p.sessionId, p.path]), Array(4).fill([sid, file]), "fs/read_text_file requests [sessionId, path]");
      // The client's answer to the 4th read went out after the cancel.
      const cancel = lastClientFrame(agent, "session/cancel");
      const fourth = agent.tap.agentRequests("fs/read_text_file")[3];
      const reply4 = fourth && agent.tap.clientFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === JSON.stringify(fourth.msg.id));
      c.check(cancel && reply4 && cancel.seq < reply4.seq, "the client answered the read after 'step 3' only after session/cancel");
      c.equal(framesAfter(agent, sid, turn.answer), [], "agent frames after the answer (other than the next turn's)");
    });
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "guarantees.mjs",
  targetArg: "probe-binary",
  title: "ACP runtime guarantees",
  targetLabel: "agent",
  fixture: (binary, validator, checks) => new Fixture(binary, validator, checks),
  rawLimit: 400,
});

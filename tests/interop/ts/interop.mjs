#!/usr/bin/env node
// Interop harness: drives an ACP agent binary with the official TypeScript
// client SDK (@agentclientprotocol/sdk) and validates every frame the agent
// writes against the JSON Schema shipped inside that SDK package.
//
// usage: node interop.mjs <agent-binary> [scenario ...]
//        node interop.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { spawnAgent, summarize } from "./lib/agent.mjs";
import { ScenarioFailure, WAIT_MS, describeError, runCli, scenario, sleep, withTimeout } from "./lib/harness.mjs";

// ---------------------------------------------------------------------------
// Client fixture: one agent process + one SDK client connection.

const FULL_FS = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };
const NO_FS = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };

class Fixture {
  constructor(binary, validator, checks) {
    this.binary = binary;
    this.validator = validator;
    this.checks = checks;
    this.files = new Map(); // in-memory client file system: absolute path -> content
    this.fsCalls = []; // {method, params}
    this.permissionCalls = []; // params
    this.permissionPolicy = "allow"; // allow | reject | cancel
    this.sessionUpdates = []; // parsed by the SDK handler (zod-validated)
    this.agents = [];
    this.workdir = mkdtempSync(join(tmpdir(), "acp-interop-ts-"));
  }

  client() {
    const app = acp.client({ name: "acp-interop-ts" });
    app.onNotification("session/update", ({ params }) => {
      this.sessionUpdates.push(params);
    });
    app.onRequest("fs/read_text_file", ({ params }) => {
      this.fsCalls.push({ method: "fs/read_text_file", params });
      if (!this.files.has(params.path)) throw acp.RequestError.resourceNotFound(params.path);
      return { content: this.files.get(params.path) };
    });
    app.onRequest("fs/write_text_file", ({ params }) => {
      this.fsCalls.push({ method: "fs/write_text_file", params });
      this.files.set(params.path, params.content);
      return {};
    });
    app.onRequest("session/request_permission", async ({ params, agent }) => {
      this.permissionCalls.push(params);
      const kindWanted = { allow: "allow_once", reject: "reject_once" }[this.permissionPolicy];
      if (this.permissionPolicy === "cancel") {
        // A well-behaved client that cancels the turn while a permission
        // request is open answers that request with the cancelled outcome.
        await agent.notify("session/cancel", { sessionId: params.sessionId });
        return { outcome: { outcome: "cancelled" } };
      }
      const option = params.options.find((o) => o.kind === kindWanted);
      if (!option) throw new Error(`no option of kind ${kindWanted} in ${JSON.stringify(params.options)}`);
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
    return app;
  }

  /**
   * Spawn an agent and run `body(ctx, agent)` inside connectWith. The agent's
   * stdin is closed afterwards and its exit status checked.
   */
  async run(body) {
    const agent = spawnAgent(this.binary, this.validator);
    this.agents.push(agent);
    const app = this.client();
    try {
      return await app.connectWith(agent.stream, (ctx) => body(ctx, agent));
    } finally {
      const { code, signal, error } = await agent.shutdown(10_000);
      this.checks.check(
        code === 0,
        `agent process should exit with status 0 after stdin EOF, got code=${code} signal=${signal}${error ? " error=" + error : ""}`,
      );
    }
  }

  async initialize(ctx, clientCapabilities = FULL_FS) {
    const params = {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientInfo: { name: "acp-interop-ts", version: "0.0.0" },
    };
    // `null` means: leave clientCapabilities out of the request entirely.
    if (clientCapabilities !== null) params.clientCapabilities = clientCapabilities;
    const res = await ctx.request("initialize", params);
    this.checks.equal(res.protocolVersion, acp.PROTOCOL_VERSION, "initialize.protocolVersion");
    return res;
  }

  async newSession(ctx) {
    const session = await ctx.buildSession(this.workdir).start();
    this.checks.check(typeof session.sessionId === "string" && session.sessionId.length > 0, "session/new returned a sessionId");
    return session;
  }

  /** Agent frames (from the raw tap) that belong to one prompt turn of one session. */
  turnFrames(agent, sessionId, promptText) {
    const tap = agent.tap;
    const req = tap
      .clientFrames()
      .find(
        (f) =>
          f.msg.method === "session/prompt" &&
          f.msg.params?.sessionId === sessionId &&
          f.msg.params?.prompt?.[0]?.text === promptText,
      );
    if (!req) throw new ScenarioFailure(`no session/prompt ${JSON.stringify(promptText)} found on the tap`);
    const key = JSON.stringify(req.msg.id);
    const frames = [];
    let answer;
    for (const f of tap.agentFrames()) {
      if (f.seq < req.seq) continue;
      const m = f.msg;
      if (!("method" in m) && JSON.stringify(m.id) === key) {
        answer = f;
        break;
      }
      const sid = m.params?.sessionId;
      if (sid === sessionId) frames.push(f);
    }
    return { request: req, frames, answer };
  }

  cleanup() {
    rmSync(this.workdir, { recursive: true, force: true });
  }
}

function textOf(update) {
  return update?.content?.type === "text" ? update.content.text : undefined;
}

function kindOfFrame(f) {
  const m = f.msg;
  if (m.method === "session/update") {
    const u = m.params.update;
    // A tool_call without `status` is pending: the spec gives `pending` as its default.
    const status = u.status ?? (u.sessionUpdate === "tool_call" ? "pending" : undefined);
    const extra = u.sessionUpdate.endsWith("_chunk") ? ` ${JSON.stringify(textOf(u))}` : status ? ` status=${status}` : "";
    return `update:${u.sessionUpdate}${extra}`;
  }
  if ("method" in m) return `request:${m.method}`;
  return "response";
}

// ---------------------------------------------------------------------------
// Scenarios

scenario(
  "schema_validator_self_test",
  "the frame validator built from the SDK's schema.json accepts good frames and rejects bad ones (proves validation is live)",
  async ({ validator, c }) => {
    const methods = { 1: "session/prompt", 2: "initialize", 3: "session/new" };
    const methodOf = (id) => methods[id];
    const good = [
      { jsonrpc: "2.0", id: 1, result: { stopReason: "end_turn" } },
      { jsonrpc: "2.0", id: 2, result: { protocolVersion: 1, agentCapabilities: {} } },
      { jsonrpc: "2.0", id: 3, result: { sessionId: "s" } },
      { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } } } },
      { jsonrpc: "2.0", id: 9, method: "fs/read_text_file", params: { sessionId: "s", path: "/a" } },
      { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } },
    ];
    const bad = [
      [{ jsonrpc: "2.0", id: 1, result: { stopReason: "finished" } }, "unknown stopReason"],
      [{ jsonrpc: "2.0", id: 2, result: { agentCapabilities: {} } }, "initialize result without protocolVersion"],
      [{ jsonrpc: "2.0", id: 3, result: {} }, "session/new result without sessionId"],
      [{ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk" } } }, "chunk without content"],
      [{ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "plan", entries: [{ content: "a", priority: "urgent", status: "pending" }] } } }, "plan entry with bad priority"],
      [{ jsonrpc: "2.0", method: "session/update", params: { update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } } } }, "update without sessionId"],
      [{ jsonrpc: "2.0", id: 9, method: "session/request_permission", params: { sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "maybe" }] } }, "permission option with bad kind"],
      [{ jsonrpc: "2.0", id: 9, method: "fs/read_text_file", params: { path: "/a" } }, "fs request without sessionId"],
      [{ jsonrpc: "2.0", id: 1, error: { code: -32603 } }, "error without message"],
      [{ id: 1, result: { stopReason: "end_turn" } }, "missing jsonrpc"],
      [{ jsonrpc: "2.0", id: 1, result: { stopReason: "end_turn" }, error: { code: 1, message: "x" } }, "both result and error"],
    ];
    for (const g of good) {
      const p = validator.validateAgentFrame(g, methodOf);
      c.check(p.length === 0, `validator rejected a valid frame ${JSON.stringify(g)}: ${p.join("; ")}`);
    }
    for (const [b, why] of bad) {
      const p = validator.validateAgentFrame(b, methodOf);
      c.check(p.length > 0, `validator accepted an invalid frame (${why}): ${JSON.stringify(b)}`);
    }
    c.note(`schema: ${validator.schemaPath} (sdk ${validator.sdkVersion}); ${good.length} good / ${bad.length} bad frames classified correctly`);
  },
  { needsAgent: false },
);

scenario(
  "prompt_streams_chunks_and_plan",
  "initialize -> session/new -> prompt: plan update, thought chunk, message chunks concatenating to the prompt, completed plan, end_turn",
  async ({ fx, c }) => {
    const promptText = "Hello from the official TypeScript client,  with ünïcode ✓ and  double spaces";
    await fx.run(async (ctx, agent) => {
      const init = await fx.initialize(ctx);
      c.check(init.agentCapabilities && typeof init.agentCapabilities === "object", "initialize result carries agentCapabilities");
      const session = await fx.newSession(ctx);
      const promptP = session.prompt(promptText);
      // Consume through the SDK's ActiveSession queue (zod-validated by the SDK).
      const seen = [];
      for (;;) {
        const m = await withTimeout(session.nextUpdate(), WAIT_MS, "next session update");
        if (m.kind === "stop") {
          c.equal(m.stopReason, "end_turn", "stopReason");
          break;
        }
        seen.push(m.update);
      }
      const res = await promptP;
      c.equal(res.stopReason, "end_turn", "prompt response stopReason");

      const kinds = seen.map((u) => u.sessionUpdate);
      const chunks = seen.filter((u) => u.sessionUpdate === "agent_message_chunk").map(textOf);
      c.check(chunks.length >= 2, `expected several agent_message_chunks, got ${chunks.length}`);
      c.equal(chunks.join(""), promptText, "concatenated agent_message_chunk text");
      c.check(chunks.every((t) => typeof t === "string"), "all message chunks are text content");
      const plans = seen.filter((u) => u.sessionUpdate === "plan");
      c.check(plans.length >= 2, `expected two plan updates, got ${plans.length}`);
      c.check(kinds.includes("agent_thought_chunk"), "an agent_thought_chunk arrives");
      if (plans.length >= 2) {
        const first = kinds.indexOf("plan");
        const last = kinds.lastIndexOf("plan");
        const firstMsg = kinds.indexOf("agent_message_chunk");
        const lastMsg = kinds.lastIndexOf("agent_message_chunk");
        c.check(first < firstMsg, `first plan update precedes the message chunks (order: ${kinds.join(",")})`);
        c.check(kinds.indexOf("agent_thought_chunk") < firstMsg, `thought chunk precedes the message chunks (order: ${kinds.join(",")})`);
        c.check(last > lastMsg, `final plan update follows the message chunks (order: ${kinds.join(",")})`);
        const finalPlan = plans[plans.length - 1];
        c.check(Array.isArray(finalPlan.entries) && finalPlan.entries.length > 0, "final plan has entries");
        c.check(
          finalPlan.entries.every((e) => e.status === "completed"),
          `final plan entries all completed: ${JSON.stringify(finalPlan.entries)}`,
        );
        c.check(plans[0].entries?.length > 0, "first plan has entries");
      }
      // Raw-tap view: all updates of the turn come before the prompt answer.
      const turn = fx.turnFrames(agent, session.sessionId, promptText);
      c.must(turn.answer, "prompt answer present on the raw tap");
      c.equal(turn.frames.length, seen.length, "updates seen by SDK vs raw frames before the answer");
      const late = agent.tap.updates(session.sessionId).filter((u) => u.seq > turn.answer.seq);
      c.check(late.length === 0, `no session/update after the prompt answer, got ${late.length}`);
      session.dispose();
    });
  },
);

scenario(
  "pipelined_initialize_and_session_new",
  "session/new sent right after initialize without awaiting it succeeds; prompt works afterwards",
  async ({ fx, c }) => {
    await fx.run(async (ctx, agent) => {
      const [init, created] = await Promise.all([
        ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: FULL_FS }),
        ctx.request("session/new", { cwd: fx.workdir, mcpServers: [] }),
      ]);
      c.equal(init.protocolVersion, acp.PROTOCOL_VERSION, "initialize.protocolVersion");
      c.check(typeof created.sessionId === "string", "session/new pipelined after initialize returned a sessionId");
      const clientSeqs = agent.tap.clientFrames().map((f) => f.msg.method);
      c.equal(clientSeqs.slice(0, 2), ["initialize", "session/new"], "client wrote initialize then session/new");
      const res = await ctx.request("session/prompt", { sessionId: created.sessionId, prompt: [{ type: "text", text: "stream 3" }] });
      c.equal(res.stopReason, "end_turn", "stopReason");
      c.equal(
        agent.tap.updates(created.sessionId).map((u) => textOf(u.update)),
        ["chunk 0\n", "chunk 1\n", "chunk 2\n"],
        "stream 3 chunks",
      );
    });
  },
);

async function permissionScenario({ fx, c }, policy) {
  fx.permissionPolicy = policy;
  const expectedStatus = { allow: "completed", reject: "failed" }[policy];
  const expectedText = { allow: "allowed", reject: "rejected" }[policy];
  await fx.run(async (ctx, agent) => {
    await fx.initialize(ctx);
    const session = await fx.newSession(ctx);
    const res = await withTimeout(session.prompt("permission"), WAIT_MS, "permission prompt answer");
    c.equal(res.stopReason, policy === "cancel" ? "cancelled" : "end_turn", "stopReason");
    c.equal(fx.permissionCalls.length, 1, "number of session/request_permission calls");
    const perm = fx.permissionCalls[0];
    if (perm) {
      c.equal(perm.sessionId, session.sessionId, "permission request sessionId");
      const opts = (perm.options ?? []).map((o) => [o.optionId, o.kind]);
      c.check(
        JSON.stringify(opts.filter(([id]) => id === "allow")) === JSON.stringify([["allow", "allow_once"]]) &&
          JSON.stringify(opts.filter(([id]) => id === "reject")) === JSON.stringify([["reject", "reject_once"]]),
        `permission options should include allow/allow_once and reject/reject_once, got ${JSON.stringify(opts)}`,
      );
    }
    const turn = fx.turnFrames(agent, session.sessionId, "permission");
    c.must(turn.answer, "prompt answer on the tap");
    const seq = turn.frames.map(kindOfFrame);
    const expected =
      policy === "cancel"
        ? ["update:tool_call status=pending", "request:session/request_permission"]
        : [
            "update:tool_call status=pending",
            "request:session/request_permission",
            `update:tool_call_update status=${expectedStatus}`,
            `update:agent_message_chunk ${JSON.stringify(expectedText)}`,
          ];
    if (policy === "cancel") {
      // The open tool call is reported failed before the `cancelled` answer, and nothing else.
      c.equal(seq, [...expected, "update:tool_call_update status=failed"], "exact frame sequence of the cancelled permission turn");
    } else {
      c.equal(seq, expected, "exact frame sequence of the permission turn");
    }
    const tc = turn.frames.find((f) => f.msg.params?.update?.sessionUpdate === "tool_call");
    if (tc) {
      const u = tc.msg.params.update;
      c.equal([u.title, u.kind, u.status ?? "pending"], ["Dangerous action", "execute", "pending"], "tool_call title/kind/status");
      if (u.status === undefined) c.note("tool_call omits `status` (the spec's default is pending)");
      const req = turn.frames.find((f) => f.msg.method === "session/request_permission");
      if (req) c.equal(req.msg.params.toolCall?.toolCallId, u.toolCallId, "permission request references the tool call");
      const upd = turn.frames.find((f) => f.msg.params?.update?.sessionUpdate === "tool_call_update");
      if (upd) c.equal(upd.msg.params.update.toolCallId, u.toolCallId, "tool_call_update references the tool call");
      // The update must follow the client's answer to the permission request.
      if (req && upd) {
        const answer = agent.tap.clientFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === JSON.stringify(req.msg.id));
        c.check(answer && answer.seq < upd.seq, "tool_call_update comes after the client answered the permission request");
      }
    }
    session.dispose();
  });
}

scenario("permission_allow", "permission prompt, client selects allow_once: tool_call pending -> request_permission -> tool_call_update completed -> 'allowed' -> end_turn", (a) =>
  permissionScenario(a, "allow"),
);
scenario("permission_reject", "permission prompt, client selects reject_once: tool_call pending -> request_permission -> tool_call_update failed -> 'rejected' -> end_turn", (a) =>
  permissionScenario(a, "reject"),
);
scenario(
  "permission_cancelled_outcome",
  "client cancels the turn while the permission request is open and answers it with outcome cancelled -> stopReason cancelled",
  (a) => permissionScenario(a, "cancel"),
);

scenario("fs_read", "agent reads a file through the client's fs/read_text_file; reply text equals the file content", async ({ fx, c }) => {
  const path = join(fx.workdir, "notes", "hello.txt");
  const content = "Hello from the TS client's file system ✓\nsecond line\twith a tab\n\nlast line without newline";
  fx.files.set(path, content);
  await fx.run(async (ctx, agent) => {
    await fx.initialize(ctx, FULL_FS);
    const session = await fx.newSession(ctx);
    const res = await withTimeout(session.prompt(`read ${path}`), WAIT_MS, "read prompt answer");
    c.equal(res.stopReason, "end_turn", "stopReason");
    c.equal(fx.fsCalls.map((x) => x.method), ["fs/read_text_file"], "fs calls made by the agent");
    if (fx.fsCalls[0]) {
      c.equal(fx.fsCalls[0].params.path, path, "fs/read_text_file path");
      c.equal(fx.fsCalls[0].params.sessionId, session.sessionId, "fs/read_text_file sessionId");
    }
    const turn = fx.turnFrames(agent, session.sessionId, `read ${path}`);
    const chunks = turn.frames.filter((f) => f.msg.params?.update?.sessionUpdate === "agent_message_chunk");
    c.equal(chunks.length, 1, "number of agent_message_chunks for a read");
    c.equal(chunks.map((f) => textOf(f.msg.params.update)).join(""), content, "read reply text");
  });
});

scenario("fs_write", "agent writes through fs/write_text_file; the content round-trips via a later read", async ({ fx, c }) => {
  const path = join(fx.workdir, "out", "written.txt");
  const content = "written by the TS client  interop test ✓ (two spaces kept)";
  await fx.run(async (ctx, agent) => {
    await fx.initialize(ctx, FULL_FS);
    const session = await fx.newSession(ctx);
    const res = await withTimeout(session.prompt(`write ${path} ${content}`), WAIT_MS, "write prompt answer");
    c.equal(res.stopReason, "end_turn", "stopReason");
    c.equal(fx.fsCalls.map((x) => x.method), ["fs/write_text_file"], "fs calls made by the agent");
    if (fx.fsCalls[0]) {
      c.equal(fx.fsCalls[0].params.path, path, "fs/write_text_file path");
      c.equal(fx.fsCalls[0].params.sessionId, session.sessionId, "fs/write_text_file sessionId");
      c.equal(fx.fsCalls[0].params.content, content, "fs/write_text_file content");
    }
    c.equal(fx.files.get(path), content, "client file content after write");
    const turn = fx.turnFrames(agent, session.sessionId, `write ${path} ${content}`);
    const texts = turn.frames.filter((f) => f.msg.params?.update?.sessionUpdate === "agent_message_chunk").map((f) => textOf(f.msg.params.update));
    c.equal(texts.join(""), `wrote ${path}`, "write reply text");
    // Round trip: read it back through the agent.
    const res2 = await withTimeout(session.prompt(`read ${path}`), WAIT_MS, "read-back prompt answer");
    c.equal(res2.stopReason, "end_turn", "read-back stopReason");
    const turn2 = fx.turnFrames(agent, session.sessionId, `read ${path}`);
    const back = turn2.frames.filter((f) => f.msg.params?.update?.sessionUpdate === "agent_message_chunk").map((f) => textOf(f.msg.params.update));
    c.equal(back.join(""), content, "content read back through the agent");
  });
});

scenario(
  "fs_read_missing_file",
  "client answers fs/read_text_file for a missing file with the SDK's resourceNotFound error: the agent recognises it, says so, ends the turn normally",
  async ({ fx, c }) => {
    const path = join(fx.workdir, "does-not-exist.txt");
    await fx.run(async (ctx, agent) => {
      await fx.initialize(ctx, FULL_FS);
      const session = await fx.newSession(ctx);
      let outcome;
      try {
        const res = await withTimeout(session.prompt(`read ${path}`), WAIT_MS, "prompt answer after a failed read");
        outcome = `result stopReason=${res.stopReason}`;
      } catch (e) {
        if (e instanceof ScenarioFailure) throw e;
        outcome = `error response: ${describeError(e)}`;
      }
      const clientErr = agent.tap.clientFrames().find((f) => "error" in f.msg);
      c.note(`TS client answered fs/read_text_file with: ${clientErr ? clientErr.raw : "(no error frame?)"}`);
      const turn = fx.turnFrames(agent, session.sessionId, `read ${path}`);
      const texts = turn.frames.filter((f) => f.msg.params?.update?.sessionUpdate === "agent_message_chunk").map((f) => textOf(f.msg.params.update));
      c.note(`agent answered the prompt with ${outcome}; message chunks: ${JSON.stringify(texts)}`);
      // The client's not-found error is recognised (Error::is_not_found) and reported in chat.
      c.equal(outcome, "result stopReason=end_turn", "a missing file does not fail the turn");
      c.equal(JSON.stringify(texts), JSON.stringify([`no such file: ${path}`]), "the agent says the file is missing");
      const res2 = await withTimeout(session.prompt("stream 1"), WAIT_MS, "follow-up prompt");
      c.equal(res2.stopReason, "end_turn", "follow-up prompt after the failed read");
    });
  },
);

scenario(
  "no_fs_capability",
  "client without fs capabilities (explicitly false, and omitted): read/write reply 'fs unavailable...' and no fs/* request is sent",
  async ({ fx, c }) => {
    for (const [label, caps] of [
      ["fs explicitly false", NO_FS],
      ["clientCapabilities omitted", null],
    ]) {
      await fx.run(async (ctx, agent) => {
        await fx.initialize(ctx, caps);
        const session = await fx.newSession(ctx);
        for (const text of [`read ${join(fx.workdir, "a.txt")}`, `write ${join(fx.workdir, "b.txt")} some content`]) {
          const res = await withTimeout(session.prompt(text), WAIT_MS, `prompt ${text}`);
          c.equal(res.stopReason, "end_turn", `[${label}] stopReason for ${JSON.stringify(text)}`);
          const turn = fx.turnFrames(agent, session.sessionId, text);
          const texts = turn.frames.filter((f) => f.msg.params?.update?.sessionUpdate === "agent_message_chunk").map((f) => textOf(f.msg.params.update));
          c.check(
            texts.length > 0 && texts[0].startsWith("fs unavailable"),
            `[${label}] reply to ${JSON.stringify(text)} should start with "fs unavailable", got ${JSON.stringify(texts)}`,
          );
        }
        const fsReqs = agent.tap.agentRequests().filter((f) => f.msg.method.startsWith("fs/"));
        c.check(fsReqs.length === 0, `[${label}] agent sent fs requests to a client without fs capability: ${fsReqs.map((f) => f.raw).join(" | ")}`);
      });
    }
    c.equal(fx.fsCalls.length, 0, "fs handler invocations on the client");
  },
);

scenario(
  "cancel_mid_turn",
  "'sleep' then session/cancel: prompt answers cancelled, no session/update for that session after the answer, session usable afterwards",
  async ({ fx, c }) => {
    await fx.run(async (ctx, agent) => {
      await fx.initialize(ctx);
      const session = await fx.newSession(ctx);
      const sid = session.sessionId;
      const promptP = session.prompt("sleep");
      promptP.catch(() => {});
      await agent.tap.waitFor(
        (f) => f.dir === "agent" && f.msg?.method === "session/update" && f.msg.params?.sessionId === sid && textOf(f.msg.params.update) === "sleeping",
        "the 'sleeping' chunk",
        WAIT_MS,
      );
      await ctx.notify("session/cancel", { sessionId: sid });
      const res = await withTimeout(promptP, WAIT_MS, "prompt answer after session/cancel");
      c.equal(res.stopReason, "cancelled", "stopReason after session/cancel");
      // Give a misbehaving agent time to leak updates, then round-trip a barrier request.
      await sleep(300);
      const other = await ctx.request("session/new", { cwd: fx.workdir, mcpServers: [] });
      const barrier = agent.tap.responsesTo("session/new").at(-1);
      const answer = fx.turnFrames(agent, sid, "sleep").answer;
      c.must(answer, "cancelled prompt answer on the tap");
      const late = agent.tap.updates(sid).filter((u) => u.seq > answer.seq);
      c.check(late.length === 0, `session/update for the cancelled session after its answer: ${late.map((u) => JSON.stringify(u.update)).join(" | ")}`);
      c.check(barrier && barrier.seq > answer.seq, "barrier session/new answered after the cancelled prompt");
      c.check(typeof other.sessionId === "string" && other.sessionId !== sid, "a second session gets a distinct id");
      // The session accepts a new turn and nothing from the cancelled turn leaks into it.
      const res2 = await withTimeout(session.prompt("stream 2"), WAIT_MS, "prompt after cancel");
      c.equal(res2.stopReason, "end_turn", "stopReason of the next turn");
      const turn2 = fx.turnFrames(agent, sid, "stream 2");
      c.equal(turn2.frames.map((f) => textOf(f.msg.params?.update)), ["chunk 0\n", "chunk 1\n"], "updates of the next turn");
      session.dispose();
    });
  },
);

scenario(
  "concurrent_sessions",
  "two sessions run 'stream 200' at once: each session's chunks arrive complete and in order before its own answer",
  async ({ fx, c }) => {
    const N = 200;
    await fx.run(async (ctx, agent) => {
      await fx.initialize(ctx);
      const a = await fx.newSession(ctx);
      const b = await fx.newSession(ctx);
      c.check(a.sessionId !== b.sessionId, "distinct session ids");
      const [ra, rb] = await withTimeout(Promise.all([a.prompt(`stream ${N}`), b.prompt(`stream ${N}`)]), WAIT_MS * 2, "both stream prompts");
      c.equal([ra.stopReason, rb.stopReason], ["end_turn", "end_turn"], "stop reasons");
      const expected = Array.from({ length: N }, (_, i) => `chunk ${i}\n`);
      const spans = [];
      for (const s of [a, b]) {
        const turn = fx.turnFrames(agent, s.sessionId, `stream ${N}`);
        c.must(turn.answer, `answer for ${s.sessionId}`);
        const texts = turn.frames.map((f) => textOf(f.msg.params?.update));
        c.check(
          JSON.stringify(texts) === JSON.stringify(expected),
          `session ${s.sessionId}: expected ${N} ordered chunks before its answer, got ${texts.length} (first mismatch at ${texts.findIndex((t, i) => t !== expected[i])})`,
        );
        const late = agent.tap.updates(s.sessionId).filter((u) => u.seq > turn.answer.seq);
        c.check(late.length === 0, `session ${s.sessionId}: ${late.length} updates after its answer`);
        if (turn.frames.length) spans.push([turn.frames[0].seq, turn.answer.seq]);
      }
      if (spans.length === 2) {
        const overlap = spans[0][0] < spans[1][1] && spans[1][0] < spans[0][1];
        c.note(`turn frame spans ${JSON.stringify(spans)}: ${overlap ? "interleaved (ran concurrently)" : "not interleaved (ran one after the other)"}`);
      }
      // The SDK routed every update to the right ActiveSession queue as well.
      for (const s of [a, b]) {
        const routed = fx.sessionUpdates.filter((p) => p.sessionId === s.sessionId).length;
        c.equal(routed, N, `updates delivered by the SDK for ${s.sessionId}`);
      }
      a.dispose();
      b.dispose();
    });
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "interop.mjs",
  targetArg: "agent-binary",
  title: "ACP interop",
  targetLabel: "agent",
  fixture: (binary, validator, checks) => new Fixture(binary, validator, checks),
  rawLimit: 400,
});

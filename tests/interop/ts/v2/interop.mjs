#!/usr/bin/env node
// Protocol v2 interop: drives an ACP agent with the official TypeScript SDK's experimental v2
// client (@agentclientprotocol/sdk 2.4.0, `experimental/v2`; the API used is summarised at the
// top of fixture.mjs) and validates every frame the agent writes against the SDK's
// schema/v2/schema.json (plus: no v1 update tags, no unknown non-`_` tags; fixture.mjs).
//
// The target is a directory of example binaries (each scenario starts the example it names:
// echo, mcp, tour) or one agent, which then serves every scenario: v2/reference-agent.mjs, a
// v2 agent written on the SDK's own agent side, which proves these checks pass on a correct
// agent (and, with REF_AGENT_DEFECT, fail on a wrong one: see prove.mjs).
//
// usage: node v2/interop.mjs <examples-dir | agent> [scenario ...]
//        node v2/interop.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { join } from "node:path";
import { WAIT_MS, describeError, runCli, scenario, sleep, withTimeout } from "../lib/harness.mjs";
import { Fixture, V2Validator, isState, isUpdate, labelOf, textOf } from "./fixture.mjs";
import { agentText, checkQuiet, checkTurn, promptTurn, statusesOf, toolCalls, updatesIn } from "./turns.mjs";
import "./scenarios-session.mjs";

const AUTH_REQUIRED = -32000;
const ECHO_TEXT = "Hello from the v2 client,  with ünïcode ✓";

/** The v1 initialize result fields a v2 answer must not carry. */
const V1_INIT_FIELDS = ["agentCapabilities", "agentInfo"];

function checkV2InitResult(c, r, label) {
  c.equal(r?.protocolVersion, 2, `${label}: protocolVersion`);
  c.check(typeof r?.info?.name === "string" && typeof r?.info?.version === "string", `${label}: info {name, version} is required in v2, got ${JSON.stringify(r?.info)}`);
  c.check(r?.capabilities && typeof r.capabilities === "object", `${label}: capabilities object, got ${JSON.stringify(r?.capabilities)}`);
  c.check(r?.capabilities?.session && typeof r.capabilities.session === "object", `${label}: capabilities.session (the baseline session methods), got ${JSON.stringify(r?.capabilities)}`);
  for (const k of V1_INIT_FIELDS) c.check(!(k in (r ?? {})), `${label}: v1 field \`${k}\` in a v2 answer`);
  for (const k of ["loadSession", "promptCapabilities", "mcpCapabilities", "sessionCapabilities"]) {
    c.check(!(k in (r?.capabilities ?? {})), `${label}: v1 capability \`${k}\` in v2 capabilities`);
  }
}

// ---------------------------------------------------------------------------
// Validator self-test

scenario(
  "schema_validator_self_test",
  "the v2 validator (SDK schema/v2/schema.json + tag policy) accepts good v2 frames and rejects bad ones, including v1 shapes the open unions would let through",
  async ({ validator, c }) => {
    const methods = { 1: "session/prompt", 2: "initialize", 3: "session/resume" };
    const methodOf = (id) => methods[id];
    const upd = (update) => ({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update } });
    const good = [
      { jsonrpc: "2.0", id: 1, result: { messageId: "m1" } },
      { jsonrpc: "2.0", id: 2, result: { protocolVersion: 2, info: { name: "a", version: "1" }, capabilities: { session: {} } } },
      { jsonrpc: "2.0", id: 3, result: {} },
      upd({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" }),
      upd({ sessionUpdate: "state_update", state: "running" }),
      upd({ sessionUpdate: "user_message", messageId: "u", content: [{ type: "text", text: "hi" }] }),
      upd({ sessionUpdate: "agent_message_chunk", messageId: "a", content: { type: "text", text: "x" } }),
      upd({ sessionUpdate: "tool_call_update", toolCallId: "t", title: "T", status: "pending" }),
      upd({ sessionUpdate: "plan_update", plan: { type: "items", planId: "p", entries: [{ content: "a", priority: "low", status: "pending" }] } }),
      upd({ sessionUpdate: "_vendor_thing", x: 1 }),
      { jsonrpc: "2.0", id: 9, method: "session/request_permission", params: { sessionId: "s", title: "Run?", options: [{ optionId: "a", name: "A", kind: "allow_once" }] } },
    ];
    const bad = [
      [{ jsonrpc: "2.0", id: 1, result: {} }, "prompt result without messageId"],
      [{ jsonrpc: "2.0", id: 1, result: { stopReason: "end_turn" } }, "v1 prompt result"],
      [{ jsonrpc: "2.0", id: 2, result: { protocolVersion: 2, capabilities: {} } }, "initialize result without info"],
      [upd({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } }), "chunk without messageId"],
      [upd({ sessionUpdate: "tool_call", toolCallId: "t", title: "T" }), "v1 tool_call"],
      [upd({ sessionUpdate: "plan", entries: [] }), "v1 plan"],
      [upd({ sessionUpdate: "turn_finished" }), "unknown non-'_' update tag"],
      [upd({ sessionUpdate: "state_update" }), "state_update without state"],
      [upd({ sessionUpdate: "user_message", content: [] }), "user_message without messageId"],
      [{ jsonrpc: "2.0", id: 9, method: "session/request_permission", params: { sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] } }, "v1 permission request (no title)"],
      [{ jsonrpc: "2.0", id: 9, method: "fs/read_text_file", params: { sessionId: "s", path: "/a" } }, "v1 fs request"],
    ];
    for (const g of good) {
      const p = validator.validateAgentFrame(g, methodOf);
      c.check(p.length === 0, `validator rejected a valid v2 frame ${JSON.stringify(g)}: ${p.join("; ")}`);
    }
    for (const [b, why] of bad) {
      const p = validator.validateAgentFrame(b, methodOf);
      c.check(p.length > 0, `validator accepted an invalid frame (${why}): ${JSON.stringify(b)}`);
    }
    c.note(`schema: ${validator.schemaPath} (sdk ${validator.sdkVersion}); ${good.length} good / ${bad.length} bad frames classified correctly`);
  },
  { needsAgent: false },
);

// ---------------------------------------------------------------------------
// Initialization

scenario("initialize_v2", "echo: the SDK's v2 initialize (protocolVersion 2, info, capabilities) is answered with protocolVersion 2 in the v2 shape (info, capabilities.session, no v1 fields)", async ({ fx, c }) => {
  await fx.run("echo", async (conn) => {
    const res = await conn.initialize();
    const wire = conn.answerTo(conn.lastRequest("initialize"))?.msg.result;
    checkV2InitResult(c, wire, "initialize (wire)");
    c.equal(res.info?.name, wire?.info?.name, "info.name as the SDK parsed it");
    const session = await conn.newSession();
    c.check(session.sessionId, "session/new after a v2 initialize");
  });
});

/** Raw initialize (the SDK client always asks for 2): the agent's answer frame. */
async function rawInitialize(fx, version, validator) {
  const agent = fx.spawn("echo", {}, validator);
  agent.writeRaw(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: version, info: { name: "acp-interop-v2", version: "0.0.0" }, clientInfo: { name: "acp-interop-v2", version: "0.0.0" }, capabilities: {}, clientCapabilities: {} } }) + "\n");
  const answer = await agent.tap.waitFor((f) => f.dir === "agent" && f.msg?.id === 0 && !("method" in f.msg), "the initialize answer", WAIT_MS);
  const { code } = await agent.shutdown(10_000);
  return { answer: answer.msg, code };
}

scenario("initialize_v3_answers_v2", "echo: a raw initialize asking for protocolVersion 3 is answered with 2 (the agent's latest) in the v2 shape", async ({ fx, c }) => {
  const { answer, code } = await rawInitialize(fx, 3, fx.validator);
  c.must(answer.result, `initialize asking for 3 failed: ${JSON.stringify(answer.error)}`);
  checkV2InitResult(c, answer.result, "initialize asking for 3");
  c.equal(code, 0, "agent exit status after stdin EOF");
});

scenario("initialize_v1_still_v1", "echo: a raw initialize asking for protocolVersion 1 is still answered with 1 in the v1 shape (validated against the SDK's v1 schema)", async ({ fx, c }) => {
  const { FrameValidator } = await import("../lib/validator.mjs");
  const { answer, code } = await rawInitialize(fx, 1, new FrameValidator());
  c.must(answer.result, `initialize asking for 1 failed: ${JSON.stringify(answer.error)}`);
  c.equal(answer.result.protocolVersion, 1, "protocolVersion answered to a v1 client");
  c.check(answer.result.agentCapabilities && !("capabilities" in answer.result), `v1 shape (agentCapabilities, no capabilities): ${JSON.stringify(answer.result)}`);
  c.equal(code, 0, "agent exit status after stdin EOF");
});

// ---------------------------------------------------------------------------
// Prompt turns

scenario(
  "plain_turn",
  "echo: prompt answered {messageId}; user_message echo with that id; state_update running before the output, idle end_turn after; every chunk has a messageId; plan as plan_update; nothing for the session after idle; a second turn gets a new messageId",
  async ({ fx, c }) => {
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const sid = session.sessionId;
      const turn = await promptTurn(conn, sid, ECHO_TEXT, () => session.prompt(ECHO_TEXT));
      const first = checkTurn(c, "turn 1", turn);
      // The SDK's reading of the same turn: its update queue up to the idle update.
      const said = await withTimeout(session.readTextUntilIdle(), WAIT_MS, "readTextUntilIdle");
      c.equal(said, ECHO_TEXT, "turn 1: agent text until idle (SDK readTextUntilIdle)");
      const tags = updatesIn(turn.frames).map((u) => u.sessionUpdate);
      c.check(tags.includes("plan_update"), `turn 1: echo's plan arrives as plan_update (updates: ${tags.join(", ")})`);
      c.check(tags.includes("agent_thought_chunk") || tags.includes("agent_thought"), `turn 1: echo's thought arrives (updates: ${tags.join(", ")})`);
      c.equal(agentText(updatesIn(turn.frames)), ECHO_TEXT, "turn 1: agent text on the tap");
      await checkQuiet(c, conn, sid, turn.idle, "turn 1");

      const turn2 = await promptTurn(conn, sid, "stream 3", () => session.prompt("stream 3"));
      const second = checkTurn(c, "turn 2", turn2);
      c.check(first !== second, `turn 2: a new user messageId (both ${JSON.stringify(first)})`);
      c.equal(await withTimeout(session.readTextUntilIdle(), WAIT_MS, "readTextUntilIdle"), "chunk 0\nchunk 1\nchunk 2\n", "turn 2: agent text (SDK readTextUntilIdle)");
      await checkQuiet(c, conn, sid, turn2.idle, "turn 2");
      session.dispose();
    });
  },
);

/**
 * A permission turn with `answer` ("allow" | "reject"): the client waits (up to 3 s) for
 * requires_action before answering. Returns the turn and what the handler saw.
 */
async function permissionTurn(fx, conn, session, answer) {
  const sid = session.sessionId;
  const seen = {};
  fx.onPermission = async (params) => {
    seen.params = params;
    seen.requiresAction = await conn.waitFor((f) => isState(f, sid, "requires_action"), "requires_action", 3000).catch(() => undefined);
    const kind = answer === "allow" ? "allow_once" : "reject_once";
    return { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === kind)?.optionId } };
  };
  const turn = await promptTurn(conn, sid, "permission", () => session.prompt("permission"));
  return { turn, seen };
}

function checkPermissionTurn(c, conn, label, { turn, seen }, { finalStatus, message }) {
  const sid = turn.request.msg.params.sessionId;
  checkTurn(c, label, turn);
  const req = turn.frames.find((f) => f.msg.method === "session/request_permission");
  c.must(req && seen.params, `${label}: no session/request_permission`);
  const p = seen.params;
  c.check(typeof p.title === "string" && p.title.length > 0, `${label}: the permission request has a title (required in v2): ${JSON.stringify(p)}`);
  const kinds = p.options.map((o) => o.kind);
  c.check(kinds.includes("allow_once") && kinds.includes("reject_once"), `${label}: options allow_once and reject_once, got ${JSON.stringify(kinds)}`);
  const calls = toolCalls(updatesIn(turn.frames));
  c.equal(calls.size, 1, `${label}: number of tool calls`);
  const [id, updates] = [...calls][0] ?? [];
  c.check(p.subject?.type === "tool_call" && p.subject.toolCall?.toolCallId === id, `${label}: subject {type: tool_call, toolCall.toolCallId: ${JSON.stringify(id)}}, got ${JSON.stringify(p.subject)}`);
  if (updates) {
    c.check(updates[0].sessionUpdate === "tool_call_update" && updates[0].title, `${label}: the tool call is created by a tool_call_update with a title, got ${JSON.stringify(updates[0])}`);
    c.equal(statusesOf(updates).at(-1), finalStatus, `${label}: last status of the tool call`);
  }
  const clientAnswer = conn.tap.clientFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === JSON.stringify(req.msg.id));
  c.must(clientAnswer, `${label}: the client's answer to the permission request is not on the tap`);
  c.check(seen.requiresAction && seen.requiresAction.seq < clientAnswer.seq, `${label}: state_update requires_action while the permission request waits (frames: ${turn.frames.map(labelOf).join(", ")})`);
  const resumed = turn.frames.find((f) => f.seq > clientAnswer.seq && isState(f, sid, "running"));
  c.check(resumed, `${label}: state_update running after the permission answer, before idle (frames: ${turn.frames.map(labelOf).join(", ")})`);
  const later = turn.frames.filter((f) => f.seq > clientAnswer.seq);
  if (resumed) c.check(later.filter((f) => f.msg.method === "session/update" && !isUpdate(f, sid, "state_update")).every((f) => f.seq > resumed.seq), `${label}: running comes before the work after the answer (${later.map(labelOf).join(", ")})`);
  c.equal(agentText(updatesIn(turn.frames)), message, `${label}: agent text`);
}

scenario(
  "permission",
  "echo 'permission': tool call created by tool_call_update; session/request_permission with title and a tool_call subject; requires_action while it waits; running after the answer; allow -> completed 'allowed', reject -> failed 'rejected'; idle end_turn",
  async ({ fx, c }) => {
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const allow = await permissionTurn(fx, conn, session, "allow");
      checkPermissionTurn(c, conn, "allow", allow, { finalStatus: "completed", message: "allowed" });
      await checkQuiet(c, conn, session.sessionId, allow.turn.idle, "allow");
      const reject = await permissionTurn(fx, conn, session, "reject");
      checkPermissionTurn(c, conn, "reject", reject, { finalStatus: "failed", message: "rejected" });
      await checkQuiet(c, conn, session.sessionId, reject.turn.idle, "reject");
    });
  },
);

scenario(
  "tool_calls",
  "mcp 'call say {\"text\": …}': the agent's own tool runs as a tool call created by tool_call_update (title first), never a v1 tool_call; it ends completed with the text; idle end_turn",
  async ({ fx, c }) => {
    await fx.run("mcp", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const text = 'call say {"text": "hi from v2"}';
      const turn = await promptTurn(conn, session.sessionId, text, () => session.prompt(text));
      checkTurn(c, "say", turn);
      const updates = updatesIn(turn.frames);
      c.check(!updates.some((u) => u.sessionUpdate === "tool_call"), "say: no v1 tool_call update");
      const calls = toolCalls(updates);
      c.equal(calls.size, 1, "say: number of tool calls");
      const [, call] = [...calls][0] ?? [];
      if (call) {
        c.check(call[0].sessionUpdate === "tool_call_update" && typeof call[0].title === "string", `say: the first report creates the call with a title: ${JSON.stringify(call[0])}`);
        c.equal(call[0].title, "Say hi from v2", "say: tool call title");
        c.equal(statusesOf(call).at(-1), "completed", "say: last status");
        const content = call.flatMap((u) => (u.sessionUpdate === "tool_call_content_chunk" ? [u.content] : (u.content ?? [])));
        c.check(content.some((x) => x.type === "content" && x.content?.text?.includes("hi from v2")), `say: the tool call's content carries the result: ${JSON.stringify(content)}`);
      }
      c.equal(agentText(updates), "hi from v2", "say: agent text");
      await checkQuiet(c, conn, session.sessionId, turn.idle, "say");
    });
  },
);

scenario(
  "cancel_mid_turn",
  "echo 'sleep': session/cancel once 'sleeping' arrived -> idle with stopReason cancelled, nothing after it; the next prompt ends end_turn",
  async ({ fx, c }) => {
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const sid = session.sessionId;
      const turn = await promptTurn(conn, sid, "sleep", async () => {
        const p = session.prompt("sleep");
        await conn.waitFor((f) => isUpdate(f, sid, "agent_message_chunk") && textOf(f.msg.params.update) === "sleeping", "the 'sleeping' chunk");
        await conn.ctx.notify("session/cancel", { sessionId: sid });
        return p;
      });
      checkTurn(c, "sleep", turn, "cancelled");
      await checkQuiet(c, conn, sid, turn.idle, "sleep");
      const after = await promptTurn(conn, sid, "after the cancel", () => session.prompt("after the cancel"));
      checkTurn(c, "after", after);
      c.equal(agentText(updatesIn(after.frames)), "after the cancel", "after: agent text");
    });
  },
);

scenario(
  "cancel_during_permission",
  "echo 'permission': the client sends session/cancel while the permission request is open and answers it cancelled -> the tool call does not complete, idle cancelled, nothing after it",
  async ({ fx, c }) => {
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const sid = session.sessionId;
      let requiresAction;
      fx.onPermission = async (params, { ctx }) => {
        requiresAction = await conn.waitFor((f) => isState(f, sid, "requires_action"), "requires_action", 3000).catch(() => undefined);
        await ctx.notify("session/cancel", { sessionId: params.sessionId });
        return { outcome: { outcome: "cancelled" } };
      };
      const turn = await promptTurn(conn, sid, "permission", () => session.prompt("permission"));
      checkTurn(c, "cancelled permission", turn, "cancelled");
      c.check(requiresAction, "requires_action while the permission request waits");
      const [, call] = [...toolCalls(updatesIn(turn.frames))][0] ?? [];
      c.must(call, "no tool call in the turn");
      const last = statusesOf(call).at(-1);
      c.check(last === "failed" || last === "cancelled", `the tool call ends failed or cancelled, got ${JSON.stringify(statusesOf(call))}`);
      c.equal(agentText(updatesIn(turn.frames)), "", "no agent text in the cancelled turn");
      await checkQuiet(c, conn, sid, turn.idle, "cancelled permission");
    });
  },
);

scenario(
  "queued_prompts",
  "echo: a second prompt sent while the first waits on its permission request is accepted (its own messageId) and runs after the first, FIFO; idle end_turn at the end",
  async ({ fx, c }) => {
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const sid = session.sessionId;
      const second = "second in line";
      let secondP;
      let secondRequest;
      fx.onPermission = async (params) => {
        const mark = conn.tap.seq;
        secondP = session.prompt(second);
        secondP.catch(() => {});
        secondRequest = await conn.waitFor((f) => f.dir === "client" && f.seq >= mark && f.msg?.method === "session/prompt", "the second session/prompt frame");
        await sleep(200);
        return { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once").optionId } };
      };
      const firstP = session.prompt("permission");
      firstP.catch(() => {});
      const secondText = await conn.waitFor((f) => isUpdate(f, sid, "agent_message_chunk") && textOf(f.msg.params.update) === "line", "the second prompt's last echo chunk");
      const idle = await conn.waitFor((f) => f.seq > secondText.seq && isState(f, sid, "idle"), "idle after the second prompt's output");
      const [r1, r2] = await Promise.all([withTimeout(firstP, WAIT_MS, "first prompt answer"), withTimeout(secondP, WAIT_MS, "second prompt answer")]);
      c.check(r1.messageId && r2.messageId && r1.messageId !== r2.messageId, `two distinct messageIds: ${JSON.stringify([r1, r2])}`);
      const frames = conn.framesAfter(0, (f) => f.dir === "agent" && f.seq <= idle.seq && "method" in f.msg && f.msg.params?.sessionId === sid);
      const updates = updatesIn(frames);
      const users = updates.filter((u) => u.sessionUpdate.startsWith("user_message"));
      const u1 = users.find((u) => u.messageId === r1.messageId);
      const u2 = users.find((u) => u.messageId === r2.messageId);
      c.check(u1 && u2 && u1.seq < u2.seq, `user messages in the order sent (first, then second): ${JSON.stringify(users.map((u) => [u.messageId, textOf(u)]))}`);
      c.equal(agentText(users.filter((u) => u.messageId === r2.messageId), "user_message"), second, "text of the second user message");
      const firstIdle = frames.find((f) => isState(f, sid, "idle"));
      c.check(secondRequest && firstIdle && secondRequest.seq < firstIdle.seq, "the second prompt was sent while the first was running (before its idle)");
      const allowed = updates.find((u) => u.sessionUpdate === "agent_message_chunk" && textOf(u) === "allowed");
      const secondStart = updates.find((u) => u.sessionUpdate === "agent_message_chunk" && textOf(u) === "second ");
      c.check(allowed && secondStart && allowed.seq < secondStart.seq, `the first turn's output ('allowed') precedes the second's (${frames.map(labelOf).join(", ")})`);
      const runningForSecond = frames.find((f) => isState(f, sid, "running") && f.seq > allowed?.seq);
      c.check(runningForSecond && runningForSecond.seq < secondText.seq, "state_update running for the second prompt's work");
      c.equal(idle.msg.params.update.stopReason, "end_turn", "stopReason of the last idle");
      const idles = frames.filter((f) => isState(f, sid, "idle"));
      c.note(`idle updates: ${idles.map(labelOf).join(", ")} (an idle between the queued turns is the agent's choice)`);
      for (const u of updates.filter((x) => x.sessionUpdate.includes("message"))) c.check(u.messageId, `${u.sessionUpdate} #${u.seq} has a messageId`);
      await checkQuiet(c, conn, sid, idle, "queued prompts");
    });
  },
);

// ---------------------------------------------------------------------------
// Authentication

scenario(
  "auth",
  "tour: authMethods in the v2 shape (methodId, type; api-key of type agent); session/new before auth/login -> -32000; auth/login api-key -> {} and session/new and a turn work; auth/logout -> {} and session/new -> -32000 again",
  async ({ fx, c }) => {
    await fx.run(
      "tour",
      async (conn) => {
        const init = await conn.initialize();
        const wire = conn.answerTo(conn.lastRequest("initialize"))?.msg.result;
        const methods = wire?.authMethods ?? [];
        c.check(methods.length > 0, `tour declares authMethods: ${JSON.stringify(wire)}`);
        for (const m of methods) c.check(typeof m.methodId === "string" && typeof m.type === "string" && !("id" in m), `auth method in the v2 shape (methodId, type, no id): ${JSON.stringify(m)}`);
        c.check(methods.some((m) => m.methodId === "api-key" && m.type === "agent"), `an api-key method of type agent: ${JSON.stringify(methods)}`);
        c.check(init.authMethods?.length === methods.length, "the SDK parsed every auth method");
        const gated = await conn.call("session/new", { cwd: fx.workdir });
        c.equal(gated.error?.code, AUTH_REQUIRED, `session/new before auth/login (${describeError(gated.error ?? "no error")})`);
        const login = await conn.call("auth/login", { methodId: "api-key" });
        c.check(!login.error && login.answer && "result" in login.answer.msg, `auth/login api-key succeeds: ${login.error ? describeError(login.error) : JSON.stringify(login.answer?.msg)}`);
        const session = await conn.newSession();
        const turn = await promptTurn(conn, session.sessionId, "hi", () => session.prompt("hi"));
        checkTurn(c, "signed in", turn);
        const logout = await conn.call("auth/logout", {});
        c.check(!logout.error && logout.answer && "result" in logout.answer.msg, `auth/logout succeeds: ${logout.error ? describeError(logout.error) : JSON.stringify(logout.answer?.msg)}`);
        const again = await conn.call("session/new", { cwd: fx.workdir });
        c.equal(again.error?.code, AUTH_REQUIRED, "session/new after auth/logout");
      },
      { env: { REF_AGENT_AUTH: "1" } },
    );
    await fx.run("echo", async (conn) => {
      const init = await conn.initialize();
      c.check(!init.authMethods?.length, `echo declares no auth methods (clients must then not call auth/login): ${JSON.stringify(init.authMethods)}`);
    });
  },
);

scenario(
  "coder_starts_anywhere",
  "coder with no environment but PATH (HOME and XDG_CONFIG_HOME in the scenario's directory): the v2 initialize is answered in the v2 shape with a sign-in (methodId; type agent or terminal); session/new -> -32000 naming what to do",
  async ({ fx, c }) => {
    // REF_AGENT_AUTH: the reference agent (every example in prove.mjs) then needs a sign-in too.
    const env = { HOME: join(fx.dataDir, "home"), XDG_CONFIG_HOME: join(fx.dataDir, "config"), REF_AGENT_AUTH: "1" };
    await fx.run(
      "coder",
      async (conn) => {
        await conn.initialize();
        const wire = conn.answerTo(conn.lastRequest("initialize"))?.msg.result;
        checkV2InitResult(c, wire, "initialize with no environment");
        const methods = wire?.authMethods ?? [];
        c.check(
          methods.some((m) => typeof m.methodId === "string" && ["agent", "terminal"].includes(m.type)),
          `a sign-in of type agent or terminal: ${JSON.stringify(methods)}`,
        );
        const refused = await conn.call("session/new", { cwd: fx.workdir });
        c.equal(refused.error?.code, AUTH_REQUIRED, `session/new before a sign-in (${describeError(refused.error ?? "no error")})`);
        const message = refused.answer?.msg.error?.message ?? "";
        if (!fx.single) {
          for (const words of ["--sign-in", "ACP_MODEL"]) c.check(message.includes(words), `the -32000 message names ${words}: ${JSON.stringify(message)}`);
        }
      },
      { env, bare: true },
    );
  },
);

runCli({
  script: "v2/interop.mjs",
  targetArg: "examples-dir | agent",
  title: "ACP protocol v2 interop",
  targetLabel: "agent(s)",
  fixture: (target, validator, checks) => new Fixture(target, validator, checks),
  validator: () => new V2Validator(),
  rawLimit: 400,
  describeError,
});

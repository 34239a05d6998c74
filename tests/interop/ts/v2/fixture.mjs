// The client side of the protocol v2 drivers (interop.mjs): the frame validator for the
// SDK's v2 schema with the checks the open unions of that schema cannot express, and the
// fixture that spawns agents and connects the SDK's experimental v2 client to them.
//
// SDK v2 client API used (@agentclientprotocol/sdk 2.4.0, `./experimental/v2`, from its d.ts):
//   acp.client({name}) -> ClientApp; .onRequest("session/request_permission", ({params,
//     signal, agent}) => RequestPermissionResponse); .onNotification("session/update", …)
//   app.connectWith(acp.ndJsonStream(out, in), async (ctx) => …): ctx is a ClientContext,
//     the connection closes when the callback settles
//   ctx.request("initialize", {protocolVersion, info, capabilities}): the SDK always writes
//     protocolVersion 2 and rejects an answer with any other version (so "asks 3" is a raw
//     frame, see interop.mjs)
//   ctx.buildSession(cwd).start() -> ActiveSession (session/new): .sessionId,
//     .prompt(text) -> PromptResponse {messageId} once the agent *inserted* the message (a held
//     prompt stays pending), .nextUpdate() -> {kind: "session_update", update} | {kind:
//     "stop", stopReason} (every idle state_update is a stop), .readTextUntilIdle(),
//     .dispose()
//   ctx.request("session/list" | "session/resume" | "session/close" | "auth/login" |
//     "auth/logout", params), ctx.notify("session/cancel", {sessionId}). Resumed sessions have
//     no ActiveSession (attachSession is private): their updates are read from the tap.
//   A -32002 answer to session/close resolves as success in the SDK (idempotent close).

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { spawnAgent } from "../lib/agent.mjs";
import { ScenarioFailure, WAIT_MS } from "../lib/harness.mjs";
import { FrameValidator } from "../lib/validator.mjs";

const EXE = process.platform === "win32" ? ".exe" : "";

/** v1 `sessionUpdate` tags that v2 removed; the v2 schema's open "other" branch accepts them. */
const V1_ONLY_UPDATES = new Map([
  ["tool_call", "v2 creates a tool call with its first tool_call_update"],
  ["plan", "v2 sends plan_update {plan: {type: \"items\", planId, entries}}"],
  ["current_mode_update", "v2 reports modes as config options (config_option_update)"],
]);

/**
 * Tags agent-client-protocol-schema 1.20.0 (the Rust crate) defines but SDK 2.4.0's schema does
 * not: valid as the schema's "other" (future) variant, so noted rather than failed.
 */
export const RUST_ONLY_UPDATES = new Set(["replay_complete", "plan_removed", "subagent_update", "session_message", "session_message_chunk"]);

/** FrameValidator on the SDK's schema/v2/schema.json, plus what its open unions let through. */
export class V2Validator extends FrameValidator {
  constructor() {
    super({ schemaVersion: "v2" });
    this.notes = new Set();
  }

  validateAgentFrame(msg, methodOfId) {
    const problems = super.validateAgentFrame(msg, methodOfId);
    if (msg?.method !== "session/update") return problems;
    const tag = msg.params?.update?.sessionUpdate;
    if (typeof tag !== "string" || this.updateVariants.has(tag) || tag.startsWith("_")) return problems;
    if (V1_ONLY_UPDATES.has(tag)) problems.push(`v1 session update '${tag}' on a v2 connection (${V1_ONLY_UPDATES.get(tag)})`);
    else if (RUST_ONLY_UPDATES.has(tag)) this.notes.add(`'${tag}' is not in SDK ${this.sdkVersion}'s schema (the Rust schema crate defines it); accepted as a future variant`);
    else problems.push(`session update '${tag}' is neither in the v2 schema nor '_'-prefixed (unknown non-'_' values are reserved for future ACP versions)`);
    return problems;
  }
}

/** A short label for an agent frame, for sequences in failure messages. */
export function labelOf(f) {
  const m = f.msg;
  if (m.method === "session/update") {
    const u = m.params.update;
    const extra =
      u.sessionUpdate === "state_update"
        ? ` ${u.state}${u.stopReason ? "/" + u.stopReason : ""}`
        : u.sessionUpdate.endsWith("_chunk") && u.content?.type === "text"
          ? ` ${JSON.stringify(u.content.text)}`
          : u.status
            ? ` ${u.status}`
            : "";
    return `${u.sessionUpdate}${extra}`;
  }
  if ("method" in m) return `${"id" in m ? "request" : "notification"} ${m.method}`;
  return "error" in m ? `error ${m.error.code}` : "response";
}

export const isUpdate = (f, sid, tag) => f.dir === "agent" && f.msg?.method === "session/update" && f.msg.params?.sessionId === sid && (tag === undefined || f.msg.params.update?.sessionUpdate === tag);
export const isState = (f, sid, state, stopReason) =>
  isUpdate(f, sid, "state_update") && f.msg.params.update.state === state && (stopReason === undefined || f.msg.params.update.stopReason === stopReason);
export const textOf = (u) => (u?.content?.type === "text" ? u.content.text : Array.isArray(u?.content) ? u.content.filter((b) => b.type === "text").map((b) => b.text).join("") : undefined);
const MESSAGE_TAGS = new Set(["user_message", "user_message_chunk", "agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk"]);
export const isMessage = (u) => MESSAGE_TAGS.has(u?.sessionUpdate);

/** One agent process and the SDK client connected to it. */
class Connection {
  constructor(fx, agent, name) {
    this.fx = fx;
    this.agent = agent;
    this.name = name;
    this.tap = agent.tap;
    this.updates = []; // session/update params, as the SDK's handler received them (zod-parsed)
    this.permissions = []; // {params, answeredAt}
    this.ctx = undefined;
  }

  /** initialize through the SDK (it always asks for protocol version 2). */
  async initialize() {
    const res = await this.ctx.request("initialize", { protocolVersion: 2, info: { name: "acp-interop-v2", version: "0.0.0" }, capabilities: {} });
    this.fx.checks.equal(res.protocolVersion, 2, `${this.name}: initialize protocolVersion`);
    return res;
  }

  async newSession() {
    const session = await this.ctx.buildSession(this.fx.workdir).start();
    this.fx.checks.check(typeof session.sessionId === "string" && session.sessionId.length > 0, `${this.name}: session/new returned a sessionId`);
    return session;
  }

  /** Frames of the tap (both directions) with seq > `after` for which `pred` holds. */
  framesAfter(after, pred = () => true) {
    return this.tap.frames.filter((f) => f.seq > after && f.msg !== undefined && pred(f));
  }

  /** Waits for a frame (already seen or future) matching `pred`. */
  waitFor(pred, what, ms = WAIT_MS) {
    return this.tap.waitFor(pred, what, ms).catch((e) => {
      throw new ScenarioFailure(`${this.name}: ${e.message}`);
    });
  }

  /** The client request frame with this method whose params match, the latest if several. */
  lastRequest(method, paramsPred = () => true) {
    return this.tap.clientFrames().filter((f) => f.msg.method === method && "id" in f.msg && paramsPred(f.msg.params ?? {})).at(-1);
  }

  /** The agent's answer frame to a client request frame. */
  answerTo(request) {
    const key = JSON.stringify(request.msg.id);
    return this.tap.agentFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === key);
  }

  /** Sends a request through the SDK and returns {result | error, request frame, answer frame}. */
  async call(method, params) {
    const mark = this.tap.seq;
    let result, error;
    try {
      result = await this.ctx.request(method, params);
    } catch (e) {
      error = e;
    }
    const request = this.tap.clientFrames().find((f) => f.seq >= mark && f.msg.method === method && "id" in f.msg);
    return { result, error, request, answer: request && this.answerTo(request) };
  }
}

/** One scenario's agents, data directory and SDK clients. */
export class Fixture {
  /** `target`: a directory of example binaries, or one agent (a binary or a .mjs file). */
  constructor(target, validator, checks) {
    this.target = target;
    this.single = !statSync(target, { throwIfNoEntry: false })?.isDirectory();
    this.validator = validator;
    this.checks = checks;
    this.agents = [];
    this.dataDir = mkdtempSync(join(tmpdir(), "acp-interop-v2-"));
    this.workdir = this.dataDir;
    /** Answers a permission request: (params, {conn, signal, agent}) => RequestPermissionResponse. */
    this.onPermission = ({ options }) => ({ outcome: { outcome: "selected", optionId: options.find((o) => o.kind === "allow_once").optionId } });
  }

  binary(example) {
    return this.single ? this.target : join(this.target, `${example}${EXE}`);
  }

  /**
   * Spawns `example` (ignored for a single-agent target) without connecting a client; its
   * frames are validated by `validator` (default: the v2 one). `env` is added to its
   * environment, to none but `PATH` when `bare` (see spawnAgent).
   */
  spawn(example, env = {}, validator = this.validator, { bare = false } = {}) {
    const agent = spawnAgent(this.binary(example), validator, { env: { ACP_DATA_DIR: this.dataDir, ...env }, bare });
    agent.name = this.single ? example : undefined;
    this.agents.push(agent);
    return agent;
  }

  /**
   * Spawns `example`, connects the SDK v2 client and runs `body(conn)` inside connectWith; then
   * closes the agent's stdin and checks it exits with status 0.
   */
  async run(example, body, { env = {}, bare = false } = {}) {
    const agent = this.spawn(example, env, this.validator, { bare });
    const conn = new Connection(this, agent, this.single ? "agent" : example);
    const app = acp.client({ name: "acp-interop-v2" });
    app.onNotification("session/update", ({ params }) => {
      conn.updates.push(params);
    });
    app.onRequest("session/request_permission", async ({ params, signal, agent: ctx }) => {
      const entry = { params, seq: conn.tap.seq };
      conn.permissions.push(entry);
      const answer = await this.onPermission(params, { conn, signal, ctx });
      entry.answer = answer;
      return answer;
    });
    try {
      return await app.connectWith(agent.stream, async (ctx) => {
        conn.ctx = ctx;
        return body(conn);
      });
    } catch (e) {
      // The SDK closes the connection when it cannot use the initialize answer: say why.
      const init = conn.lastRequest("initialize");
      const version = init && conn.answerTo(init)?.msg.result?.protocolVersion;
      if (version !== undefined && version !== 2) throw new ScenarioFailure(`${conn.name}: the agent answered initialize (asking for 2) with protocolVersion ${version}: it does not negotiate v2 (the SDK's v2 client closed the connection: ${e?.name ?? "error"})`);
      throw e;
    } finally {
      const { code, signal, error } = await agent.shutdown(10_000);
      this.checks.check(code === 0, `${conn.name}: agent should exit with status 0 after stdin EOF, got code=${code} signal=${signal}${error ? " error=" + error : ""}`);
      for (const n of this.validator.notes) this.checks.note(n);
      this.validator.notes.clear();
    }
  }

  cleanup() {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

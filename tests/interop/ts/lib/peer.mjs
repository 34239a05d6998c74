// The client side shared by the scripts that drive several example agents from one scenario
// (surface.mjs, auth_ext.mjs): a fixture owning the agent processes and a temporary
// ACP_DATA_DIR, and a `Peer` per connected agent that sends requests through the official SDK
// and reads each exchange back off the raw tap (lib/agent.mjs) — the request frame, the
// agent's answer frame and every agent frame in between.

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { spawnAgent } from "./agent.mjs";
import { ScenarioFailure, WAIT_MS, describeError, sleep, withTimeout } from "./harness.mjs";

const EXE = process.platform === "win32" ? ".exe" : "";

/**
 * `validator` for the tap, also accepting the result of an extension method (a method whose
 * name starts with `_`): the schema's `ExtResponse` is any JSON value, so such a result has no
 * definition to check beyond the envelope (which the base validator still checks). Every other
 * frame is validated exactly as before.
 */
export function extensionAware(validator) {
  return {
    sdkVersion: validator.sdkVersion,
    validateAgentFrame(msg, methodOfId) {
      const problems = validator.validateAgentFrame(msg, methodOfId);
      const isResult = msg && typeof msg === "object" && !Object.hasOwn(msg, "method") && Object.hasOwn(msg, "result");
      const method = isResult ? methodOfId(msg.id) : undefined;
      if (typeof method !== "string" || !method.startsWith("_")) return problems;
      return problems.filter((p) => p !== `no schema definition for the result of ${method}`);
    },
  };
}

/**
 * Client capabilities: `terminalAuth` (auth.terminal), `booleanConfig`
 * (session.configOptions.boolean), `elicitation` (an ElicitationCapabilities object, e.g.
 * `{ form: {} }`), `terminal`.
 */
export function clientCapabilities({ terminalAuth = false, booleanConfig = false, elicitation, terminal = false } = {}) {
  const caps = { fs: { readTextFile: false, writeTextFile: false }, terminal };
  if (terminalAuth) caps.auth = { terminal: true };
  if (booleanConfig) caps.session = { configOptions: { boolean: {} } };
  if (elicitation !== undefined) caps.elicitation = elicitation;
  return caps;
}

/** `v` with every object's keys sorted: deep equality as JSON, whatever the key order. */
export function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canon(v[k])]),
    );
  }
  return v;
}

/** `c.equal` on canonical JSON (key order aside). */
export const same = (c, actual, expected, what) => c.equal(canon(actual), canon(expected), what);

/** One agent frame as a short label: `update <kind>`, `request <method>`, `answer …`. */
export function labelOf(f) {
  const m = f.msg;
  if (m.method === "session/update") return `update ${m.params?.update?.sessionUpdate}`;
  if ("method" in m) return `${"id" in m ? "request" : "notification"} ${m.method}`;
  if ("error" in m) return `answer error ${m.error?.code}`;
  if (m.result && typeof m.result === "object" && "stopReason" in m.result) return `answer ${m.result.stopReason}`;
  return "answer";
}

/** The session/update params among frames, optionally of one kind. */
export function updatesIn(frames, kind) {
  return frames
    .filter((f) => f.msg.method === "session/update" && (kind === undefined || f.msg.params.update.sessionUpdate === kind))
    .map((f) => f.msg.params.update);
}

/** The text of the agent_message_chunks among frames. */
export function messageText(frames) {
  return updatesIn(frames, "agent_message_chunk")
    .map((u) => (u.content?.type === "text" ? u.content.text : `[${u.content?.type}]`))
    .join("");
}

export class Fixture {
  /** `clientName`: the SDK client's name and the `clientInfo.name` it sends. */
  constructor(examplesDir, validator, checks, clientName) {
    this.examplesDir = examplesDir;
    this.validator = extensionAware(validator);
    this.checks = checks;
    this.clientName = clientName;
    this.dataDir = mkdtempSync(join(tmpdir(), `${clientName}-`));
    this.agents = [];
  }

  binary(example) {
    return join(this.examplesDir, `${example}${EXE}`);
  }

  /**
   * Spawns the example on the scenario's data dir and runs `body(peer)` inside connectWith.
   * `handlers(app, peer)` registers client handlers beyond session/update (which every peer
   * records in `peer.updates`); `env` is added to its environment, to none but `PATH` when
   * `bare` (see spawnAgent). Afterwards the agent's stdin is closed and it must exit 0.
   */
  async run(example, { name = example, handlers, env = {}, bare = false } = {}, body) {
    const binary = this.binary(example);
    this.checks.must(existsSync(binary), `example binary not found: ${binary} (cargo build --example ${example})`);
    const agent = spawnAgent(binary, this.validator, { env: { ACP_DATA_DIR: this.dataDir, ...env }, bare });
    agent.name = name;
    this.agents.push(agent);
    const peer = new Peer(this, name, agent);
    const app = acp.client({ name: this.clientName });
    app.onNotification("session/update", ({ params }) => {
      peer.updates.push(params);
    });
    if (handlers) handlers(app, peer);
    try {
      return await app.connectWith(agent.stream, (ctx) => {
        peer.ctx = ctx;
        return body(peer);
      });
    } finally {
      const { code, signal, error } = await agent.shutdown(10_000);
      this.checks.check(
        code === 0,
        `${name}: the agent should exit with status 0 after stdin EOF, got code=${code} signal=${signal}${error ? " error=" + error : ""}`,
      );
    }
  }

  cleanup() {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** One connected agent process: the SDK context, the raw tap and what the SDK delivered. */
export class Peer {
  constructor(fx, name, agent) {
    this.fx = fx;
    this.c = fx.checks;
    this.name = name;
    this.agent = agent;
    this.tap = agent.tap;
    this.ctx = undefined;
    /** Every session/update params handed to the SDK client's notification handler, in order. */
    this.updates = [];
  }

  /**
   * Sends a request through the SDK and reads it back off the tap:
   * `{ result, error, request, answer, between }`, where `between` is every agent frame
   * strictly between the request and its answer.
   */
  async exchange(method, params, what = method) {
    const mark = this.tap.seq;
    let result;
    let error;
    try {
      result = await withTimeout(this.ctx.request(method, params), WAIT_MS, `${this.name}: ${what}`);
    } catch (e) {
      if (e instanceof ScenarioFailure) throw e;
      error = e;
    }
    const request = this.tap.clientFrames().find((f) => f.seq >= mark && f.msg.method === method && "id" in f.msg);
    if (!request) throw new ScenarioFailure(`${this.name}: ${what}: no ${method} request on the tap (${describeError(error)})`);
    const key = JSON.stringify(request.msg.id);
    const answer = this.tap.agentFrames().find((f) => f.seq > request.seq && !("method" in f.msg) && JSON.stringify(f.msg.id) === key);
    if (!answer) throw new ScenarioFailure(`${this.name}: ${what}: no answer on the tap (${describeError(error)})`);
    const between = this.tap.agentFrames().filter((f) => f.seq > request.seq && f.seq < answer.seq);
    return { result, error, request, answer, between };
  }

  /** A request that must succeed; returns the exchange with `wire`, the result on the wire. */
  async call(method, params, what = method) {
    const ex = await this.exchange(method, params, what);
    if (ex.error) throw new ScenarioFailure(`${this.name}: ${what}: expected a result, got ${describeError(ex.error)}`);
    ex.wire = ex.answer.msg.result;
    return ex;
  }

  /**
   * A request that must fail with `code`, as the SDK reports it (a RequestError) and on the
   * wire; returns the exchange with the wire's error `message`.
   */
  async fails(method, params, code, what = method) {
    const ex = await this.exchange(method, params, what);
    if (!ex.error) throw new ScenarioFailure(`${this.name}: ${what}: expected error ${code}, got the result ${JSON.stringify(ex.result)}`);
    this.c.check(ex.error instanceof acp.RequestError, `${this.name}: ${what}: the SDK rejects with a RequestError, got ${describeError(ex.error, { errorObjects: false })}`);
    this.c.equal(ex.error.code, code, `${this.name}: ${what}: error code (SDK)`);
    this.c.equal(ex.answer.msg.error?.code, code, `${this.name}: ${what}: error code (wire)`);
    ex.message = ex.answer.msg.error?.message ?? "";
    return ex;
  }

  /**
   * `initialize` with these client capabilities (`null`: none sent); returns the exchange.
   */
  async initialize(caps = clientCapabilities()) {
    const params = { protocolVersion: acp.PROTOCOL_VERSION, clientInfo: { name: this.fx.clientName, version: "0.0.0" } };
    if (caps !== null) params.clientCapabilities = caps;
    const ex = await this.call("initialize", params);
    this.c.equal(ex.wire.protocolVersion, acp.PROTOCOL_VERSION, `${this.name}: initialize.protocolVersion`);
    return ex;
  }

  /** `authenticate` with tour's agent method, which must answer `{}`. */
  async authenticate(methodId = "api-key") {
    const { result, wire } = await this.call("authenticate", { methodId }, `authenticate ${methodId}`);
    this.c.equal(result, {}, `${this.name}: authenticate ${methodId} result (SDK)`);
    this.c.equal(wire, {}, `${this.name}: authenticate ${methodId} result (wire)`);
  }

  /** `session/new` in the data dir; returns the exchange with `sessionId`. */
  async newSession() {
    const ex = await this.call("session/new", { cwd: this.fx.dataDir, mcpServers: [] });
    this.c.must(typeof ex.wire?.sessionId === "string" && ex.wire.sessionId.length > 0, `${this.name}: session/new returned a sessionId`);
    ex.sessionId = ex.wire.sessionId;
    return ex;
  }

  /**
   * One `session/prompt` (text or content blocks) that must succeed; returns the exchange
   * with `text` (its message chunks) and `labels` (its frames, answer included).
   */
  async prompt(sessionId, content, what) {
    const prompt = typeof content === "string" ? [{ type: "text", text: content }] : content;
    const ex = await this.call("session/prompt", { sessionId, prompt }, what ?? `session/prompt ${JSON.stringify(typeof content === "string" ? content : prompt.map((b) => b.type))}`);
    ex.text = messageText(ex.between);
    ex.labels = [...ex.between, ex.answer].map(labelOf);
    return ex;
  }

  /**
   * Whether the SDK handed the client's session/update handler an update matching `pred`
   * (`pred(params)`) within WAIT_MS: the tap sees a frame before the SDK dispatches it.
   */
  async delivered(pred) {
    const deadline = Date.now() + WAIT_MS;
    while (!this.updates.some(pred)) {
      if (Date.now() > deadline) return false;
      await sleep(5);
    }
    return true;
  }
}

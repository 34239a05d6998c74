#!/usr/bin/env node
// Session history through the official TypeScript client SDK (@agentclientprotocol/sdk):
// drives the `echo` example, which records its sessions with no code of its own (README,
// "Session history, recorded for you"), across agent restarts on one shared store.
//
// Each scenario gets one temporary ACP_DATA_DIR (the store lives in
// $ACP_DATA_DIR/echo/sessions.sqlite3) and starts fresh agent processes on it, one after the
// other: "A" records, "B" (and "C") start on the same store as if the editor had been
// restarted. The SDK 2.x has no `ClientSideConnection` (removed in 2.0; see the SDK's
// MIGRATION_STABLE_UNSTABLE.md): the client is `acp.client()` + `connectWith`, and every call
// is the typed `ctx.request(acp.methods.agent.session.<list|load|resume|close|delete>, …)`,
// all of which are in the SDK's *stable* v1 profile. Note that the SDK turns a `-32002`
// answer to session/close and session/delete into `{}`, so those answers are also checked on
// the raw tap (lib/agent.mjs). Every agent frame is validated against the SDK's JSON Schema
// (lib/validator.mjs), and every agent must exit 0 once its stdin closes (unless killed).
//
// usage: node history.mjs <echo-binary> [scenario ...]
//        node history.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { spawnAgent } from "./lib/agent.mjs";
import { canon } from "./lib/peer.mjs";
import { ScenarioFailure, WAIT_MS, describeError, runCli, scenario, sleep, withTimeout } from "./lib/harness.mjs";

const SESSION = acp.methods.agent.session;
const NOT_FOUND = -32002;

// ---------------------------------------------------------------------------
// JSON helpers

const textOf = (update) => (update?.content?.type === "text" ? update.content.text : undefined);

/** The `session/update` params the runtime records for a one-text-block prompt. */
const userChunk = (sessionId, text) => ({ sessionId, update: { sessionUpdate: "user_message_chunk", content: { type: "text", text } } });

/** A short label per update, for readable mismatch reports. */
function labelOf(params) {
  const u = params.update;
  const t = textOf(u);
  return `${u.sessionUpdate}${t !== undefined ? " " + JSON.stringify(t) : ""}`;
}

// ---------------------------------------------------------------------------
// Client fixture: one temporary ACP_DATA_DIR shared by the agent processes of the scenario.

class Fixture {
  constructor(binary, validator, checks) {
    this.binary = binary;
    this.validator = validator;
    this.checks = checks;
    this.dataDir = mkdtempSync(join(tmpdir(), "acp-interop-history-"));
    this.agents = [];
    this.started = Date.now();
  }

  /**
   * Spawns a fresh agent on the shared data dir and runs `body(peer)` inside connectWith
   * (see Peer). Afterwards the agent's stdin is closed and it must exit with status 0, unless
   * the body killed it (`peer.kill()`).
   */
  async run(name, body, { binary = this.binary, env = {} } = {}) {
    this.checks.must(existsSync(binary), `agent binary not found: ${binary} (cargo build --examples)`);
    const agent = spawnAgent(binary, this.validator, { env: { ACP_DATA_DIR: this.dataDir, ...env } });
    agent.name = name;
    this.agents.push(agent);
    const peer = new Peer(this, name, agent);
    const app = acp.client({ name: "acp-interop-history" });
    app.onNotification("session/update", ({ params }) => {
      peer.updates.push(params);
      if (peer.onUpdate) peer.onUpdate(params);
    });
    let bodyDone;
    try {
      return await app.connectWith(agent.stream, (ctx) => {
        peer.ctx = ctx;
        bodyDone = Promise.resolve().then(() => body(peer));
        return bodyDone;
      });
    } catch (e) {
      // Once the body killed the agent, connectWith rejects as the connection goes down
      // (possibly before the body has finished): the body's own outcome is what counts.
      if (!(peer.killed && bodyDone && /connection closed/i.test(String(e?.message)))) throw e;
      return await bodyDone;
    } finally {
      const { code, signal, error } = await agent.shutdown(10_000);
      if (peer.killed) {
        this.checks.check(signal === "SIGKILL", `agent ${name} should have died of SIGKILL, got code=${code} signal=${signal}`);
      } else {
        this.checks.check(
          code === 0,
          `agent ${name} should exit with status 0 after stdin EOF, got code=${code} signal=${signal}${error ? " error=" + error : ""}`,
        );
      }
    }
  }

  /** A subdirectory of the data dir, created (a session's cwd). */
  dir(name) {
    const d = join(this.dataDir, name);
    mkdirSync(d, { recursive: true });
    return d;
  }

  cleanup() {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** One connected agent process: the SDK context, the raw tap and what the SDK delivered. */
class Peer {
  constructor(fx, name, agent) {
    this.fx = fx;
    this.c = fx.checks;
    this.name = name;
    this.agent = agent;
    this.ctx = undefined;
    /** Every session/update params handed to the SDK client's notification handler, in order. */
    this.updates = [];
    this.onUpdate = undefined;
    this.killed = false;
  }

  /** Awaits an SDK request that must succeed; an error response fails the scenario. */
  async call(method, params, what = method) {
    try {
      return await withTimeout(this.ctx.request(method, params), WAIT_MS, `${this.name}: ${what}`);
    } catch (e) {
      if (e instanceof ScenarioFailure) throw e;
      throw new ScenarioFailure(`${this.name}: ${what}: expected a result, got ${describeError(e)}`);
    }
  }

  /** Awaits an SDK request that must fail; returns the RequestError. */
  async callFails(method, params, what = method) {
    let res;
    try {
      res = await withTimeout(this.ctx.request(method, params), WAIT_MS, `${this.name}: ${what}`);
    } catch (e) {
      if (e instanceof ScenarioFailure) throw e;
      this.c.check(e instanceof acp.RequestError, `${this.name}: ${what}: the SDK rejects with a RequestError, got ${describeError(e, { errorObjects: false })}`);
      return e;
    }
    throw new ScenarioFailure(`${this.name}: ${what}: expected an error, got the result ${JSON.stringify(res)}`);
  }

  /** The agent's raw answer frame (on the tap) to the last request of `method` the client sent. */
  lastAnswer(method) {
    const req = this.agent.tap
      .clientFrames()
      .filter((f) => f.msg.method === method && "id" in f.msg)
      .at(-1);
    if (!req) throw new ScenarioFailure(`${this.name}: no ${method} request on the tap`);
    const key = JSON.stringify(req.msg.id);
    const answer = this.agent.tap.agentFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === key);
    if (!answer) throw new ScenarioFailure(`${this.name}: no answer to ${method} on the tap`);
    return { request: req, answer };
  }

  /** The session/update frames on the tap strictly between two frames (by seq). */
  wireUpdatesBetween(from, to) {
    return this.agent.tap
      .agentFrames()
      .filter((f) => f.seq > from.seq && f.seq < to.seq && f.msg.method === "session/update")
      .map((f) => f.msg.params);
  }

  async initialize() {
    const res = await this.call("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "acp-interop-history", version: "0.0.0" },
    });
    this.c.equal(res.protocolVersion, acp.PROTOCOL_VERSION, `${this.name}: initialize.protocolVersion`);
    return res;
  }

  async newSession(cwd) {
    const res = await this.call(SESSION.new, { cwd, mcpServers: [] }, "session/new");
    this.c.must(typeof res.sessionId === "string" && res.sessionId.length > 0, `${this.name}: session/new returned a sessionId`);
    return res.sessionId;
  }

  /**
   * One prompt turn that must end `end_turn` with the echo of `text` as its message chunks.
   * Appends the user's chunk and the turn's updates (as the SDK delivered them) to
   * `conversation` when given: the record a later session/load must replay.
   */
  async prompt(sessionId, text, conversation) {
    const before = this.updates.length;
    const res = await this.call(SESSION.prompt, { sessionId, prompt: [{ type: "text", text }] }, `session/prompt ${JSON.stringify(text)}`);
    this.c.equal(res.stopReason, "end_turn", `${this.name}: stopReason of ${JSON.stringify(text)}`);
    // The wire (tap) has the turn's frames before its answer; give the SDK's notification
    // handlers a turn of the event loop to have delivered all of them.
    await sleep(0);
    const turn = this.updates.slice(before);
    this.c.check(
      turn.every((u) => u.sessionId === sessionId),
      `${this.name}: every update during ${JSON.stringify(text)} is for its session: ${JSON.stringify(turn.map((u) => u.sessionId))}`,
    );
    const echoed = turn.filter((u) => u.update.sessionUpdate === "agent_message_chunk").map((u) => textOf(u.update)).join("");
    this.c.equal(echoed, text, `${this.name}: the message chunks of ${JSON.stringify(text)} add up to the prompt`);
    // The SDK delivered exactly what was on the wire for this turn.
    const { request, answer } = this.lastAnswer(SESSION.prompt);
    this.c.equal(canon(turn), canon(this.wireUpdatesBetween(request, answer)), `${this.name}: updates the SDK delivered vs the wire during ${JSON.stringify(text)}`);
    if (conversation) conversation.push(userChunk(sessionId, text), ...turn);
    return turn;
  }

  /** session/list pages until `nextCursor` is absent: { sessions, pages }. */
  async listAll(params = {}) {
    const sessions = [];
    const pages = [];
    let cursor;
    for (let page = 0; ; page++) {
      if (page >= 20) throw new ScenarioFailure(`${this.name}: session/list still had a nextCursor after 20 pages`);
      const req = { ...params };
      if (cursor !== undefined) req.cursor = cursor;
      const res = await this.call(SESSION.list, req, `session/list ${JSON.stringify(req)}`);
      this.c.must(Array.isArray(res.sessions), `${this.name}: session/list answers a sessions array: ${JSON.stringify(res)}`);
      sessions.push(...res.sessions);
      pages.push({ count: res.sessions.length, nextCursor: res.nextCursor });
      if (res.nextCursor === undefined || res.nextCursor === null) break;
      cursor = res.nextCursor;
    }
    return { sessions, pages };
  }

  /**
   * session/load: { response, replayed } where `replayed` is what the SDK's notification
   * handler received from sending the load to its answer. Checks on the tap that the wire had
   * exactly these updates between the request and the answer.
   */
  async load(sessionId, cwd) {
    const before = this.updates.length;
    let answered = false;
    const late = [];
    this.onUpdate = (params) => {
      if (answered) late.push(params);
    };
    const p = this.ctx.request(SESSION.load, { sessionId, cwd, mcpServers: [] });
    p.then(
      () => (answered = true),
      () => (answered = true),
    );
    let response;
    try {
      response = await withTimeout(p, WAIT_MS, `${this.name}: session/load`);
    } catch (e) {
      if (e instanceof ScenarioFailure) throw e;
      throw new ScenarioFailure(`${this.name}: session/load: expected a result, got ${describeError(e)}`);
    } finally {
      await sleep(0);
      this.onUpdate = undefined;
    }
    const replayed = this.updates.slice(before);
    const { request, answer } = this.lastAnswer(SESSION.load);
    const wire = this.wireUpdatesBetween(request, answer);
    this.c.equal(canon(replayed), canon(wire), `${this.name}: updates the SDK delivered during session/load vs the wire before the load's answer`);
    this.c.equal(late.map(labelOf), [], `${this.name}: updates the SDK handed over only after the load's promise had resolved`);
    return { response, replayed };
  }

  /** Kills the agent process (SIGKILL) and waits for it to die. */
  async kill() {
    this.killed = true;
    this.agent.child.kill("SIGKILL");
    await this.agent.exit;
  }
}

/** The session with this id in a session/list answer, or undefined. */
const findSession = (sessions, id) => sessions.find((s) => s.sessionId === id);

/** `updatedAt` is an ISO 8601 time within this scenario (give or take a few seconds). */
function checkUpdatedAt(c, fx, info, what) {
  const t = Date.parse(info?.updatedAt ?? "");
  c.check(
    typeof info?.updatedAt === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(info.updatedAt) && !Number.isNaN(t),
    `${what}: updatedAt is an ISO 8601 time: ${JSON.stringify(info?.updatedAt)}`,
  );
  if (!Number.isNaN(t)) {
    c.check(t >= fx.started - 5_000 && t <= Date.now() + 5_000, `${what}: updatedAt ${info.updatedAt} lies within the scenario's run`);
  }
}

/** Loads the session in `peer` and checks the replay is exactly `conversation`. */
async function loadAndCompare(c, peer, sessionId, cwd, conversation) {
  const { response, replayed } = await peer.load(sessionId, cwd);
  c.equal(response, {}, `${peer.name}: the session/load result (the echo agent has no modes or config options)`);
  // The user's prompts were never sent to the client as updates: the agent gave each a
  // message id of its own when it recorded them. Check those, then compare without them.
  const isUser = (u) => u.update.sessionUpdate === "user_message_chunk";
  const userIds = replayed.filter(isUser).map((u) => u.update.messageId);
  const agentIds = new Set(replayed.filter((u) => !isUser(u)).map((u) => u.update.messageId).filter(Boolean));
  c.check(userIds.every((id) => typeof id === "string" && id.length > 0), `${peer.name}: every replayed user message has a messageId: ${JSON.stringify(userIds)}`);
  c.check(userIds.every((id) => !agentIds.has(id)), `${peer.name}: the user's message ids are not the agent's: ${JSON.stringify(userIds)}`);
  const withoutUserIds = replayed.map((u) => {
    if (!isUser(u)) return u;
    const { messageId: _id, ...update } = u.update;
    return { ...u, update };
  });
  const same = c.equal(canon(withoutUserIds), canon(conversation), `${peer.name}: session/load replay vs the recorded conversation (deep-equal JSON, in order; user message ids aside)`);
  if (!same) {
    c.equal(replayed.map(labelOf), conversation.map(labelOf), `${peer.name}: session/load replay vs the recorded conversation, as labels`);
  }
  c.note(`${peer.name}: session/load replayed ${replayed.length} updates: ${replayed.map(labelOf).join(", ")}`);
  return replayed;
}

/** A records a two-turn conversation in a new session (cwd = the data dir). */
async function recordTwoTurns(fx, peer, conversation) {
  await peer.initialize();
  const sid = await peer.newSession(fx.dataDir);
  await peer.prompt(sid, "hello", conversation);
  await peer.prompt(sid, "history is kept", conversation);
  return sid;
}

// ---------------------------------------------------------------------------
// Scenarios

scenario(
  "advertised",
  "initialize advertises agentCapabilities.loadSession true and sessionCapabilities.{list, resume, close, delete} as objects",
  async ({ fx, c }) => {
    await fx.run("A", async (peer) => {
      const res = await peer.initialize();
      const caps = res.agentCapabilities ?? {};
      c.equal(caps.loadSession, true, "agentCapabilities.loadSession");
      const sc = caps.sessionCapabilities ?? {};
      for (const key of ["list", "resume", "close", "delete"]) {
        const v = sc[key];
        c.check(v !== null && typeof v === "object" && !Array.isArray(v), `agentCapabilities.sessionCapabilities.${key} is an object, got ${JSON.stringify(v)}`);
      }
      c.note(`agentCapabilities: ${JSON.stringify(caps)}`);
    });
  },
);

scenario(
  "store_less",
  "an agent served without a store (the bench example with ACP_BENCH_NO_STORE=1) advertises neither loadSession nor sessionCapabilities.{list, resume, delete} (close, additionalDirectories, and the store-less Unstable options and status only), and answers session/list, /load, /resume and /delete with -32601",
  async ({ fx, c }) => {
    const binary = join(dirname(fx.binary), `bench${process.platform === "win32" ? ".exe" : ""}`);
    await fx.run(
      "A",
      async (peer) => {
        const res = await peer.initialize();
        const caps = res.agentCapabilities ?? {};
        c.equal(caps.loadSession ?? false, false, "agentCapabilities.loadSession");
        const sc = caps.sessionCapabilities ?? {};
        // `options` and `status` (Unstable, compiled into the examples) need no store.
        c.equal(Object.keys(sc).sort(), ["additionalDirectories", "close", "options", "status"], "agentCapabilities.sessionCapabilities keys");
        const sid = await peer.newSession(fx.dataDir);
        const cwd = fx.dataDir;
        for (const [method, params] of [
          [SESSION.list, {}],
          [SESSION.load, { sessionId: sid, cwd, mcpServers: [] }],
          [SESSION.resume, { sessionId: sid, cwd, mcpServers: [] }],
          [SESSION.delete, { sessionId: sid }],
        ]) {
          const e = await peer.callFails(method, params);
          c.equal(e.code, -32601, `${method}: the error code`);
        }
        // Nothing was recorded: the data dir holds no store of the agent's.
        c.check(!existsSync(join(fx.dataDir, "bench")), `no store under ${fx.dataDir}/bench`);
      },
      { binary, env: { ACP_BENCH_NO_STORE: "1" } },
    );
  },
);

scenario(
  "load_replays_after_restart",
  "A: new session, prompts 'hello' and another, stdin closed; B on the same store: session/list has it (cwd, updatedAt), session/load replays the prompts as user_message_chunks and A's updates in order before its answer; a prompt afterwards works",
  async ({ fx, c }) => {
    const conversation = [];
    const sid = await fx.run("A", (peer) => recordTwoTurns(fx, peer, conversation));
    await fx.run("B", async (peer) => {
      await peer.initialize();
      const { sessions } = await peer.listAll();
      const info = findSession(sessions, sid);
      c.must(info, `B: session/list contains ${sid}: ${JSON.stringify(sessions)}`);
      c.equal(sessions.length, 1, "B: sessions listed in the fresh store");
      c.equal(info.cwd, fx.dataDir, "B: the listed session's cwd");
      checkUpdatedAt(c, fx, info, "B: the listed session");
      c.note(`B: listed ${JSON.stringify(info)}`);
      await loadAndCompare(c, peer, sid, fx.dataDir, conversation);
      await peer.prompt(sid, "and once more", conversation);
    });
    c.note(`conversation: ${conversation.length} updates, 3 prompts`);
  },
);

scenario(
  "load_after_kill",
  "A: new session, two prompts, then SIGKILL right after the second answer (no stdin EOF); B on the same store: session/load replays everything the client saw, in order",
  async ({ fx, c }) => {
    const conversation = [];
    const sid = await fx.run("A", async (peer) => {
      const sid = await recordTwoTurns(fx, peer, conversation);
      await peer.kill();
      return sid;
    });
    await fx.run("B", async (peer) => {
      await peer.initialize();
      await loadAndCompare(c, peer, sid, fx.dataDir, conversation);
      await peer.prompt(sid, "still here", conversation);
    });
  },
);

scenario(
  "list_filters_and_paginates",
  "3 sessions in cwd X and 2 in cwd Y (one prompt each): session/list with cwd X answers exactly the 3, with cwd Y the 2; without a filter, following nextCursor, all 5 exactly once (one page of 5 < 50, no nextCursor), also after a restart",
  async ({ fx, c }) => {
    const X = fx.dir("x");
    const Y = fx.dir("y");
    const created = { [X]: [], [Y]: [] };
    const checkFiltered = async (peer, cwd, label) => {
      const { sessions, pages } = await peer.listAll({ cwd });
      c.equal(
        sessions.map((s) => s.sessionId).sort(),
        [...created[cwd]].sort(),
        `${peer.name}: session ids listed with cwd ${label}`,
      );
      c.equal(sessions.map((s) => s.cwd), sessions.map(() => cwd), `${peer.name}: cwd of each session listed with cwd ${label}`);
      c.equal(pages.length, 1, `${peer.name}: pages listed with cwd ${label}`);
    };
    const checkAll = async (peer) => {
      const { sessions, pages } = await peer.listAll();
      const ids = sessions.map((s) => s.sessionId);
      const all = [...created[X], ...created[Y]];
      c.equal(ids.length, new Set(ids).size, `${peer.name}: no session listed twice (got ${ids.length} entries)`);
      c.equal([...new Set(ids)].sort(), [...all].sort(), `${peer.name}: every session listed without a filter`);
      c.equal(pages, [{ count: 5, nextCursor: undefined }], `${peer.name}: pages (count, nextCursor) of the unfiltered list`);
      for (const s of sessions) {
        c.equal(s.cwd, created[X].includes(s.sessionId) ? X : Y, `${peer.name}: cwd of ${s.sessionId}`);
        checkUpdatedAt(c, fx, s, `${peer.name}: ${s.sessionId}`);
      }
      return sessions;
    };
    await fx.run("A", async (peer) => {
      await peer.initialize();
      for (const [i, cwd] of [X, Y, X, Y, X].entries()) {
        const sid = await peer.newSession(cwd);
        created[cwd].push(sid);
        await peer.prompt(sid, `hello ${i}`);
      }
      await checkFiltered(peer, X, "X");
      await checkFiltered(peer, Y, "Y");
      await checkAll(peer);
    });
    await fx.run("B", async (peer) => {
      await peer.initialize();
      await checkFiltered(peer, X, "X");
      await checkFiltered(peer, Y, "Y");
      const sessions = await checkAll(peer);
      // Named in creation order (X1 Y1 X2 Y2 X3); the order is reported, not asserted.
      const names = new Map([...created[X].map((id, i) => [id, `X${i + 1}`]), ...created[Y].map((id, i) => [id, `Y${i + 1}`])]);
      const times = sessions.map((s) => Date.parse(s.updatedAt));
      const newestFirst = times.every((t, i) => i === 0 || times[i - 1] >= t);
      c.note(`B: unfiltered list order ${sessions.map((s) => names.get(s.sessionId)).join(" ")}${newestFirst ? " (newest updatedAt first)" : ""}`);
    });
  },
);

scenario(
  "resume_without_replay",
  "A: new session, prompt 'hello', stdin closed; B: session/resume answers with no session/update before it (nor before the next prompt), and a prompt afterwards works; C: session/load replays both processes' turns",
  async ({ fx, c }) => {
    const conversation = [];
    const sid = await fx.run("A", async (peer) => {
      await peer.initialize();
      const sid = await peer.newSession(fx.dataDir);
      await peer.prompt(sid, "hello", conversation);
      return sid;
    });
    await fx.run("B", async (peer) => {
      await peer.initialize();
      const before = peer.updates.length;
      const res = await peer.call(SESSION.resume, { sessionId: sid, cwd: fx.dataDir, mcpServers: [] }, "session/resume");
      c.equal(res, {}, "B: the session/resume result (the echo agent has no modes or config options)");
      await sleep(100); // a late replay would show here
      c.equal(peer.updates.slice(before).map(labelOf), [], "B: updates the SDK received for session/resume");
      const { request, answer } = peer.lastAnswer(SESSION.resume);
      c.equal(peer.wireUpdatesBetween(request, answer).map(labelOf), [], "B: session/update frames on the wire between session/resume and its answer");
      await peer.prompt(sid, "after resume", conversation);
      const promptReq = peer.lastAnswer(SESSION.prompt).request;
      c.equal(peer.wireUpdatesBetween(answer, promptReq).map(labelOf), [], "B: session/update frames between the resume's answer and the next prompt");
    });
    await fx.run("C", async (peer) => {
      await peer.initialize();
      await loadAndCompare(c, peer, sid, fx.dataDir, conversation);
    });
  },
);

scenario(
  "close_and_delete",
  "session/close answers {}, a prompt to the closed session fails -32002, it is still listed; session/delete answers {}, again {} (on the wire too); session/list no longer has it, session/load of it fails -32002 (also after a restart); another session is untouched",
  async ({ fx, c }) => {
    let sid;
    let other;
    await fx.run("A", async (peer) => {
      await peer.initialize();
      sid = await peer.newSession(fx.dataDir);
      other = await peer.newSession(fx.dataDir);
      await peer.prompt(sid, "hello");
      await peer.prompt(other, "bystander");

      const closed = await peer.call(SESSION.close, { sessionId: sid }, "session/close");
      c.equal(closed, {}, "A: session/close result (SDK)");
      c.equal(peer.lastAnswer(SESSION.close).answer.msg.result, {}, "A: session/close result on the wire");

      const promptErr = await peer.callFails(SESSION.prompt, { sessionId: sid, prompt: [{ type: "text", text: "anyone?" }] }, "session/prompt to the closed session");
      c.equal(promptErr.code, NOT_FOUND, "A: error code of a prompt to the closed session");
      c.note(`A: prompt to the closed session: ${describeError(promptErr)}`);

      // Closing forgets the session on this connection, not its history.
      const afterClose = await peer.listAll();
      c.equal(afterClose.sessions.map((s) => s.sessionId).sort(), [sid, other].sort(), "A: sessions listed after the close (before the delete)");

      const closedAgain = await peer.call(SESSION.close, { sessionId: sid }, "session/close again");
      c.equal(closedAgain, {}, "A: second session/close result (SDK)");
      c.note(`A: second session/close on the wire: ${peer.lastAnswer(SESSION.close).answer.raw}`);

      const deleted = await peer.call(SESSION.delete, { sessionId: sid }, "session/delete");
      c.equal(deleted, {}, "A: session/delete result (SDK)");
      c.equal(peer.lastAnswer(SESSION.delete).answer.msg, { jsonrpc: "2.0", id: peer.lastAnswer(SESSION.delete).request.msg.id, result: {} }, "A: session/delete answer on the wire");
      const deletedAgain = await peer.call(SESSION.delete, { sessionId: sid }, "session/delete again");
      c.equal(deletedAgain, {}, "A: second session/delete result (SDK)");
      c.equal(
        peer.lastAnswer(SESSION.delete).answer.msg,
        { jsonrpc: "2.0", id: peer.lastAnswer(SESSION.delete).request.msg.id, result: {} },
        "A: second session/delete answer on the wire (idempotent, not an error the SDK papers over)",
      );

      const { sessions } = await peer.listAll();
      c.equal(sessions.map((s) => s.sessionId), [other], "A: sessions listed after the delete");

      const loadErr = await peer.callFails(SESSION.load, { sessionId: sid, cwd: fx.dataDir, mcpServers: [] }, "session/load of the deleted session");
      c.equal(loadErr.code, NOT_FOUND, "A: error code of session/load of the deleted session");
      c.note(`A: session/load of the deleted session: ${describeError(loadErr)}`);
      const { answer } = peer.lastAnswer(SESSION.load);
      const loadReq = peer.lastAnswer(SESSION.load).request;
      c.equal(peer.wireUpdatesBetween(loadReq, answer).map(labelOf), [], "A: updates replayed for the deleted session");
    });
    await fx.run("B", async (peer) => {
      await peer.initialize();
      const { sessions } = await peer.listAll();
      c.equal(sessions.map((s) => s.sessionId), [other], "B: sessions listed after a restart");
      const loadErr = await peer.callFails(SESSION.load, { sessionId: sid, cwd: fx.dataDir, mcpServers: [] }, "session/load of the deleted session");
      c.equal(loadErr.code, NOT_FOUND, "B: error code of session/load of the deleted session");
      const resumeErr = await peer.callFails(SESSION.resume, { sessionId: sid, cwd: fx.dataDir }, "session/resume of the deleted session");
      c.equal(resumeErr.code, NOT_FOUND, "B: error code of session/resume of the deleted session");
      c.equal(peer.updates.map(labelOf), [], "B: updates received (nothing of the deleted session)");
      // The other session survived the delete, and its history with it.
      const { replayed } = await peer.load(other, fx.dataDir);
      c.equal(replayed.filter((u) => u.update.sessionUpdate === "user_message_chunk").map((u) => textOf(u.update)), ["bystander"], "B: prompts replayed for the other session");
    });
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "history.mjs",
  targetArg: "echo-binary",
  title: "ACP session history",
  targetLabel: "agent",
  fixture: (binary, validator, checks) => new Fixture(binary, validator, checks),
  multiline: true,
  rawLimit: 400,
});

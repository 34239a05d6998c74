#!/usr/bin/env node
// Interop over the network: an example agent started with `--listen 127.0.0.1:PORT` and
// `$ACP_TOKEN`, driven by the official TypeScript SDK's experimental clients
// (`@agentclientprotocol/sdk/experimental/ws-client` and `.../http-client`), every frame the
// agent sends validated against the SDK's JSON Schema; and the transport RFD's status codes
// and headers checked on the wire with plain `fetch`.
//
// usage: node net.mjs <agent-binary> [scenario ...]
//        node net.mjs --list

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import * as v2 from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import WebSocket from "ws";
import { FrameTap } from "./lib/agent.mjs";
import { ScenarioFailure, WAIT_MS, runCli, scenario, sleep, withTimeout } from "./lib/harness.mjs";
import { V2Validator } from "./v2/fixture.mjs";

const TOKEN = "interop-net-token-5f2c9a7e41b84d06";
const AUTH = { Authorization: `Bearer ${TOKEN}` };

/** A free loopback port (closed again before the agent binds it). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** One agent process serving the network, with a tap the clients' streams pass through. */
class NetAgent {
  constructor(binary, validator, dataDir) {
    this.binary = binary;
    this.validator = validator;
    this.tap = new FrameTap(validator);
    this.dataDir = dataDir;
    this.log = "";
  }

  async start() {
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}/acp`;
    this.child = spawn(this.binary, ["--listen", `127.0.0.1:${port}`], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ACP_TOKEN: TOKEN, ACP_DATA_DIR: this.dataDir, ACP_ROOTS: this.dataDir, RUST_BACKTRACE: "1" },
    });
    this.child.stderr.on("data", (d) => (this.log += d.toString("utf8")));
    this.child.stdout.on("data", (d) => (this.log += `[stdout!] ${d.toString("utf8")}`));
    // Ready once it answers: a request without the token is 401.
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      try {
        const r = await fetch(this.url, { method: "POST" });
        if (r.status === 401) return this;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) throw new ScenarioFailure(`the agent did not listen on ${this.url}`);
      await sleep(50);
    }
  }

  stderr() {
    return this.log;
  }

  /**
   * One more connection to this agent, its frames checked by a tap of its own (JSON-RPC ids
   * are per connection), reported as `name`.
   */
  connection(fx, name) {
    const view = Object.create(this);
    view.tap = new FrameTap(this.validator);
    view.name = name;
    fx.agents.push(view);
    return view;
  }

  /** `stream` with every message both ways recorded (and the agent's validated) by the tap. */
  tapped(stream) {
    const tap = this.tap;
    const readable = stream.readable.pipeThrough(
      new TransformStream({
        transform(message, controller) {
          tap.recordLine("agent", JSON.stringify(message));
          controller.enqueue(message);
        },
      }),
    );
    const writer = stream.writable.getWriter();
    const writable = new WritableStream({
      async write(message) {
        tap.recordLine("client", JSON.stringify(message));
        await writer.write(message);
      },
      close: () => writer.close(),
      abort: (reason) => writer.abort(reason),
    });
    return { readable, writable };
  }
}

class Fixture {
  constructor(binary, validator, checks) {
    this.binary = binary;
    this.validator = validator;
    this.checks = checks;
    this.dataDir = mkdtempSync(join(tmpdir(), "acp-interop-net-"));
    this.agents = [];
  }

  /** An agent listening on a free port; its frames validated by `validator` (v1's default). */
  async agent(validator = this.validator) {
    const agent = await new NetAgent(this.binary, validator, this.dataDir).start();
    this.agents.push(agent);
    return agent;
  }

  /** initialize (v1), session/new and one turn through the SDK's v1 client app. */
  async turn(stream, what) {
    const c = this.checks;
    const updates = [];
    const app = acp.client({ name: "acp-interop-net" });
    app.onNotification("session/update", ({ params }) => updates.push(params));
    await app.connectWith(stream, async (ctx) => {
      const init = await withTimeout(
        ctx.request("initialize", { protocolVersion: 1, clientInfo: { name: "acp-interop-net", version: "0.0.0" } }),
        WAIT_MS,
        `${what}: initialize`,
      );
      c.equal(init.protocolVersion, 1, `${what}: initialize.protocolVersion`);
      const session = await withTimeout(
        ctx.request("session/new", { cwd: this.dataDir, mcpServers: [] }),
        WAIT_MS,
        `${what}: session/new`,
      );
      c.must(typeof session.sessionId === "string", `${what}: session/new returned a sessionId`);
      const text = `hello over ${what}`;
      const answer = await withTimeout(
        ctx.request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text }] }),
        WAIT_MS,
        `${what}: session/prompt`,
      );
      c.equal(answer.stopReason, "end_turn", `${what}: stopReason`);
      const chunks = updates
        .filter((u) => u.sessionId === session.sessionId && u.update.sessionUpdate === "agent_message_chunk")
        .map((u) => u.update.content?.text ?? "");
      c.equal(chunks.join(""), text, `${what}: the echoed message chunks`);
    });
  }

  /** initialize (v2), session/new and one turn through the SDK's experimental v2 client app. */
  async turnV2(stream, what) {
    const c = this.checks;
    const app = v2.client({ name: "acp-interop-net" });
    await app.connectWith(stream, async (ctx) => {
      const init = await withTimeout(
        ctx.request("initialize", { protocolVersion: 2, info: { name: "acp-interop-net", version: "0.0.0" }, capabilities: {} }),
        WAIT_MS,
        `${what}: initialize`,
      );
      c.equal(init.protocolVersion, 2, `${what}: initialize.protocolVersion`);
      const session = await withTimeout(ctx.buildSession(this.dataDir).start(), WAIT_MS, `${what}: session/new`);
      const text = `hello over ${what}`;
      await withTimeout(session.prompt(text), WAIT_MS, `${what}: session/prompt`);
      const reply = await withTimeout(session.readTextUntilIdle(), WAIT_MS, `${what}: the turn until idle`);
      c.equal(reply, text, `${what}: the echoed message`);
    });
  }

  cleanup() {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

scenario("websocket_turn", "a v1 turn through the SDK's WebSocket client, the token in the upgrade's headers", async ({ fx }) => {
  const agent = await fx.agent();
  const stream = createWebSocketStream(agent.url.replace("http://", "ws://"), { WebSocket, headers: AUTH });
  await fx.turn(agent.tapped(stream), "WebSocket");
});

scenario("http_turn", "a v1 turn through the SDK's Streamable HTTP client (POST, connection and session SSE streams, DELETE)", async ({ fx }) => {
  const agent = await fx.agent();
  const stream = createHttpStream(agent.url, { headers: AUTH });
  await fx.turn(agent.tapped(stream), "Streamable HTTP");
});

scenario("websocket_turn_v2", "a v2 turn through the SDK's experimental v2 client over WebSocket (v2 negotiated per connection)", async ({ fx }) => {
  const agent = await fx.agent(new V2Validator());
  const stream = createWebSocketStream(agent.url.replace("http://", "ws://"), { WebSocket, headers: AUTH });
  await fx.turnV2(agent.tapped(stream), "WebSocket v2");
});

scenario("http_turn_v2", "a v2 turn through the SDK's experimental v2 client over Streamable HTTP", async ({ fx }) => {
  const agent = await fx.agent(new V2Validator());
  const stream = createHttpStream(agent.url, { headers: AUTH });
  await fx.turnV2(agent.tapped(stream), "Streamable HTTP v2");
});

scenario("websocket_refused_without_token", "a WebSocket upgrade without the token is refused with 401; with it, the same server serves", async ({ fx, c }) => {
  const agent = await fx.agent();
  const status = await new Promise((resolve) => {
    const ws = new WebSocket(agent.url.replace("http://", "ws://"));
    ws.on("unexpected-response", (_req, res) => resolve(res.statusCode));
    ws.on("open", () => resolve("opened"));
    ws.on("error", () => {});
  });
  c.equal(status, 401, "upgrade without the token");
  const stream = createWebSocketStream(agent.url.replace("http://", "ws://"), { WebSocket, headers: AUTH });
  await fx.turn(agent.tapped(stream), "WebSocket after a refusal");
});

scenario("http_status_codes", "the transport RFD's status codes and headers on the wire, with the security refusals", async ({ fx, c }) => {
  const agent = await fx.agent();
  const url = agent.url;
  const json = { "Content-Type": "application/json" };
  const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } };
  const post = (headers, body) => fetch(url, { method: "POST", headers: { ...json, ...headers }, body: JSON.stringify(body) });

  let r = await post({}, init);
  c.equal(r.status, 401, "initialize without the token");
  c.check((r.headers.get("www-authenticate") ?? "").startsWith("Bearer"), "401 carries WWW-Authenticate: Bearer");
  r = await post({ Authorization: "Bearer nope" }, init);
  c.equal(r.status, 401, "initialize with a wrong token");
  r = await post({ ...AUTH, Origin: "http://evil.example" }, init);
  c.equal(r.status, 403, "initialize from a browser origin not trusted");
  r = await fetch(url, { method: "POST", headers: { ...AUTH, "Content-Type": "text/plain" }, body: JSON.stringify(init) });
  c.equal(r.status, 415, "POST that is not application/json");
  r = await post(AUTH, [init]);
  c.equal(r.status, 501, "a JSON-RPC batch");

  r = await post(AUTH, init);
  c.equal(r.status, 200, "initialize");
  c.check((r.headers.get("content-type") ?? "").startsWith("application/json"), "initialize answers JSON");
  const id = r.headers.get("acp-connection-id");
  c.must(typeof id === "string" && /^[0-9a-f]{32,}$/.test(id), `Acp-Connection-Id of 128+ random bits, got ${id}`);
  const answer = await r.json();
  agent.tap.recordLine("client", JSON.stringify(init));
  agent.tap.recordLine("agent", JSON.stringify(answer));
  c.equal(answer.result?.protocolVersion, 1, "initialize's answer");

  const conn = { ...AUTH, "Acp-Connection-Id": id };
  r = await fetch(url, { headers: conn });
  c.equal(r.status, 406, "GET without Accept: text/event-stream");
  r = await fetch(url, { headers: { ...AUTH, Accept: "text/event-stream" } });
  c.equal(r.status, 400, "GET without Acp-Connection-Id");
  r = await fetch(url, { headers: { ...AUTH, Accept: "text/event-stream", "Acp-Connection-Id": "0".repeat(32) } });
  c.equal(r.status, 404, "GET with an unknown Acp-Connection-Id");
  r = await post({ "Acp-Connection-Id": id }, { jsonrpc: "2.0", id: 1, method: "session/list", params: {} });
  c.equal(r.status, 401, "a connection id without the token");

  const sse = await fetch(url, { headers: { ...conn, Accept: "text/event-stream" } });
  c.equal(sse.status, 200, "GET the connection-scoped stream");
  c.equal(sse.headers.get("content-type"), "text/event-stream", "the stream's Content-Type");
  const newSession = { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: fx.dataDir, mcpServers: [] } };
  r = await post(conn, newSession);
  c.equal(r.status, 202, "POST session/new");
  c.equal(await r.text(), "", "202 has an empty body");
  agent.tap.recordLine("client", JSON.stringify(newSession));
  const reader = sse.body.getReader();
  let text = "";
  while (!text.includes("\n\n")) {
    const { value, done } = await withTimeout(reader.read(), WAIT_MS, "session/new's answer on the connection stream");
    if (done) throw new ScenarioFailure("the connection stream ended");
    text += new TextDecoder().decode(value);
  }
  const data = text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
  agent.tap.recordLine("agent", data);
  const created = JSON.parse(data);
  c.equal(created.id, 2, "session/new is answered on the connection-scoped stream");
  const prompt = { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: created.result?.sessionId, prompt: [] } };
  r = await post(conn, prompt);
  c.equal(r.status, 400, "a session-scoped POST without Acp-Session-Id");
  reader.cancel().catch(() => {});

  r = await fetch(url, { method: "DELETE", headers: AUTH });
  c.equal(r.status, 400, "DELETE without Acp-Connection-Id");
  r = await fetch(url, { method: "DELETE", headers: conn });
  c.equal(r.status, 202, "DELETE ends the connection");
  r = await fetch(url, { method: "DELETE", headers: conn });
  c.equal(r.status, 404, "the ended connection's id is unknown");
});

/** A v1 client app over `stream`; `body(ctx, updates)` runs after `initialize`. */
async function withClient(fx, stream, what, body, permission = "allow_once") {
  const updates = [];
  const app = acp.client({ name: "acp-interop-net" });
  app.onNotification("session/update", ({ params }) => updates.push(params));
  app.onRequest("session/request_permission", ({ params }) => {
    const option = params.options.find((o) => o.kind === permission);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });
  await app.connectWith(stream, async (ctx) => {
    await withTimeout(ctx.request("initialize", { protocolVersion: 1, clientInfo: { name: "acp-interop-net", version: "0.0.0" } }), WAIT_MS, `${what}: initialize`);
    await body(ctx, updates);
  });
}

/** The text of the agent's message chunks of `session` among `updates`. */
function agentText(updates, session) {
  return updates
    .filter((u) => u.sessionId === session && u.update.sessionUpdate === "agent_message_chunk")
    .map((u) => u.update.content?.text ?? "")
    .join("");
}

function chunks(n) {
  return Array.from({ length: n }, (_, i) => `chunk ${i}\n`).join("");
}

scenario("websocket_permission_and_cancel", "over WebSocket: a tool call's permission request answered by the SDK's client (allowed, then rejected), and a turn cancelled with session/cancel", async ({ fx, c }) => {
  const agent = await fx.agent();
  const ws = (conn) => conn.tapped(createWebSocketStream(agent.url.replace("http://", "ws://"), { WebSocket, headers: AUTH }));
  for (const [permission, expected] of [["allow_once", "allowed"], ["reject_once", "rejected"]]) {
    const conn = agent.connection(fx, permission);
    await withClient(fx, ws(conn), `WebSocket ${permission}`, async (ctx, updates) => {
      const { sessionId } = await ctx.request("session/new", { cwd: fx.dataDir, mcpServers: [] });
      const answer = await withTimeout(ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "permission" }] }), WAIT_MS, "permission turn");
      c.equal(answer.stopReason, "end_turn", `${permission}: stopReason`);
      const asked = conn.tap.agentFrames().filter((f) => f.msg?.method === "session/request_permission" && f.msg.params.sessionId === sessionId);
      c.equal(asked.length, 1, `${permission}: one permission request`);
      const statuses = updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "tool_call_update").map((u) => u.update.status);
      c.check(statuses.includes(expected === "allowed" ? "completed" : "failed"), `${permission}: the tool call ends ${expected === "allowed" ? "completed" : "failed"} (${statuses})`);
      c.equal(agentText(updates, sessionId), expected, `${permission}: the agent's message`);
    }, permission);
  }
  await withClient(fx, ws(agent.connection(fx, "cancel")), "WebSocket cancel", async (ctx, updates) => {
    const { sessionId } = await ctx.request("session/new", { cwd: fx.dataDir, mcpServers: [] });
    const turn = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "sleep" }] });
    const deadline = Date.now() + WAIT_MS;
    while (!agentText(updates, sessionId).includes("sleeping")) {
      if (Date.now() > deadline) throw new ScenarioFailure("the turn did not start");
      await sleep(10);
    }
    await ctx.notify("session/cancel", { sessionId });
    const answer = await withTimeout(turn, WAIT_MS, "the cancelled turn's answer");
    c.equal(answer.stopReason, "cancelled", "stopReason after session/cancel");
  });
});

scenario("http_load_and_resume", "over Streamable HTTP: a session recorded on one connection is loaded (its conversation replayed) and resumed on new connections, and goes on", async ({ fx, c }) => {
  const agent = await fx.agent();
  const http = (name) => agent.connection(fx, name).tapped(createHttpStream(agent.url, { headers: AUTH }));
  let sessionId;
  await withClient(fx, http("first"), "HTTP first connection", async (ctx) => {
    ({ sessionId } = await ctx.request("session/new", { cwd: fx.dataDir, mcpServers: [] }));
    const answer = await withTimeout(ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "stream 3" }] }), WAIT_MS, "the first turn");
    c.equal(answer.stopReason, "end_turn", "the first turn");
  });
  await withClient(fx, http("load"), "HTTP load", async (ctx, updates) => {
    await withTimeout(ctx.request("session/load", { sessionId, cwd: fx.dataDir, mcpServers: [] }), WAIT_MS, "session/load");
    const deadline = Date.now() + WAIT_MS;
    while (agentText(updates, sessionId) !== chunks(3) && Date.now() < deadline) await sleep(10);
    c.equal(agentText(updates, sessionId), chunks(3), "session/load replays the first turn's chunks");
    const user = updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "user_message_chunk").map((u) => u.update.content?.text).join("");
    c.equal(user, "stream 3", "session/load replays the user's prompt");
  });
  await withClient(fx, http("resume"), "HTTP resume", async (ctx, updates) => {
    await withTimeout(ctx.request("session/resume", { sessionId, cwd: fx.dataDir, mcpServers: [] }), WAIT_MS, "session/resume");
    c.equal(agentText(updates, sessionId), "", "session/resume replays nothing");
    const answer = await withTimeout(ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "stream 2" }] }), WAIT_MS, "a turn on the resumed session");
    c.equal(answer.stopReason, "end_turn", "the resumed session's turn");
    c.equal(agentText(updates, sessionId), chunks(2), "the resumed session's chunks");
  });
});

scenario("websocket_dropped_mid_turn", "a socket dropped mid-turn: the turn goes on, and the client that reconnects and loads the session gets every chunk of it", async ({ fx, c }) => {
  const agent = await fx.agent();
  const n = 40;
  // A raw socket, dropped without a close frame once the turn has started.
  const raw = new WebSocket(agent.url.replace("http://", "ws://"), { headers: AUTH });
  const lines = [];
  raw.on("message", (data) => {
    agent.tap.recordLine("agent", data.toString("utf8"));
    lines.push(JSON.parse(data.toString("utf8")));
  });
  await new Promise((resolve, reject) => { raw.on("open", resolve); raw.on("error", reject); });
  const send = (msg) => { agent.tap.recordLine("client", JSON.stringify(msg)); raw.send(JSON.stringify(msg)); };
  const answered = async (id) => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const found = lines.find((m) => m.id === id && !m.method);
      if (found) return found;
      if (Date.now() > deadline) throw new ScenarioFailure(`no answer to request ${id}`);
      await sleep(10);
    }
  };
  send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } });
  await answered(1);
  send({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: fx.dataDir, mcpServers: [] } });
  const sessionId = (await answered(2)).result.sessionId;
  send({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: `stream ${n} 25` }] } });
  const deadline = Date.now() + WAIT_MS;
  while (!lines.some((m) => m.method === "session/update" && m.params.update.sessionUpdate === "agent_message_chunk")) {
    if (Date.now() > deadline) throw new ScenarioFailure("the turn did not start");
    await sleep(5);
  }
  raw.terminate();
  c.check(!lines.some((m) => m.id === 3), "the socket dropped before the turn's answer");
  const again = agent.connection(fx, "reconnected");
  await withClient(fx, again.tapped(createWebSocketStream(agent.url.replace("http://", "ws://"), { WebSocket, headers: AUTH })), "WebSocket reconnect", async (ctx, updates) => {
    await withTimeout(ctx.request("session/load", { sessionId, cwd: fx.dataDir, mcpServers: [] }), WAIT_MS, "session/load after the drop");
    c.equal(agentText(updates, sessionId), chunks(n), "the reload replays every chunk of the turn that went on without its client");
  });
});

runCli({
  script: "net.mjs",
  targetArg: "agent-binary",
  title: "ACP interop over the network",
  targetLabel: "agent",
  fixture: (binary, validator, checks) => new Fixture(binary, validator, checks),
  rawLimit: 400,
});

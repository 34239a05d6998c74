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
    this.tap = new FrameTap(validator);
    this.dataDir = dataDir;
    this.log = "";
  }

  async start() {
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}/acp`;
    this.child = spawn(this.binary, ["--listen", `127.0.0.1:${port}`], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ACP_TOKEN: TOKEN, ACP_DATA_DIR: this.dataDir, RUST_BACKTRACE: "1" },
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

runCli({
  script: "net.mjs",
  targetArg: "agent-binary",
  title: "ACP interop over the network",
  targetLabel: "agent",
  fixture: (binary, validator, checks) => new Fixture(binary, validator, checks),
  rawLimit: 400,
});

#!/usr/bin/env node
// Authentication, extension methods, elicitation and the cancel cascade through the official
// TypeScript client SDK (@agentclientprotocol/sdk), against the `tour` example
// (examples/tour.rs: an agent and a terminal auth method, sessions gated until authenticated,
// logout, `_tour/stats` and `_tour/ping`, `/ask` eliciting a form) and `echo` (none of these:
// -32601 for the methods it does not have; its `permission` prompt for the cascade).
//
// Extension methods go through the SDK's own way of calling a method it has no constant for:
// `ctx.request(name, params)` / `ctx.notify(name, params)` (the SDK documents these overloads
// for custom methods). The elicitation form is answered by a handler registered with the SDK
// client (`app.onRequest("elicitation/create", …)`), and the cascade is observed through the
// AbortSignal the SDK hands a request handler. Every agent frame is validated against the
// SDK's JSON Schema (lib/validator.mjs), `elicitation/create` and `$/cancel_request` included.
// Modes, config options, commands, prompt content and message ids are in surface.mjs.
//
// usage: node auth_ext.mjs <examples-dir> [scenario ...]
//        node auth_ext.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { spawnSync } from "node:child_process";
import { WAIT_MS, runCli, scenario, sleep } from "./lib/harness.mjs";
import { Fixture, clientCapabilities, labelOf, same, updatesIn } from "./lib/peer.mjs";

const AUTH_REQUIRED = -32000;
const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;
const REQUEST_CANCELLED = -32800;

/** A tour session after signing in with the API key: the peer's session/new exchange. */
async function tourSession(peer, caps = clientCapabilities()) {
  await peer.initialize(caps);
  await peer.authenticate();
  return peer.newSession();
}

const newSessionParams = (fx) => ({ cwd: fx.dataDir, mcpServers: [] });

// ---------------------------------------------------------------------------
// Scenarios

scenario(
  "auth",
  "tour: session/new before authenticate -> -32000; authenticate login (terminal) or an unknown id -> -32602; api-key -> {} and session/new works; logout -> {} and session/new, session/load, session/resume, session/list, session/delete -> -32000 again; `tour --login` (the terminal method) exits 0; echo: authenticate and logout -> -32601, sessions open without them",
  async ({ fx, c }) => {
    await fx.run("tour", { name: "tour [auth.terminal absent]" }, async (peer) => {
      await peer.initialize();
      const gated = await peer.fails("session/new", newSessionParams(fx), AUTH_REQUIRED, "session/new before authenticate");
      c.note(`auth required: ${JSON.stringify(gated.message)}`);
      const login = await peer.fails("authenticate", { methodId: "login" }, INVALID_PARAMS, "authenticate login (not offered to this client)");
      c.note(`login without auth.terminal: ${JSON.stringify(login.message)}`);
      const unknown = await peer.fails("authenticate", { methodId: "sso" }, INVALID_PARAMS, "authenticate sso (unknown)");
      c.check(unknown.message.includes("`api-key`"), `tour: the -32602 for an unknown method names \`api-key\`: ${JSON.stringify(unknown.message)}`);
      await peer.fails("session/new", newSessionParams(fx), AUTH_REQUIRED, "session/new after failed authenticates");

      await peer.authenticate("api-key");
      const { sessionId } = await peer.newSession();
      c.equal((await peer.prompt(sessionId, "hi")).text, "[Ask, Fast] hi (0 attachments)", "tour: a prompt once authenticated");

      const out = await peer.call("logout", {});
      c.equal(out.result, {}, "tour: logout result (SDK)");
      c.equal(out.wire, {}, "tour: logout result (wire)");
      await peer.fails("session/new", newSessionParams(fx), AUTH_REQUIRED, "session/new after logout");
      // Reopening, listing and deleting the recorded sessions are gated too.
      await peer.fails("session/load", { sessionId, ...newSessionParams(fx) }, AUTH_REQUIRED, "session/load after logout");
      await peer.fails("session/resume", { sessionId, ...newSessionParams(fx) }, AUTH_REQUIRED, "session/resume after logout");
      await peer.fails("session/list", {}, AUTH_REQUIRED, "session/list after logout");
      await peer.fails("session/delete", { sessionId }, AUTH_REQUIRED, "session/delete after logout");
      // The spec leaves sessions opened before a logout to the agent: reported, not asserted.
      const old = await peer.exchange("session/prompt", { sessionId, prompt: [{ type: "text", text: "still there?" }] }, "a prompt to the session opened before logout");
      c.note(`a prompt to the session opened before logout: ${old.answer.raw}`);
      await peer.authenticate("api-key");
      await peer.newSession();
    });

    await fx.run("tour", { name: "tour [auth.terminal true]" }, async (peer) => {
      await peer.initialize(clientCapabilities({ terminalAuth: true }));
      const login = await peer.fails("authenticate", { methodId: "login" }, INVALID_PARAMS, "authenticate login (a terminal method)");
      c.check(/terminal/.test(login.message), `tour: the -32602 for a terminal method says so: ${JSON.stringify(login.message)}`);
      const unknown = await peer.fails("authenticate", { methodId: "sso" }, INVALID_PARAMS, "authenticate sso (unknown)");
      c.check(unknown.message.includes("`api-key`, `login`"), `tour: the -32602 for an unknown method names \`api-key\`, \`login\`: ${JSON.stringify(unknown.message)}`);
      await peer.fails("session/new", newSessionParams(fx), AUTH_REQUIRED, "session/new before authenticate");
    });

    // The terminal method: the client runs the agent program itself with the method's args.
    const login = spawnSync(fx.binary("tour"), ["--login"], { input: "", timeout: WAIT_MS, env: { ...process.env, ACP_DATA_DIR: fx.dataDir } });
    c.equal([login.status, login.signal], [0, null], "`tour --login` [exit status, signal]");
    c.equal(String(login.stdout), "", "`tour --login` writes no ACP frames to stdout");
    c.note(`tour --login stderr: ${JSON.stringify(String(login.stderr).trim())}`);

    await fx.run("echo", {}, async (peer) => {
      await peer.initialize(clientCapabilities({ terminalAuth: true }));
      await peer.newSession();
      await peer.fails("authenticate", { methodId: "api-key" }, METHOD_NOT_FOUND, "authenticate api-key");
      await peer.fails("logout", {}, METHOD_NOT_FOUND, "logout");
    });
  },
);

/** The agent frames strictly between two frames (by seq). */
const agentFramesBetween = (peer, from, to) => peer.tap.agentFrames().filter((f) => f.seq > from && f.seq < to);

scenario(
  "extensions",
  "tour: _tour/stats {words} -> {count}; bad or missing params -> -32602 naming `words`; _tour/unknown -> -32601; _tour/ping and an unknown notification get no answer, and /help says 'pinged 1 times'; echo: _tour/stats -> -32601, _tour/ping ignored",
  async ({ fx, c }) => {
    await fx.run("tour", {}, async (peer) => {
      await peer.initialize();
      const early = await peer.exchange("_tour/stats", { words: ["before"] }, "_tour/stats before authenticate");
      c.note(`_tour/stats before authenticate: ${early.answer.raw}`);
      await peer.authenticate();

      const stats = await peer.call("_tour/stats", { words: ["a", "bb", "ccc"] }, "_tour/stats");
      same(c, stats.wire, { count: 3 }, "tour: _tour/stats result (wire)");
      same(c, stats.result, { count: 3 }, "tour: _tour/stats result (SDK)");
      c.equal(stats.between.map(labelOf), [], "tour: frames between _tour/stats and its answer");
      for (const [params, what] of [
        [{ words: "no" }, "_tour/stats with words a string"],
        [{}, "_tour/stats without words"],
      ]) {
        const bad = await peer.fails("_tour/stats", params, INVALID_PARAMS, what);
        c.check(/words/.test(bad.message), `tour: the -32602 for ${what} names \`words\`: ${JSON.stringify(bad.message)}`);
      }
      const unknown = await peer.fails("_tour/unknown", { words: [] }, METHOD_NOT_FOUND, "_tour/unknown");
      c.note(`_tour/unknown: ${JSON.stringify(unknown.message)}`);

      const mark = peer.tap.seq;
      await peer.ctx.notify("_tour/ping", { from: "acp-interop" });
      await peer.ctx.notify("_tour/other", { n: 1 });
      const created = await peer.newSession();
      c.equal(agentFramesBetween(peer, mark, created.request.seq).map(labelOf), [], "tour: agent frames answering the extension notifications");
      const help = await peer.prompt(created.sessionId, "/help");
      c.equal(help.text, "Commands: /help, /title, /usage, /instructions, /plan, /notice, /compact, /delegate, /suggest, /code, /ask (pinged 1 times)", "tour: /help after one _tour/ping (and one unknown notification)");
    });

    await fx.run("echo", {}, async (peer) => {
      await peer.initialize();
      await peer.fails("_tour/stats", { words: ["a"] }, METHOD_NOT_FOUND, "_tour/stats");
      const mark = peer.tap.seq;
      await peer.ctx.notify("_tour/ping", {});
      const created = await peer.newSession();
      c.equal(agentFramesBetween(peer, mark, created.request.seq).map(labelOf), [], "echo: agent frames answering _tour/ping");
      c.equal((await peer.prompt(created.sessionId, "still here")).text, "still here", "echo: a prompt after an unknown notification");
    });
  },
);

/** Registers an `elicitation/create` handler answering with `peer.formAnswer`; records params in `peer.forms`. */
function formHandler(app, peer) {
  peer.forms = [];
  peer.formAnswer = { action: "decline" };
  app.onRequest("elicitation/create", ({ params }) => {
    peer.forms.push(params);
    return peer.formAnswer;
  });
}

scenario(
  "elicitation",
  "tour with elicitation.form: /ask sends a form-mode elicitation/create (rating integer 1..5 required, comment optional) to the SDK handler; accept {rating: 5} -> 'Thanks for the 5/5.', decline and cancel -> 'Maybe next time.'; without the capability (or with url only): 'This editor cannot show forms.' and no elicitation/create",
  async ({ fx, c }) => {
    await fx.run("tour", { name: "tour [form]", handlers: formHandler }, async (peer) => {
      const { sessionId } = await tourSession(peer, clientCapabilities({ elicitation: { form: {} } }));
      peer.formAnswer = { action: "accept", content: { rating: 5 } };
      const ask = await peer.prompt(sessionId, "/ask");
      c.equal(ask.labels, ["request elicitation/create", "update agent_message_chunk", "answer end_turn"], "tour: frames of /ask (accept)");
      c.equal(ask.text, "Thanks for the 5/5.", "tour: /ask answered accept {rating: 5}");
      const request = ask.between.find((f) => f.msg.method === "elicitation/create");
      if (request) {
        const p = request.msg.params;
        c.equal([p.mode, p.sessionId, p.message], ["form", sessionId, "How was the tour?"], "elicitation/create [mode, sessionId, message]");
        const schema = p.requestedSchema ?? {};
        c.equal(schema.type, "object", "requestedSchema.type");
        same(c, schema.properties?.rating, { type: "integer", description: "How you rate the tour, 1 to 5.", minimum: 1, maximum: 5 }, "requestedSchema.properties.rating");
        c.equal(schema.properties?.comment?.type, "string", "requestedSchema.properties.comment.type");
        c.equal(schema.required, ["rating"], "requestedSchema.required (comment optional)");
        c.equal(Object.keys(schema.properties ?? {}).sort(), ["comment", "rating"], "requestedSchema properties");
        same(c, peer.forms[0], p, "the params the SDK handed the elicitation/create handler");
        // The client's answer went out before the agent's reply to it.
        const reply = peer.tap.clientFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === JSON.stringify(request.msg.id));
        same(c, reply?.msg.result, { action: "accept", content: { rating: 5 } }, "the client's answer to elicitation/create (wire)");
        c.check(reply && reply.seq < ask.answer.seq, "the client answered the form before the prompt's answer");
      }

      for (const [answer, said] of [
        [{ action: "accept", content: { rating: 3, comment: "nice" } }, "Thanks for the 3/5."],
        [{ action: "decline" }, "Maybe next time."],
        [{ action: "cancel" }, "Maybe next time."],
      ]) {
        peer.formAnswer = answer;
        const turn = await peer.prompt(sessionId, "/ask", `/ask answered ${JSON.stringify(answer)}`);
        c.equal(turn.labels, ["request elicitation/create", "update agent_message_chunk", "answer end_turn"], `tour: frames of /ask (${answer.action})`);
        c.equal(turn.text, said, `tour: /ask answered ${JSON.stringify(answer)}`);
      }
      c.equal(peer.forms.length, 4, "tour: elicitation/create requests handled by the SDK client");
    });

    for (const [label, elicitation] of [
      ["no elicitation capability", undefined],
      ["elicitation.url only", { url: {} }],
    ]) {
      await fx.run("tour", { name: `tour [${label}]`, handlers: formHandler }, async (peer) => {
        const { sessionId } = await tourSession(peer, clientCapabilities({ elicitation }));
        const ask = await peer.prompt(sessionId, "/ask");
        c.equal(ask.labels, ["update agent_message_chunk", "answer end_turn"], `tour [${label}]: frames of /ask`);
        c.equal(ask.text, "This editor cannot show forms.", `tour [${label}]: /ask`);
        c.equal(peer.tap.agentRequests("elicitation/create").length, 0, `tour [${label}]: elicitation/create frames`);
        c.equal(peer.forms.length, 0, `tour [${label}]: elicitation/create handler calls`);
      });
    }
  },
);

scenario(
  "cancel_cascade",
  "echo 'read a.txt' with a client whose fs/read_text_file never answers: after session/cancel the agent sends $/cancel_request for its read before the prompt answers cancelled; the SDK aborts its handler and answers -32800, which the agent ignores; the connection goes on. echo 'permission' with a client that never answers: no $/cancel_request (the client answers its own permission requests when it cancels)",
  async ({ fx, c }) => {
    const handlers = (app, peer) => {
      peer.reads = [];
      app.onRequest("fs/read_text_file", ({ params, signal }) => {
        const entry = { params, aborted: false, reason: undefined };
        peer.reads.push(entry);
        return new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => {
            entry.aborted = true;
            entry.reason = signal.reason;
            reject(signal.reason);
          });
        });
      });
      // Never answered, and never withdrawn.
      app.onRequest("session/request_permission", () => new Promise(() => {}));
    };
    await fx.run("echo", { handlers }, async (peer) => {
      const caps = clientCapabilities();
      caps.fs.readTextFile = true;
      await peer.initialize(caps);
      const { sessionId } = await peer.newSession();
      const turnP = peer.prompt(sessionId, "read a.txt");
      turnP.catch(() => {});
      const ask = await peer.tap.waitFor((f) => f.dir === "agent" && f.msg?.method === "fs/read_text_file", "fs/read_text_file", WAIT_MS);
      await peer.ctx.notify("session/cancel", { sessionId });
      const turn = await turnP;
      c.equal(turn.answer.msg.result?.stopReason, "cancelled", "stopReason after session/cancel");
      c.equal(turn.labels, ["request fs/read_text_file", "notification $/cancel_request", "answer cancelled"], "frames of the cancelled turn");
      const cancelled = turn.between.find((f) => f.msg.method === "$/cancel_request");
      const sessionCancel = peer.tap.clientFrames().find((f) => f.msg.method === "session/cancel");
      if (cancelled) {
        same(c, cancelled.msg.params, { requestId: ask.msg.id }, "$/cancel_request params (the read's id)");
        c.check(cancelled.seq > sessionCancel.seq, `$/cancel_request (#${cancelled.seq}) comes after session/cancel (#${sessionCancel.seq})`);
      }

      // The SDK aborted the handler and answered -32800.
      const reply = await peer.tap.waitFor(
        (f) => f.dir === "client" && f.msg && !("method" in f.msg) && JSON.stringify(f.msg.id) === JSON.stringify(ask.msg.id),
        "the client's answer to the withdrawn request",
        WAIT_MS,
      );
      c.equal(reply.msg.error?.code, REQUEST_CANCELLED, "the client's answer to the withdrawn fs/read_text_file (error code)");
      c.equal(peer.reads.length, 1, "fs/read_text_file handler calls");
      c.equal(peer.reads[0]?.aborted, true, "the SDK aborted the fs/read_text_file handler");
      c.note(`abort reason: ${String(peer.reads[0]?.reason)}; client answered ${reply.raw}`);

      // The late -32800 is nobody's business: no answer to it, and the connection goes on. (It
      // may reach the tap before or after the prompt's answer: the two cross on the pipes.)
      await sleep(100);
      const next = await peer.prompt(sessionId, "still here");
      c.equal(next.text, "still here", "a prompt after the cascade");
      const quiet = agentFramesBetween(peer, Math.max(reply.seq, turn.answer.seq), next.request.seq);
      c.equal(quiet.map(labelOf), [], "agent frames after the client's -32800 and the prompt's answer");

      // A permission request is not withdrawn: the client that cancels answers it itself.
      const askP = peer.prompt(sessionId, "permission");
      askP.catch(() => {});
      await peer.tap.waitFor((f) => f.dir === "agent" && f.msg?.method === "session/request_permission", "session/request_permission", WAIT_MS);
      await peer.ctx.notify("session/cancel", { sessionId });
      const asked = await askP;
      c.equal(asked.answer.msg.result?.stopReason, "cancelled", "stopReason of the permission turn after session/cancel");
      c.equal(
        asked.labels.filter((l) => l.includes("$/cancel_request")),
        [],
        "no $/cancel_request for a permission request",
      );
    });
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "auth_ext.mjs",
  targetArg: "examples-dir",
  title: "ACP authentication, extension methods, elicitation and the cancel cascade",
  targetLabel: "examples",
  fixture: (examplesDir, validator, checks) => new Fixture(examplesDir, validator, checks, "acp-interop-auth-ext"),
  multiline: true,
  rawLimit: 600,
  // ACP_INTEROP_TRANSCRIPT=1 prints the frame transcript of passing scenarios as well.
  transcriptOnPass: Boolean(process.env.ACP_INTEROP_TRANSCRIPT),
});

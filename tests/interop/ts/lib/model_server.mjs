// A tiny OpenAI-compatible model server on 127.0.0.1, in the script's own process, for the
// scripts that run an agent on a model (coder.mjs): `POST /v1/chat/completions` answers
// `text/event-stream` in the Chat Completions chunk format — a role chunk, the text in two
// pieces, each tool call as a `tool_calls` delta naming it and then its arguments in pieces,
// the `finish_reason` chunk, a usage-only chunk (`choices: []`) and `data: [DONE]`.
//
// The scenario scripts it: `respond(messages, body, n)` decides each reply from the request's
// messages (`n`: how many requests came before). Every request is recorded (`requests`:
// { body, authorization, headers }) so the scenario can assert what the agent sent; anything off (a
// wrong path, no `stream: true`, `respond` throwing) is recorded in `problems` and answered
// with an HTTP 400 error body, which the agent reports instead of retrying.

import { createServer } from "node:http";

/** A model reply: `text` (optional) and `calls`, each `{ name, arguments }` (an object). */
export const say = (text) => ({ text, calls: [] });
export const call = (name, args, text) => ({ text, calls: [{ name, arguments: args }] });

/** No reply after this many requests: a loop that does not end fails the scenario. */
const MAX_REQUESTS = 12;

export class ModelServer {
  /** `respond(messages, body, n)` → a reply (see `say`, `call`). */
  constructor(respond) {
    this.respond = respond;
    this.requests = [];
    this.problems = [];
    this.server = createServer((req, res) => this.handle(req, res));
  }

  /** Listens on an ephemeral port of 127.0.0.1; `baseUrl` is then `http://127.0.0.1:<port>/v1`. */
  async start() {
    await new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", resolve);
    });
    this.baseUrl = `http://127.0.0.1:${this.server.address().port}/v1`;
    return this;
  }

  close() {
    this.server.closeAllConnections();
    this.server.close();
  }

  /** The messages of the `n`-th request (0-based). */
  messages(n) {
    return this.requests[n]?.body.messages;
  }

  handle(req, res) {
    const chunks = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const fail = (status, message) => {
        this.problems.push(`model server: ${req.method} ${req.url}: ${message}`);
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
      };
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") return fail(404, "not POST /v1/chat/completions");
      let body;
      try {
        body = JSON.parse(raw);
      } catch (e) {
        return fail(400, `the body is not JSON (${e.message}): ${raw.slice(0, 200)}`);
      }
      const n = this.requests.length;
      this.requests.push({ body, authorization: req.headers.authorization, headers: req.headers });
      if (body.stream !== true) return fail(400, `request #${n + 1}: \`stream\` is ${JSON.stringify(body.stream)}, not true`);
      if (!Array.isArray(body.messages)) return fail(400, `request #${n + 1}: no \`messages\` array`);
      if (n >= MAX_REQUESTS) return fail(400, `request #${n + 1}: more than ${MAX_REQUESTS} model calls in one scenario`);
      let reply;
      try {
        reply = this.respond(body.messages, body, n);
      } catch (e) {
        return fail(400, `request #${n + 1}: the scenario's model has no reply: ${e?.message ?? e}`);
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const chunk of chunksOf(reply, body.model, n)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  }
}

/** `text` in two pieces (split between code points). */
function halves(text) {
  const points = Array.from(text);
  const mid = Math.ceil(points.length / 2);
  return [points.slice(0, mid).join(""), points.slice(mid).join("")].filter((p) => p.length > 0);
}

/** The stream of chunks of `reply` to the `n`-th request, as an OpenAI server sends them. */
export function chunksOf(reply, model, n) {
  const id = `chatcmpl-interop-${n + 1}`;
  const created = 1_760_000_000 + n;
  const chunk = (choices, extra = {}) => ({ id, object: "chat.completion.chunk", created, model, choices, ...extra });
  const delta = (d, finish = null) => chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const out = [delta({ role: "assistant", content: "" })];
  for (const piece of halves(reply.text ?? "")) out.push(delta({ content: piece }));
  for (const [index, c] of (reply.calls ?? []).entries()) {
    const callId = `call_${n + 1}_${index + 1}`;
    out.push(delta({ tool_calls: [{ index, id: callId, type: "function", function: { name: c.name, arguments: "" } }] }));
    for (const piece of halves(JSON.stringify(c.arguments))) out.push(delta({ tool_calls: [{ index, function: { arguments: piece } }] }));
  }
  out.push(delta({}, reply.calls?.length ? "tool_calls" : "stop"));
  const usage = { prompt_tokens: 100 * (n + 1), completion_tokens: 10 + n, total_tokens: 100 * (n + 1) + 10 + n };
  out.push(chunk([], { usage }));
  return out;
}

/**
 * The tool results at the end of `messages` (the `tool` messages after the last assistant
 * message), each with the name and arguments of the call it answers: `{ name, arguments,
 * content }`. Empty when the last message is not a tool result.
 */
export function toolResults(messages) {
  const results = [];
  let i = messages.length - 1;
  while (i >= 0 && messages[i].role === "tool") results.unshift(messages[i--]);
  const calls = i >= 0 && messages[i].role === "assistant" ? (messages[i].tool_calls ?? []) : [];
  return results.map((r) => {
    const c = calls.find((x) => x.id === r.tool_call_id);
    let args;
    try {
      args = c ? JSON.parse(c.function.arguments) : undefined;
    } catch {
      args = undefined;
    }
    return { name: c?.function.name, arguments: args, content: r.content, id: r.tool_call_id };
  });
}

// Spawns the agent under test and wires its stdio to the official SDK's
// ndJsonStream while tapping both directions byte-for-byte.
//
// Every line the agent writes to stdout is recorded (raw text, parse result,
// position) and validated against the SDK's JSON Schema; every line the
// client writes is recorded too, so agent responses can be matched to the
// method of the request they answer.

import { spawn } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk";

export class FrameTap {
  constructor(validator) {
    this.validator = validator;
    /** @type {{seq:number, dir:"agent"|"client", raw:string, msg:any, parseError?:string}[]} */
    this.frames = [];
    this.problems = [];
    this.clientRequestMethods = new Map(); // JSON.stringify(id) -> method
    this.answeredIds = new Set();
    this.waiters = [];
    this.seq = 0;
    this.pending = { agent: "", client: "" };
    this.validatedCount = 0;
  }

  push(dir, chunk) {
    this.pending[dir] += chunk.toString("utf8");
    let nl;
    while ((nl = this.pending[dir].indexOf("\n")) >= 0) {
      const line = this.pending[dir].slice(0, nl);
      this.pending[dir] = this.pending[dir].slice(nl + 1);
      this.recordLine(dir, line);
    }
  }

  /** Called when a direction's stream ends; a trailing unterminated line is a problem. */
  end(dir) {
    if (this.pending[dir].length > 0) {
      const rest = this.pending[dir];
      this.pending[dir] = "";
      if (dir === "agent") {
        this.problems.push(`agent stdout ended with an unterminated line: ${JSON.stringify(rest.slice(0, 200))}`);
      }
      this.recordLine(dir, rest);
    }
  }

  recordLine(dir, rawLine) {
    const raw = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine;
    const frame = { seq: this.seq++, dir, raw, msg: undefined };
    if (dir === "agent" && rawLine.endsWith("\r")) {
      this.problems.push(`frame #${frame.seq} ends with CRLF; ACP frames are LF-delimited`);
    }
    if (raw.trim() === "") {
      if (dir === "agent") this.problems.push(`agent wrote an empty line (frame #${frame.seq})`);
      return;
    }
    try {
      frame.msg = JSON.parse(raw);
    } catch (e) {
      frame.parseError = String(e.message);
    }
    this.frames.push(frame);
    if (dir === "client") {
      const m = frame.msg;
      if (m && typeof m === "object" && "method" in m && "id" in m) {
        this.clientRequestMethods.set(JSON.stringify(m.id), m.method);
      }
    } else {
      this.checkAgentFrame(frame);
    }
    for (const w of [...this.waiters]) {
      if (w.pred(frame)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(frame);
      }
    }
  }

  checkAgentFrame(frame) {
    if (frame.parseError) {
      this.problems.push(`agent stdout line #${frame.seq} is not JSON (${frame.parseError}): ${JSON.stringify(frame.raw.slice(0, 200))}`);
      return;
    }
    const probs = this.validator.validateAgentFrame(frame.msg, (id) => this.clientRequestMethods.get(JSON.stringify(id)));
    this.validatedCount++;
    const m = frame.msg;
    if (m && typeof m === "object" && !("method" in m) && "id" in m) {
      const key = JSON.stringify(m.id);
      if (m.id !== null) {
        if (!this.clientRequestMethods.has(key)) probs.push(`response to id ${key} which the client never sent`);
        if (this.answeredIds.has(key)) probs.push(`second response to id ${key}`);
        this.answeredIds.add(key);
      }
    }
    for (const p of probs) this.problems.push(`frame #${frame.seq} ${summarize(frame.raw)}: ${p}`);
  }

  agentFrames() {
    return this.frames.filter((f) => f.dir === "agent" && f.msg !== undefined);
  }

  clientFrames() {
    return this.frames.filter((f) => f.dir === "client" && f.msg !== undefined);
  }

  /** All session/update params sent by the agent (optionally for one session). */
  updates(sessionId) {
    return this.agentFrames()
      .filter((f) => f.msg.method === "session/update" && (sessionId === undefined || f.msg.params?.sessionId === sessionId))
      .map((f) => ({ seq: f.seq, update: f.msg.params.update, sessionId: f.msg.params.sessionId }));
  }

  /** Requests the agent sent to the client. */
  agentRequests(method) {
    return this.agentFrames().filter((f) => "method" in f.msg && "id" in f.msg && (method === undefined || f.msg.method === method));
  }

  /** The agent's response frame to the client request with the given method/params predicate. */
  responseTo(method, paramsPred = () => true) {
    const req = this.clientFrames().find(
      (f) => f.msg.method === method && "id" in f.msg && paramsPred(f.msg.params ?? {}),
    );
    if (!req) return undefined;
    const key = JSON.stringify(req.msg.id);
    return this.agentFrames().find((f) => !("method" in f.msg) && JSON.stringify(f.msg.id) === key);
  }

  /** All responses to client requests of a given method, in order. */
  responsesTo(method) {
    const ids = new Set(
      this.clientFrames()
        .filter((f) => f.msg.method === method && "id" in f.msg)
        .map((f) => JSON.stringify(f.msg.id)),
    );
    return this.agentFrames().filter((f) => !("method" in f.msg) && ids.has(JSON.stringify(f.msg.id)));
  }

  waitFor(pred, what, timeoutMs = 20000) {
    const found = this.frames.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve };
      this.waiters.push(w);
      setTimeout(() => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) {
          this.waiters.splice(i, 1);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }
      }, timeoutMs).unref();
    });
  }
}

export function summarize(raw, n = 160) {
  return raw.length > n ? JSON.stringify(raw.slice(0, n)) + "…" : JSON.stringify(raw);
}

/**
 * Spawn the agent binary (or a `.mjs`/`.js` agent, under this node), with `env` added to this
 * process's environment (`bare`: to none but `PATH`, as an editor starts an agent with no
 * environment of its own, and the reference agent's `REF_AGENT_*` switches) and in `cwd` (default: this process's), and return
 * { child, tap, stream, stderr(), exit }.
 * `stream` is an SDK Stream (ndJsonStream) whose bytes pass through the tap.
 */
export function spawnAgent(binary, validator, { env = {}, cwd, bare = false } = {}) {
  // A JavaScript agent (e.g. v2/reference-agent.mjs) runs under this node.
  const [command, args] = /\.m?js$/.test(binary) ? [process.execPath, [binary]] : [binary, []];
  // Bare keeps the switches of the reference agent (REF_AGENT_*, prove.mjs's defects): the
  // harness's, not an environment.
  const switches = Object.entries(process.env).filter(([k]) => k.startsWith("REF_AGENT_"));
  const base = bare ? { PATH: process.env.PATH ?? "", ...Object.fromEntries(switches) } : { ...process.env, RUST_BACKTRACE: "1" };
  const child = spawn(command, args, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...base, ...env },
    cwd,
  });
  const tap = new FrameTap(validator);
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d.toString("utf8");
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  const exit = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
    child.on("error", (err) => resolve({ code: null, signal: null, error: err }));
  });

  const agentOut = new ReadableStream({
    start(controller) {
      child.stdout.on("data", (chunk) => {
        tap.push("agent", chunk);
        try {
          controller.enqueue(new Uint8Array(chunk));
        } catch {
          /* the SDK already closed its side; the tap still records late frames */
        }
      });
      child.stdout.on("end", () => {
        tap.end("agent");
        try {
          controller.close();
        } catch {
          /* already closed */
        }
      });
      child.stdout.on("error", (e) => controller.error(e));
    },
  });
  const agentIn = new WritableStream({
    write(chunk) {
      tap.push("client", Buffer.from(chunk));
      return new Promise((resolve, reject) => {
        if (child.stdin.destroyed || child.stdin.writableEnded) {
          reject(new Error("agent stdin closed"));
          return;
        }
        child.stdin.write(chunk, (err) => (err ? reject(err) : resolve()));
      });
    },
    close() {
      child.stdin.end();
    },
    abort() {
      child.stdin.destroy();
    },
  });
  child.stdin.on("error", () => {
    /* EPIPE after the agent exits is reported through exit status / tap */
  });
  const stream = acp.ndJsonStream(agentIn, agentOut);
  return {
    child,
    tap,
    stream,
    exit,
    stderr: () => stderr,
    /** Write raw bytes to the agent (bypassing the SDK), still recorded by the tap. */
    writeRaw(text) {
      tap.push("client", Buffer.from(text));
      child.stdin.write(text);
    },
    async shutdown(timeoutMs = 5000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end();
        const t = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
        const r = await exit;
        clearTimeout(t);
        return r;
      }
      return exit;
    },
  };
}

// The runner shared by the interop scripts (interop.mjs, tools.mjs): the scenario registry,
// per-scenario checks and timeouts, capture of the SDK's console diagnostics, the PASS/FAIL
// report with its frame transcript, and the command line (`--list`, exit codes).
//
// A script registers its scenarios with `scenario(...)` and ends with `runCli({...})`,
// passing its fixture (one per scenario, owning the agent processes in `fx.agents`).

import * as acp from "@agentclientprotocol/sdk";
import { FrameValidator } from "./validator.mjs";

/** Limit for one whole scenario. */
export const SCENARIO_TIMEOUT_MS = 60_000;
/** Limit for one awaited step inside a scenario. */
export const WAIT_MS = 10_000;

// ---------------------------------------------------------------------------
// SDK diagnostics: the SDK reports swallowed problems (e.g. a session/update that fails its
// zod schema) through console.error / console.warn. Capture them (from the moment this module
// is imported) so that a scenario fails instead of silently passing.

const sdkDiagnostics = [];
for (const level of ["error", "warn"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    sdkDiagnostics.push(
      `console.${level}: ` +
        args.map((a) => (typeof a === "string" ? a : a instanceof Error ? a.stack : JSON.stringify(a))).join(" "),
    );
    original(...args);
  };
}

// ---------------------------------------------------------------------------
// Checks and helpers for scenario bodies

/** Thrown to abort a scenario; its message is reported as the failure. */
export class ScenarioFailure extends Error {}

export class Checks {
  /** `multiline`: an `equal` mismatch puts expected and got on lines of their own. */
  constructor({ multiline = false } = {}) {
    this.failures = [];
    this.notes = [];
    this.multiline = multiline;
  }
  check(cond, message) {
    if (!cond) this.failures.push(message);
    return Boolean(cond);
  }
  /** Like check, but aborts the scenario when false. */
  must(cond, message) {
    if (!cond) throw new ScenarioFailure(message);
  }
  equal(actual, expected, what) {
    const a = JSON.stringify(actual);
    const e = JSON.stringify(expected);
    const message = this.multiline ? `${what}:\n      expected ${e}\n      got      ${a}` : `${what}: expected ${e}, got ${a}`;
    return this.check(a === e, message);
  }
  note(message) {
    this.notes.push(message);
  }
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new ScenarioFailure(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * An exception for a report. With `errorObjects` (the default) any object with `code` and
 * `message` (a JSON-RPC error, a Node system error such as EPIPE) is shown as
 * `error <code> <message>`; without it, everything but an SDK RequestError shows its stack.
 */
export function describeError(e, { errorObjects = true } = {}) {
  if (e instanceof acp.RequestError) return `RequestError ${e.code} ${JSON.stringify(e.message)} data=${JSON.stringify(e.data)}`;
  if (errorObjects && e && typeof e === "object" && "code" in e && "message" in e) return `error ${e.code} ${JSON.stringify(e.message)}`;
  return String(e?.stack ?? e);
}

// ---------------------------------------------------------------------------
// Scenario registry

const scenarios = {};

/**
 * Registers a scenario: `fn({ fx, c, validator })` runs it with a fresh fixture `fx` and
 * Checks `c`. `options.needsAgent === false`: no fixture is made (`fx` is null).
 */
export function scenario(name, description, fn, options = {}) {
  scenarios[name] = { name, description, fn, options };
}

// ---------------------------------------------------------------------------
// Runner and report

/** ` (name)` for an agent the fixture named (tools.mjs names them after the example). */
const nameOf = (agent) => (agent.name ? ` (${agent.name})` : "");

function transcript(agents, rawLimit, limit = 80) {
  const lines = [];
  for (const [i, agent] of agents.entries()) {
    const frames = agent.tap.frames;
    lines.push(`  --- agent process #${i + 1}${nameOf(agent)}: ${frames.length} frames (→ client to agent, ← agent to client) ---`);
    const show = frames.length > limit ? [...frames.slice(0, 20), null, ...frames.slice(-(limit - 20))] : frames;
    for (const f of show) {
      if (f === null) {
        lines.push(`  … ${frames.length - limit} frames omitted …`);
        continue;
      }
      lines.push(`  #${String(f.seq).padStart(4)} ${f.dir === "client" ? "→" : "←"} ${f.raw.length > rawLimit ? f.raw.slice(0, rawLimit) + "…" : f.raw}`);
    }
    const err = agent.stderr().trim();
    if (err) {
      const tail = err.split("\n").slice(-30);
      lines.push(`  --- agent stderr (last ${tail.length} lines) ---`);
      for (const l of tail) lines.push(`  | ${l}`);
    }
  }
  return lines.join("\n");
}

async function runScenario(sc, target, validator, cli) {
  const c = new Checks({ multiline: cli.multiline });
  const fx = sc.options.needsAgent === false ? null : cli.fixture(target, validator, c);
  const diagStart = sdkDiagnostics.length;
  const started = Date.now();
  try {
    await withTimeout(Promise.resolve().then(() => sc.fn({ fx, c, validator })), SCENARIO_TIMEOUT_MS, `scenario ${sc.name}`);
  } catch (e) {
    c.failures.push(e instanceof ScenarioFailure ? e.message : `unexpected exception: ${cli.describeError(e)}`);
  } finally {
    for (const agent of fx?.agents ?? []) {
      if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill("SIGKILL");
    }
  }
  if (fx) {
    let validated = 0;
    for (const agent of fx.agents) {
      validated += agent.tap.validatedCount;
      for (const p of agent.tap.problems) c.failures.push(`schema/framing${nameOf(agent)}: ${p}`);
    }
    c.check(validated > 0, "no agent frames were validated (tap saw nothing)");
    c.note(`${validated} agent frames validated against the SDK schema`);
  }
  for (const d of sdkDiagnostics.slice(diagStart)) c.failures.push(`SDK diagnostic: ${d}`);
  const ms = Date.now() - started;
  const ok = c.failures.length === 0;
  const out = [`${ok ? "PASS" : "FAIL"} ${sc.name} (${ms} ms) — ${sc.description}`];
  for (const n of c.notes) out.push(`  note: ${n}`);
  for (const f of c.failures) out.push(`  FAILURE: ${f}`);
  if (fx && (!ok || cli.transcriptOnPass)) out.push(transcript(fx.agents, cli.rawLimit));
  fx?.cleanup();
  return { ok, text: out.join("\n") };
}

async function main(cli) {
  const args = process.argv.slice(2);
  if (args[0] === "--list") {
    for (const sc of Object.values(scenarios)) console.log(`${sc.name}\t${sc.description}`);
    return 0;
  }
  if (args.length < 1) {
    process.stderr.write(`usage: node ${cli.script} <${cli.targetArg}> [scenario ...] | --list\n`);
    return 2;
  }
  const [target, ...wanted] = args;
  const unknown = wanted.filter((w) => !scenarios[w]);
  if (unknown.length) {
    process.stderr.write(`unknown scenario(s): ${unknown.join(", ")}; known: ${Object.keys(scenarios).join(", ")}\n`);
    return 2;
  }
  const selected = wanted.length ? wanted.map((w) => scenarios[w]) : Object.values(scenarios);
  const validator = cli.validator ? cli.validator() : new FrameValidator();
  console.log(`${cli.title} (TypeScript SDK @agentclientprotocol/sdk ${validator.sdkVersion}, node ${process.version})`);
  console.log(`${cli.targetLabel}: ${target}`);
  let passed = 0;
  let failed = 0;
  for (const sc of selected) {
    const r = await runScenario(sc, target, validator, cli);
    console.log(r.text);
    if (r.ok) passed++;
    else failed++;
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

/**
 * Runs the registered scenarios as a command line:
 *
 *   node <script> <target> [scenario ...]   runs them (all by default)
 *   node <script> --list                    prints `name<TAB>description` per scenario
 *
 * Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.
 *
 * - `script`, `targetArg`: for the usage line (`usage: node <script> <<targetArg>> …`)
 * - `title`, `targetLabel`: the report's first line and the label of the target on the second
 * - `fixture(target, validator, checks)`: a fresh fixture for one scenario; it has `agents`
 *   (from lib/agent.mjs, optionally with a `name`) and `cleanup()`
 * - `multiline`: see Checks; `rawLimit`: frames longer than this are cut in the transcript
 * - `describeError`: how an unexpected exception is reported
 * - `transcriptOnPass`: print the transcript for passing scenarios too
 * - `validator`: makes the frame validator (default: `new FrameValidator()`, the v1 schema)
 */
export function runCli({
  script,
  targetArg,
  title,
  targetLabel,
  fixture,
  multiline = false,
  rawLimit,
  describeError: describe = describeError,
  transcriptOnPass = false,
  validator,
}) {
  const cli = { script, targetArg, title, targetLabel, fixture, multiline, rawLimit, describeError: describe, transcriptOnPass, validator };
  main(cli).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      console.log(`harness crashed: ${e?.stack ?? e}`);
      process.exitCode = 1;
    },
  );
}

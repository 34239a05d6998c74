#!/usr/bin/env node
// Proves the v2 drivers against the reference agent (reference-agent.mjs, written on the SDK's
// own v2 agent side): every scenario of interop.mjs passes on it, and each defect switched on
// with REF_AGENT_DEFECT makes the scenarios that guard against it fail. A driver that passed
// a defective agent would be a check that cannot fail.
//
// usage: node v2/prove.mjs            (from tests/interop/ts)
// Exit status: 0 when the clean run passes and every defect is caught, 1 otherwise.

import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const DRIVER = join(here, "interop.mjs");
const AGENT = join(here, "reference-agent.mjs");

/** defect -> the scenarios that must fail with it (and why it is a defect). */
const DEFECTS = {
  init_v1_fields: [["initialize_v2"], "a v2 initialize answer carrying v1's agentCapabilities"],
  skip_idle: [["plain_turn"], "no idle state_update at the end of a turn"],
  no_message_id: [["plain_turn"], "session/prompt answered {} (SDK 2.4.0 requires messageId)"],
  late_update: [["plain_turn"], "a chunk after the idle update"],
  v1_tool_call: [["permission"], "the tool call created by v1's tool_call"],
  no_requires_action: [["permission"], "no requires_action while the permission request waits"],
  no_running_after_permission: [["permission"], "no running after the permission answer"],
  cancel_end_turn: [["cancel_mid_turn", "cancel_during_permission"], "a cancelled turn reported end_turn"],
  no_queue: [["queued_prompts"], "a prompt sent during a turn runs at once, beside it"],
  close_answers_first: [["close_during_turn"], "session/close answered before the idle (cancelled) update"],
  no_replay: [["resume_with_replay"], "replayFrom start ignored"],
  replay_always: [["resume_without_replay"], "history replayed without replayFrom"],
  no_resume_state: [["resume_with_replay", "resume_without_replay"], "no state snapshot before the resume answer"],
  list_empty: [["session_list"], "session/list lists nothing"],
  auth_open: [["auth", "coder_starts_anywhere"], "session/new allowed before auth/login"],
};

function run(scenarios, defect) {
  return new Promise((resolve) => {
    const env = { ...process.env, REF_AGENT_DEFECT: defect ?? "" };
    const child = spawn(process.execPath, [DRIVER, AGENT, ...scenarios], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => resolve({ code, out }));
  });
}

/** Runs `jobs` (functions returning promises) at most `n` at a time, results in order. */
async function pool(jobs, n) {
  const results = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: n }, worker));
  return results;
}

let bad = 0;
const clean = await run([], undefined);
const summary = clean.out.split("\n").find((l) => /^\d+ passed, \d+ failed$/.test(l));
if (clean.code === 0) console.log(`ok   the reference agent passes every scenario (${summary})`);
else {
  bad++;
  console.log(`BAD  the reference agent fails the drivers:\n${clean.out}`);
}

const cases = Object.entries(DEFECTS).flatMap(([defect, [scenarios, what]]) => scenarios.map((sc) => ({ defect, sc, what })));
const results = await pool(
  cases.map(({ defect, sc }) => () => run([sc], defect)),
  4,
);
for (const [i, { defect, sc, what }] of cases.entries()) {
  const { code, out } = results[i];
  const failed = code === 1 && out.split("\n").some((l) => l.startsWith(`FAIL ${sc} (`));
  const first = out.split("\n").find((l) => l.trim().startsWith("FAILURE:"))?.trim() ?? "";
  if (failed) console.log(`ok   ${defect} (${what}): ${sc} fails — ${first.slice(0, 220)}`);
  else {
    bad++;
    console.log(`BAD  ${defect} (${what}): ${sc} did not fail (exit ${code})\n${out}`);
  }
}
console.log(bad === 0 ? `proved: clean run passes, ${cases.length} defect runs fail` : `${bad} problem(s)`);
process.exitCode = bad === 0 ? 0 : 1;

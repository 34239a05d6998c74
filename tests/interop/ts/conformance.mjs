#!/usr/bin/env node
// Rules of the spec a conformance kit checks, through the official TypeScript client SDK
// (@agentclientprotocol/sdk), against the examples:
// - `session/load` replays the conversation and then answers; nothing follows the answer for
//   the session (the slash commands of `modes` and `tour` close the replay instead), in a
//   fresh agent process and in the one that recorded the session;
// - `session/resume` sends nothing for the session before its answer (the commands after it).
//
// A round trip after the answer (`session/list`) is the barrier: the agent writes its frames
// in order, so anything the load still sent would come before the list's answer. Every agent
// frame is validated against the SDK's JSON Schema (lib/validator.mjs).
//
// usage: node conformance.mjs <examples-dir> [scenario ...]
//        node conformance.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { runCli, scenario } from "./lib/harness.mjs";
import { Fixture, clientCapabilities, labelOf } from "./lib/peer.mjs";

/** How each example opens a session: tour signs in first. */
async function open(example, peer) {
  await peer.initialize(clientCapabilities());
  if (example === "tour") await peer.authenticate();
}

/** The agent frames carrying a session/update for `sessionId` with seq in (`from`, `to`). */
function updatesFor(peer, sessionId, from, to = Infinity) {
  return peer.tap
    .agentFrames()
    .filter((f) => f.seq > from && f.seq < to && f.msg.method === "session/update" && f.msg.params?.sessionId === sessionId);
}

/** The number of slash commands each example declares. */
const COMMANDS = { modes: 4, tour: 5 };

/**
 * `session/load` of `sessionId` on `peer`: the replay ends with the commands, and after the
 * answer (up to a `session/list` round trip) nothing comes for the session.
 */
async function loadOnce(c, peer, example, sessionId, cwd, who) {
  const load = await peer.call("session/load", { sessionId, cwd, mcpServers: [] }, `${who}: session/load`);
  const list = await peer.call("session/list", {}, `${who}: session/list (the barrier)`);
  const late = updatesFor(peer, sessionId, load.answer.seq, list.answer.seq);
  c.equal(late.map(labelOf), [], `${who}: session/update frames for the session after the session/load answer`);
  const replay = updatesFor(peer, sessionId, load.request.seq, load.answer.seq).map((f) => f.msg.params.update);
  const kinds = replay.map((u) => u.sessionUpdate);
  c.equal(kinds[0], "user_message_chunk", `${who}: the replay starts with the user's prompt`);
  c.equal(kinds.at(-1), "available_commands_update", `${who}: the last update before the session/load answer`);
  c.equal(replay.at(-1)?.availableCommands?.length, COMMANDS[example], `${who}: commands in the replay`);
  c.equal(kinds.filter((k) => k === "available_commands_update").length, 1, `${who}: available_commands_update frames in the replay`);
  c.check(
    await peer.delivered((u) => u.sessionId === sessionId && u.update.sessionUpdate === "available_commands_update"),
    `${who}: the SDK handed the client the available_commands_update`,
  );
}

scenario(
  "load_sends_nothing_after_its_answer",
  "modes and tour: session/load (in a fresh agent process, and in the one that recorded the session) replays the prompt and reply, then the available_commands_update, then answers; no session/update for the session follows the answer (checked up to a session/list round trip)",
  async ({ fx, c }) => {
    for (const example of ["modes", "tour"]) {
      let sessionId;
      await fx.run(example, { name: `${example} A` }, async (peer) => {
        await open(example, peer);
        sessionId = (await peer.newSession()).sessionId;
        await peer.prompt(sessionId, "hi");
        await loadOnce(c, peer, example, sessionId, fx.dataDir, `${example} A (same process)`);
      });
      await fx.run(example, { name: `${example} B` }, async (peer) => {
        await open(example, peer);
        await loadOnce(c, peer, example, sessionId, fx.dataDir, `${example} B (after a restart)`);
        const after = await peer.prompt(sessionId, "again");
        c.equal(after.answer.msg.result?.stopReason, "end_turn", `${example} B: a prompt after the load`);
      });
    }
  },
);

scenario(
  "resume_answers_before_its_commands",
  "modes and tour: session/resume sends no session/update for the session before its answer; the available_commands_update comes after it",
  async ({ fx, c }) => {
    for (const example of ["modes", "tour"]) {
      let sessionId;
      await fx.run(example, { name: `${example} A` }, async (peer) => {
        await open(example, peer);
        sessionId = (await peer.newSession()).sessionId;
        await peer.prompt(sessionId, "hi");
      });
      await fx.run(example, { name: `${example} B` }, async (peer) => {
        await open(example, peer);
        const resume = await peer.call("session/resume", { sessionId, cwd: fx.dataDir, mcpServers: [] }, `${example} B: session/resume`);
        c.equal(updatesFor(peer, sessionId, resume.request.seq, resume.answer.seq).map(labelOf), [], `${example} B: session/update frames before the session/resume answer`);
        const list = await peer.call("session/list", {}, `${example} B: session/list`);
        c.equal(
          updatesFor(peer, sessionId, resume.answer.seq, list.answer.seq).map(labelOf),
          ["update available_commands_update"],
          `${example} B: session/update frames after the session/resume answer`,
        );
      });
    }
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "conformance.mjs",
  targetArg: "examples-dir",
  title: "ACP conformance rules (load ordering)",
  targetLabel: "examples",
  fixture: (examplesDir, validator, checks) => new Fixture(examplesDir, validator, checks, "acp-interop-conformance"),
  multiline: true,
  rawLimit: 600,
  transcriptOnPass: Boolean(process.env.ACP_INTEROP_TRANSCRIPT),
});

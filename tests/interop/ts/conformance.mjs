#!/usr/bin/env node
// Rules of the spec a conformance kit checks, through the official TypeScript client SDK
// (@agentclientprotocol/sdk), against the examples:
// - `session/load` replays the conversation and then answers; nothing follows the answer for
//   the session (the slash commands of `modes` and `tour` close the replay instead), in a
//   fresh agent process and in the one that recorded the session;
// - `session/resume` sends nothing for the session before its answer (the commands after it);
// - `additionalDirectories`: advertised (`sessionCapabilities.additionalDirectories`), sent by
//   the SDK's own session builder (`withAdditionalDirectories`), and honoured end to end by the
//   `workspace` example: a file in the additional root is read and written through the
//   client's fs handlers on a real directory, one outside every root is refused with a message
//   naming it and the roots, the client never asked;
// - an agent starts wherever an editor starts it: `coder`, with no environment but `PATH` (no
//   model, no key, `HOME` in the scenario's directory), answers `initialize` with its sign-in
//   (a `terminal` method for a client with `auth.terminal`, an `agent` one for any: the ACP
//   Registry requires one of the two) and a `session/new` it cannot serve yet with `-32000`
//   naming what to do.
//
// A round trip after the answer (`session/list`) is the barrier: the agent writes its frames
// in order, so anything the load still sent would come before the list's answer. Every agent
// frame is validated against the SDK's JSON Schema (lib/validator.mjs).
//
// usage: node conformance.mjs <examples-dir> [scenario ...]
//        node conformance.mjs --list
//
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { WAIT_MS, runCli, scenario, withTimeout } from "./lib/harness.mjs";
import { Fixture, clientCapabilities, labelOf, same, updatesIn } from "./lib/peer.mjs";

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
const COMMANDS = { modes: 5, tour: 11 };

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

/**
 * Client handlers serving the fs methods from the real disk and allowing every permission
 * request once; each request is recorded in `asked` (paths, tool call titles).
 */
function diskClient(asked) {
  return (app) => {
    app.onRequest("fs/read_text_file", ({ params }) => {
      asked.push(`read ${params.path}`);
      try {
        return { content: readFileSync(params.path, "utf8") };
      } catch {
        throw acp.RequestError.resourceNotFound(params.path);
      }
    });
    app.onRequest("fs/write_text_file", ({ params }) => {
      asked.push(`write ${params.path}`);
      writeFileSync(params.path, params.content);
      return {};
    });
    app.onRequest("session/request_permission", ({ params }) => {
      asked.push(`permission ${params.toolCall.title}`);
      const allow = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    });
  };
}

scenario(
  "additional_directories",
  "workspace advertises sessionCapabilities.additionalDirectories; a session the SDK starts with buildSession(cwd).withAdditionalDirectories([shared]) has both roots, reads a file in the additional root and writes one there (after permission) through the client; a file outside every root is refused with a message naming it and the roots, the client never asked; session/list reports the root; loaded without it (a fresh process), the root is out of bounds",
  async ({ fx, c }) => {
    const [project, shared, outside] = ["project", "shared", "outside"].map((d) => join(fx.dataDir, d));
    for (const dir of [project, shared, outside]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(shared, "README.md"), "# lib\nshared code\n");
    writeFileSync(join(outside, "secret.txt"), "hunter2");
    const secret = join(outside, "secret.txt");
    const fsCaps = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };
    const refusal = (roots) => `\`${secret}\` is outside the session's directories (${roots.map((r) => `\`${r}\``).join(", ")})`;
    const asked = [];
    let sessionId;
    await fx.run("workspace", { name: "workspace A", handlers: diskClient(asked) }, async (peer) => {
      const { wire } = await peer.initialize(fsCaps);
      same(c, wire.agentCapabilities?.sessionCapabilities?.additionalDirectories, {}, "initialize: sessionCapabilities.additionalDirectories");
      const session = await withTimeout(peer.ctx.buildSession(project).withAdditionalDirectories([shared]).start(), WAIT_MS, "buildSession(..).withAdditionalDirectories(..).start()");
      sessionId = session.sessionId;
      const sent = peer.tap.clientFrames().find((f) => f.msg.method === "session/new");
      same(c, sent?.msg.params?.additionalDirectories, [shared], "session/new: additionalDirectories as the SDK sent them");
      c.equal((await peer.prompt(sessionId, "roots")).text, `${project}\n${shared}`, "roots");

      const read = await peer.prompt(sessionId, `read ${join(shared, "README.md")}`);
      c.equal(read.text, "# lib\nshared code\n", "a file in the additional root, read through the client");
      c.equal(read.labels, ["update tool_call", "update tool_call_update", "request fs/read_text_file", "update tool_call_update", "update agent_message_chunk", "answer end_turn"], "frames of the read");
      const notes = join(shared, "NOTES.md");
      const append = await peer.prompt(sessionId, `append ${notes} from the client`);
      c.equal(append.text, `Added to \`${notes}\`.`, "append in the additional root");
      c.equal(readFileSync(notes, "utf8"), "from the client\n", "the file the client wrote in the additional root");
      same(c, asked, [`read ${join(shared, "README.md")}`, `read ${notes}`, `permission Write ${notes}`, `read ${notes}`, `write ${notes}`], "what the client was asked");

      const before = asked.length;
      const refused = await peer.prompt(sessionId, `read ${secret}`);
      c.check(refused.text.includes(refusal([project, shared])), `the refusal names the path and the roots: ${JSON.stringify(refused.text)}`);
      const calls = updatesIn(refused.between).filter((u) => u.sessionUpdate.startsWith("tool_call"));
      c.equal(calls.at(-1)?.status, "failed", "the refused read's tool call ends failed");
      c.equal(refused.answer.msg.result?.stopReason, "end_turn", "the refused read ends the turn normally");
      same(c, asked.slice(before), [], "what the client was asked for the file outside every root");

      const listed = (await peer.call("session/list", {})).wire.sessions?.find((s) => s.sessionId === sessionId);
      same(c, listed?.additionalDirectories, [shared], "session/list: the session's additionalDirectories");
      session.dispose();
    });
    await fx.run("workspace", { name: "workspace B", handlers: diskClient(asked) }, async (peer) => {
      await peer.initialize(fsCaps);
      await peer.call("session/load", { sessionId, cwd: project, mcpServers: [] }, "session/load without additionalDirectories");
      c.equal((await peer.prompt(sessionId, "roots")).text, project, "roots after a load without additionalDirectories");
      const before = asked.length;
      const refused = await peer.prompt(sessionId, `read ${join(shared, "README.md")}`);
      c.check(refused.text.includes("outside the session's directories"), `the old root is out of bounds: ${JSON.stringify(refused.text)}`);
      same(c, asked.slice(before), [], "what the client was asked after the load");
    });
  },
);

// ---------------------------------------------------------------------------

scenario(
  "coder_starts_anywhere",
  "coder with no environment but PATH (HOME and XDG_CONFIG_HOME in the scenario's directory), for a client with and without auth.terminal: initialize is answered with its sign-in (the terminal method running `--sign-in` only with auth.terminal, an agent method always); session/new is -32000 naming `--sign-in` and ACP_MODEL; the agent exits 0 at stdin EOF",
  async ({ fx, c }) => {
    const env = { HOME: join(fx.dataDir, "home"), XDG_CONFIG_HOME: join(fx.dataDir, "config") };
    for (const terminalAuth of [true, false]) {
      const name = `coder (auth.terminal: ${terminalAuth})`;
      await fx.run("coder", { name, env, bare: true }, async (peer) => {
        const methods = (await peer.initialize(clientCapabilities({ terminalAuth }))).wire.authMethods ?? [];
        const terminal = methods.filter((m) => m.type === "terminal").map((m) => m.args);
        c.equal(terminal, terminalAuth ? [["--sign-in"]] : [], `${name}: the arguments of the terminal methods`);
        c.check(
          methods.some((m) => (m.type ?? "agent") === "agent"),
          `${name}: an auth method of type agent: ${JSON.stringify(methods)}`,
        );
        const refused = await peer.fails("session/new", { cwd: fx.dataDir, mcpServers: [] }, -32000, "session/new before a sign-in");
        for (const words of ["--sign-in", "ACP_MODEL"]) {
          c.check(refused.message.includes(words), `${name}: the -32000 message names ${words}: ${JSON.stringify(refused.message)}`);
        }
      });
    }
  },
);

runCli({
  script: "conformance.mjs",
  targetArg: "examples-dir",
  title: "ACP conformance rules (load ordering, additional directories)",
  targetLabel: "examples",
  fixture: (examplesDir, validator, checks) => new Fixture(examplesDir, validator, checks, "acp-interop-conformance"),
  multiline: true,
  rawLimit: 600,
  transcriptOnPass: Boolean(process.env.ACP_INTEROP_TRANSCRIPT),
});

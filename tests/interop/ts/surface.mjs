#!/usr/bin/env node
// What an agent declares on types and methods, through the official TypeScript client SDK
// (@agentclientprotocol/sdk): capabilities in `initialize`, session modes, config options
// (a boolean one only for clients that can show it), slash commands, prompt content and
// message ids. Each feature is checked both ways: the `tour` example (examples/tour.rs), which
// declares everything, and `modes` (modes + a `tone` option + commands) advertise it and it
// works; `echo`, which declares none of it, does not advertise it and refuses it (-32601 for a
// method it does not have, -32602 for content it does not accept).
//
// Every scenario asserts the frames that matter on the raw tap (lib/agent.mjs) — the answer,
// and the updates around it in order — and every agent frame is validated against the SDK's
// JSON Schema (lib/validator.mjs). Authentication, extension methods, elicitation and the
// cancel cascade are in auth_ext.mjs. Each scenario has its own temporary ACP_DATA_DIR.
//
// usage: node surface.mjs <examples-dir> [scenario ...]
//        node surface.mjs --list
//
// <examples-dir> holds the example binaries (cargo puts them in <target>/debug/examples).
// Exit status: 0 when every selected scenario passed, 1 otherwise, 2 on usage errors.

import { WAIT_MS, runCli, scenario } from "./lib/harness.mjs";
import { Fixture, canon, clientCapabilities, labelOf, same, updatesIn } from "./lib/peer.mjs";

// ---------------------------------------------------------------------------
// What tour and modes declare (examples/tour.rs, examples/modes.rs), as the wire carries it.

const API_KEY = { id: "api-key", name: "Use an API key" };
const LOGIN = { type: "terminal", id: "login", name: "Log in from a terminal", args: ["--login"] };

const MODES = [
  { id: "ask", name: "Ask", description: "Answers questions; never edits." },
  { id: "code", name: "Code", description: "May edit files." },
];
const modeState = (currentModeId) => ({ currentModeId, availableModes: MODES });
const modeOption = (currentValue) => ({
  id: "mode",
  name: "Mode",
  description: "How the agent works in this session.",
  category: "mode",
  type: "select",
  currentValue,
  options: MODES.map(({ id, name, description }) => ({ value: id, name, description })),
});
const modelOption = (currentValue) => ({
  id: "model",
  name: "Model",
  description: "Which model answers.",
  category: "model",
  type: "select",
  currentValue,
  options: [
    { value: "fast", name: "Fast", description: "Quick answers." },
    { value: "deep", name: "Deep", description: "Careful answers." },
  ],
});
const braveOption = (currentValue) => ({
  id: "brave",
  name: "Brave mode",
  description: "Skip confirmations (offered to editors that show on/off switches).",
  type: "boolean",
  currentValue,
});

const TOUR_COMMANDS = [
  { name: "help", description: "List the commands." },
  { name: "title", description: "Name this session.", input: { hint: "the new title" } },
  { name: "usage", description: "Show the context meter." },
  { name: "instructions", description: "Show the editor's instructions for this session." },
  { name: "plan", description: "Publish the tour's plan, kept in TOUR.md." },
  { name: "notice", description: "Tell the user something outside the conversation." },
  { name: "compact", description: "Summarise the conversation so far." },
  { name: "delegate", description: "Hand a job to a guide that runs in a session of its own.", input: { hint: "what the guide should do" } },
  { name: "suggest", description: "Offer the user a next prompt (Unstable: prompt suggestions)." },
  { name: "code", description: "Switch to code mode." },
  { name: "ask", description: "Ask for feedback in a form." },
];
const MODES_COMMANDS = [
  { name: "help", description: "List what this agent can do." },
  { name: "code", description: "Switch to code mode." },
  { name: "ask", description: "Switch to ask mode." },
  { name: "echo", description: "Repeat the text after the command.", input: { hint: "text to repeat" } },
  { name: "note", description: "Save a note (code mode only).", input: { hint: "the note" } },
];

const IMAGE = { type: "image", data: "AAAA", mimeType: "image/png" };
const AUDIO = { type: "audio", data: "AAAA", mimeType: "audio/wav" };
const RESOURCE = { type: "resource", resource: { uri: "file:///w/b.rs", text: "fn b() {}" } };
const LINK = { type: "resource_link", uri: "file:///w/a.rs", name: "a.rs" };
const text = (t) => ({ type: "text", text: t });

/** A tour session after signing in with the API key: the peer's session/new exchange. */
async function tourSession(peer, caps = clientCapabilities()) {
  await peer.initialize(caps);
  await peer.authenticate();
  return peer.newSession();
}

/** `v` is absent: undefined or null. */
const absent = (v) => v === undefined || v === null;

/** The config_option_update among frames: its configOptions (undefined if there is none). */
const configUpdate = (frames) => updatesIn(frames, "config_option_update")[0]?.configOptions;

// ---------------------------------------------------------------------------
// Scenarios

scenario(
  "initialize_advertises",
  "tour advertises loadSession, image/audio/embeddedContext, mcp http+sse, session list/resume/close/delete, auth.logout; authMethods [api-key] without auth.terminal (false or capabilities omitted), [api-key, login (terminal, --login)] with it; echo advertises no logout, no authMethods, no image/audio/embeddedContext",
  async ({ fx, c }) => {
    for (const [label, caps, methods] of [
      ["auth.terminal absent", clientCapabilities(), [API_KEY]],
      ["clientCapabilities omitted", null, [API_KEY]],
      ["auth.terminal true", clientCapabilities({ terminalAuth: true }), [API_KEY, LOGIN]],
    ]) {
      await fx.run("tour", { name: `tour [${label}]` }, async (peer) => {
        const { wire, result } = await peer.initialize(caps);
        const caps_ = wire.agentCapabilities ?? {};
        c.equal(caps_.loadSession, true, `[${label}] loadSession`);
        same(c, caps_.promptCapabilities, { image: true, audio: true, embeddedContext: true }, `[${label}] promptCapabilities`);
        same(c, caps_.mcpCapabilities, { http: true, sse: true }, `[${label}] mcpCapabilities`);
        for (const key of ["list", "resume", "close", "delete"]) {
          same(c, caps_.sessionCapabilities?.[key], {}, `[${label}] sessionCapabilities.${key}`);
        }
        same(c, caps_.auth, { logout: {} }, `[${label}] agentCapabilities.auth`);
        same(c, wire.authMethods, methods, `[${label}] authMethods`);
        c.equal(wire.agentInfo?.name, "tour", `[${label}] agentInfo.name`);
        // What the SDK handed the client is what the agent sent.
        same(c, result.authMethods, wire.authMethods, `[${label}] authMethods as the SDK returned them`);
        same(c, result.agentCapabilities, wire.agentCapabilities, `[${label}] agentCapabilities as the SDK returned them`);
      });
    }
    for (const [label, caps] of [
      ["auth.terminal absent", clientCapabilities()],
      ["auth.terminal true", clientCapabilities({ terminalAuth: true })],
    ]) {
      await fx.run("echo", { name: `echo [${label}]` }, async (peer) => {
        const { wire } = await peer.initialize(caps);
        const caps_ = wire.agentCapabilities ?? {};
        c.check(absent(caps_.auth?.logout), `echo [${label}]: agentCapabilities.auth.logout is absent: ${JSON.stringify(caps_.auth)}`);
        c.check(absent(wire.authMethods) || (Array.isArray(wire.authMethods) && wire.authMethods.length === 0), `echo [${label}]: no authMethods: ${JSON.stringify(wire.authMethods)}`);
        for (const key of ["image", "audio", "embeddedContext"]) {
          c.check(!caps_.promptCapabilities?.[key], `echo [${label}]: promptCapabilities.${key} is false or absent: ${JSON.stringify(caps_.promptCapabilities)}`);
        }
        c.note(`echo [${label}]: ${JSON.stringify(wire)}`);
      });
    }
  },
);

scenario(
  "modes",
  "tour: session/new has modes (ask current; ask, code) and the mode config option first; set_mode code -> {} after a config_option_update with mode=code; an unknown mode -> -32602 naming the modes; /code -> current_mode_update then config_option_update; modes example likewise; echo: no modes, set_mode -> -32601",
  async ({ fx, c }) => {
    await fx.run("tour", {}, async (peer) => {
      const created = await tourSession(peer);
      const sid = created.sessionId;
      same(c, created.wire.modes, modeState("ask"), "tour: session/new modes");
      same(c, created.wire.configOptions?.[0], modeOption("ask"), "tour: session/new configOptions[0] (the mode option)");
      same(c, created.result.modes, created.wire.modes, "tour: modes as the SDK returned them");

      const set = await peer.call("session/set_mode", { sessionId: sid, modeId: "code" }, "session/set_mode code");
      c.equal(set.wire, {}, "tour: session/set_mode code result (wire)");
      c.equal(set.between.map(labelOf), ["update config_option_update"], "tour: frames between session/set_mode code and its answer");
      same(c, configUpdate(set.between), [modeOption("code"), modelOption("fast")], "tour: the config_option_update sent for set_mode code");
      c.equal((await peer.prompt(sid, "which mode")).text, "[Code, Fast] which mode (0 attachments)", "tour: a prompt after set_mode code");

      const bad = await peer.fails("session/set_mode", { sessionId: sid, modeId: "architect" }, -32602, "session/set_mode architect");
      c.check(/`ask`/.test(bad.message) && /`code`/.test(bad.message), `tour: the -32602 for an unknown mode names the modes: ${JSON.stringify(bad.message)}`);
      c.equal(bad.between.map(labelOf), [], "tour: frames between a refused set_mode and its answer");

      await peer.call("session/set_mode", { sessionId: sid, modeId: "ask" }, "session/set_mode ask");
      const cmd = await peer.prompt(sid, "/code");
      c.equal(cmd.labels, ["update current_mode_update", "update config_option_update", "answer end_turn"], "tour: frames of /code");
      same(c, updatesIn(cmd.between, "current_mode_update"), [{ sessionUpdate: "current_mode_update", currentModeId: "code" }], "tour: the current_mode_update of /code");
      same(c, configUpdate(cmd.between), [modeOption("code"), modelOption("fast")], "tour: the config_option_update of /code");
      c.check(
        await peer.delivered((u) => u.sessionId === sid && u.update.sessionUpdate === "current_mode_update" && u.update.currentModeId === "code"),
        "tour: the SDK handed the client the current_mode_update",
      );
    });

    await fx.run("modes", {}, async (peer) => {
      await peer.initialize();
      const created = await peer.newSession();
      const sid = created.sessionId;
      same(c, created.wire.modes, modeState("ask"), "modes: session/new modes");
      same(c, created.wire.configOptions?.[0], modeOption("ask"), "modes: session/new configOptions[0] (the mode option)");
      c.equal(created.wire.configOptions?.map((o) => o.id), ["mode", "tone"], "modes: config option ids");
      const cmd = await peer.prompt(sid, "/code");
      c.equal(cmd.labels, ["update current_mode_update", "update config_option_update", "update agent_message_chunk", "answer end_turn"], "modes: frames of /code");
      c.equal(cmd.text, "Switched to code mode.", "modes: message of /code");
      c.equal(configUpdate(cmd.between)?.find((o) => o.id === "mode")?.currentValue, "code", "modes: mode in the config_option_update of /code");
      c.equal((await peer.prompt(sid, "hi")).text, "[code mode] You said: hi", "modes: a prompt in code mode");
      const set = await peer.call("session/set_mode", { sessionId: sid, modeId: "ask" }, "session/set_mode ask");
      c.equal(set.wire, {}, "modes: session/set_mode ask result");
      c.equal(set.between.map(labelOf), ["update config_option_update"], "modes: frames between session/set_mode ask and its answer");
      await peer.fails("session/set_mode", { sessionId: sid, modeId: "plan" }, -32602, "session/set_mode plan");
    });

    await fx.run("echo", {}, async (peer) => {
      await peer.initialize();
      const created = await peer.newSession();
      c.check(absent(created.wire.modes), `echo: no modes in session/new: ${JSON.stringify(created.wire)}`);
      c.check(absent(created.wire.configOptions), `echo: no configOptions in session/new: ${JSON.stringify(created.wire)}`);
      await peer.fails("session/set_mode", { sessionId: created.sessionId, modeId: "code" }, -32601, "session/set_mode code");
    });
  },
);

scenario(
  "config_options",
  "tour: set_config_option model=deep answers the complete list with the new value; an invalid value, an unknown id, a boolean for a select -> -32602; mode=code -> current_mode_update; brave (boolean) listed and settable only for a client with session.configOptions.boolean, else -32602; echo: -32601",
  async ({ fx, c }) => {
    await fx.run("tour", { name: "tour [no boolean options]" }, async (peer) => {
      const created = await tourSession(peer);
      const sid = created.sessionId;
      same(c, created.wire.configOptions, [modeOption("ask"), modelOption("fast")], "tour: session/new configOptions (no boolean capability)");

      const set = await peer.call("session/set_config_option", { sessionId: sid, configId: "model", value: "deep" }, "set_config_option model=deep");
      same(c, set.wire, { configOptions: [modeOption("ask"), modelOption("deep")] }, "tour: set_config_option model=deep result (the complete list)");
      same(c, set.result, set.wire, "tour: set_config_option result as the SDK returned it");
      c.note(`frames between set_config_option model=deep and its answer: ${JSON.stringify(set.between.map(labelOf))}`);
      c.equal((await peer.prompt(sid, "hi")).text, "[Ask, Deep] hi (0 attachments)", "tour: a prompt after model=deep");

      const value = await peer.fails("session/set_config_option", { sessionId: sid, configId: "model", value: "huge" }, -32602, "set_config_option model=huge");
      c.check(/`fast`/.test(value.message) && /`deep`/.test(value.message), `tour: the -32602 for an invalid value names the values: ${JSON.stringify(value.message)}`);
      const id = await peer.fails("session/set_config_option", { sessionId: sid, configId: "speed", value: "fast" }, -32602, "set_config_option speed");
      c.check(/`mode`/.test(id.message) && /`model`/.test(id.message), `tour: the -32602 for an unknown id names the options: ${JSON.stringify(id.message)}`);
      await peer.fails("session/set_config_option", { sessionId: sid, configId: "model", type: "boolean", value: true }, -32602, "set_config_option model=true (boolean)");
      const brave = await peer.fails("session/set_config_option", { sessionId: sid, configId: "brave", type: "boolean", value: true }, -32602, "set_config_option brave=true (not offered)");
      c.note(`brave without the capability: ${JSON.stringify(brave.message)}`);
      for (const ex of [value, id, brave]) c.equal(ex.between.map(labelOf), [], `tour: frames between a refused set_config_option and its answer (${ex.request.msg.params.configId})`);

      const mode = await peer.call("session/set_config_option", { sessionId: sid, configId: "mode", value: "code" }, "set_config_option mode=code");
      same(c, mode.wire, { configOptions: [modeOption("code"), modelOption("deep")] }, "tour: set_config_option mode=code result");
      same(c, updatesIn(mode.between), [{ sessionUpdate: "current_mode_update", currentModeId: "code" }], "tour: updates between set_config_option mode=code and its answer (modes kept in step)");
    });

    await fx.run("tour", { name: "tour [boolean options]" }, async (peer) => {
      const created = await tourSession(peer, clientCapabilities({ booleanConfig: true }));
      const sid = created.sessionId;
      same(c, created.wire.configOptions, [modeOption("ask"), modelOption("fast"), braveOption(false)], "tour: session/new configOptions (boolean capability)");
      const set = await peer.call("session/set_config_option", { sessionId: sid, configId: "brave", type: "boolean", value: true }, "set_config_option brave=true");
      same(c, set.wire, { configOptions: [modeOption("ask"), modelOption("fast"), braveOption(true)] }, "tour: set_config_option brave=true result");
      same(c, set.result, set.wire, "tour: set_config_option brave=true as the SDK returned it");
      c.equal((await peer.prompt(sid, "hi")).text, "[Ask, Fast, brave] hi (0 attachments)", "tour: a prompt with brave on");
      const str = await peer.fails("session/set_config_option", { sessionId: sid, configId: "brave", value: "false" }, -32602, "set_config_option brave=\"false\" (a value id)");
      c.note(`brave set to a value id: ${JSON.stringify(str.message)}`);
    });

    await fx.run("echo", {}, async (peer) => {
      await peer.initialize(clientCapabilities({ booleanConfig: true }));
      const { sessionId, wire } = await peer.newSession();
      c.check(absent(wire.configOptions), `echo: no configOptions in session/new: ${JSON.stringify(wire)}`);
      await peer.fails("session/set_config_option", { sessionId, configId: "model", value: "deep" }, -32601, "set_config_option model=deep");
    });
  },
);

/** Waits for the available_commands_update of `sessionId`; checks it follows the session/new answer. */
async function commandsAfterNew(c, peer, created, expected, who) {
  const frame = await peer.tap.waitFor(
    (f) => f.dir === "agent" && f.msg?.method === "session/update" && f.msg.params?.sessionId === created.sessionId && f.msg.params.update?.sessionUpdate === "available_commands_update",
    `${who}: available_commands_update`,
    WAIT_MS,
  );
  c.check(frame.seq > created.answer.seq, `${who}: the available_commands_update (#${frame.seq}) comes after the session/new answer (#${created.answer.seq})`);
  c.equal(created.between.map(labelOf), [], `${who}: frames between session/new and its answer`);
  same(c, frame.msg.params.update.availableCommands, expected, `${who}: availableCommands`);
  c.check(
    await peer.delivered((u) => u.sessionId === created.sessionId && u.update.sessionUpdate === "available_commands_update"),
    `${who}: the SDK handed the client the available_commands_update`,
  );
}

scenario(
  "slash_commands",
  "tour: after the session/new answer (never before) an available_commands_update with its 11 commands; /title Hello -> session_info_update; /usage -> usage_update; /help lists them; /nope goes to the prompt as text; modes: its 4 commands, /echo hi there -> 'hi there'; echo: no commands, '/help' is text",
  async ({ fx, c }) => {
    await fx.run("tour", {}, async (peer) => {
      const created = await tourSession(peer);
      const sid = created.sessionId;
      await commandsAfterNew(c, peer, created, TOUR_COMMANDS, "tour");

      const title = await peer.prompt(sid, "/title Hello");
      c.equal(title.labels, ["update session_info_update", "answer end_turn"], "tour: frames of /title Hello");
      same(c, updatesIn(title.between), [{ sessionUpdate: "session_info_update", title: "Hello" }], "tour: the update of /title Hello");
      const usage = await peer.prompt(sid, "/usage");
      c.equal(usage.labels, ["update usage_update", "answer end_turn"], "tour: frames of /usage");
      same(c, updatesIn(usage.between), [{ sessionUpdate: "usage_update", used: 1200, size: 200000, cost: { amount: 0.01, currency: "USD" } }], "tour: the update of /usage");
      const help = await peer.prompt(sid, "/help");
      c.equal(help.labels, ["update agent_message_chunk", "answer end_turn"], "tour: frames of /help");
      c.equal(help.text, "Commands: /help, /title, /usage, /instructions, /plan, /notice, /compact, /delegate, /suggest, /code, /ask (pinged 0 times)", "tour: /help");
      c.equal((await peer.prompt(sid, "/nope x")).text, "[Ask, Fast] /nope x (0 attachments)", "tour: an unknown command is a prompt");
      const lists = peer.tap.updates(sid).filter((u) => u.update.sessionUpdate === "available_commands_update");
      c.equal(lists.length, 1, "tour: available_commands_update frames for the session");
    });

    await fx.run("modes", {}, async (peer) => {
      await peer.initialize();
      const created = await peer.newSession();
      await commandsAfterNew(c, peer, created, MODES_COMMANDS, "modes");
      const echo = await peer.prompt(created.sessionId, "/echo hi there");
      c.equal(echo.labels, ["update agent_message_chunk", "answer end_turn"], "modes: frames of /echo hi there");
      c.equal(echo.text, "hi there", "modes: /echo hi there");
      c.equal((await peer.prompt(created.sessionId, "/help")).text, "Commands: /help, /code, /ask, /echo, /note. Modes: ask (answers only), code (may edit: /note).", "modes: /help");
    });

    await fx.run("echo", {}, async (peer) => {
      await peer.initialize();
      const { sessionId } = await peer.newSession();
      c.equal((await peer.prompt(sessionId, "/help")).text, "/help", "echo: '/help' is echoed as text");
      const lists = peer.tap.updates(sessionId).filter((u) => u.update.sessionUpdate === "available_commands_update");
      c.equal(lists.length, 0, "echo: available_commands_update frames");
    });
  },
);

scenario(
  "latest_wave_fallbacks",
  "tour's plan, notice, compaction, subagent and suggestions to this SDK's stable client, which advertises none of them: a legacy plan checklist (one entry per list item), a message instead of the notice and the suggestion, nothing of the compaction, and the subagent's work as text in its tool call, every frame on the one session the client knows and valid against the SDK's schema",
  async ({ fx, c }) => {
    await fx.run("tour", {}, async (peer) => {
      const { sessionId: sid } = await tourSession(peer);
      const plan = await peer.prompt(sid, "/plan");
      c.equal(plan.labels, ["update plan", "answer end_turn"], "tour: frames of /plan");
      same(c, updatesIn(plan.between, "plan")[0].entries.map((e) => [e.content, e.status]), [
        ["Modes and options", "completed"],
        ["Commands", "completed"],
        ["Subagents", "pending"],
      ], "tour: the Markdown plan as a checklist");
      const notice = await peer.prompt(sid, "/notice");
      c.equal(notice.text, "(this editor shows no notices)", "tour: /notice");
      const compact = await peer.prompt(sid, "/compact");
      c.equal(compact.labels, ["answer end_turn"], "tour: frames of /compact");
      const delegate = await peer.prompt(sid, "/delegate count the stops");
      c.equal(delegate.text, "The guide says the tour has 5 stops.", "tour: /delegate");
      const shown = updatesIn(delegate.between).filter((u) => u.sessionUpdate.startsWith("tool_call"));
      const last = shown[shown.length - 1];
      c.equal(last.status, "completed", "tour: the subagent's tool call completes");
      c.check(JSON.stringify(last.content).includes("Looking into: count the stops"), "tour: the subagent's work shows in its tool call");
      const suggest = await peer.prompt(sid, "/suggest");
      c.equal(suggest.text, "(this editor shows no suggestions)", "tour: /suggest");
      const others = peer.tap.agentFrames().filter((f) => f.msg.params?.sessionId && f.msg.params.sessionId !== sid);
      c.equal(others.length, 0, "tour: no frame names another session");
    });
  },
);

scenario(
  "prompt_content",
  "tour accepts a prompt with an image, audio, an embedded resource and a resource_link; echo refuses an image, audio or a resource with -32602 naming prompt[N] and the capability, sending nothing; a resource_link is accepted by both and reads as [@name](uri)",
  async ({ fx, c }) => {
    await fx.run("tour", {}, async (peer) => {
      const { sessionId } = await tourSession(peer);
      const all = await peer.prompt(sessionId, [text("look"), IMAGE, AUDIO, RESOURCE, LINK], "prompt with every kind of content");
      c.equal(all.labels, ["update agent_message_chunk", "answer end_turn"], "tour: frames of the prompt with every kind of content");
      c.equal(all.text, "[Ask, Fast] look\nfn b() {}\n[@a.rs](file:///w/a.rs) (3 attachments)", "tour: the reply (prompt.text() and the attachment count)");
      c.equal((await peer.prompt(sessionId, [LINK], "a resource_link alone")).text, "[Ask, Fast] [@a.rs](file:///w/a.rs) (0 attachments)", "tour: a resource_link alone");
    });

    await fx.run("echo", {}, async (peer) => {
      await peer.initialize();
      const { sessionId } = await peer.newSession();
      for (const [blocks, index, capability] of [
        [[text("look"), IMAGE], 1, "image"],
        [[text("listen"), LINK, AUDIO], 2, "audio"],
        [[RESOURCE, text("read")], 0, "embeddedContext"],
      ]) {
        const what = `a prompt with ${blocks.map((b) => b.type).join(", ")}`;
        const refused = await peer.fails("session/prompt", { sessionId, prompt: blocks }, -32602, what);
        c.check(
          refused.message.includes(`\`prompt[${index}]\``) && refused.message.includes(`promptCapabilities.${capability}`),
          `echo: the -32602 for ${what} names \`prompt[${index}]\` and promptCapabilities.${capability}: ${JSON.stringify(refused.message)}`,
        );
        c.equal(refused.between.map(labelOf), [], `echo: frames between ${what} and its refusal`);
      }
      const link = await peer.prompt(sessionId, [text("look at"), LINK], "text and a resource_link");
      c.equal(link.answer.msg.result?.stopReason, "end_turn", "echo: stopReason of text and a resource_link");
      c.equal(link.text, "look at\n[@a.rs](file:///w/a.rs)", "echo: text and a resource_link echoed");
    });
  },
);

/** The messageId of every agent_message_chunk / agent_thought_chunk among frames, labelled. */
function chunkIds(frames) {
  return updatesIn(frames)
    .filter((u) => u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "agent_thought_chunk")
    .map((u) => ({ kind: u.sessionUpdate === "agent_thought_chunk" ? "thought" : "message", id: u.messageId }));
}

/** Replay checks: user chunks carry ids of their own, one per prompt; agent chunks keep theirs. */
function checkReplay(c, who, replay, live, prompts) {
  const users = replay.filter((u) => u.sessionUpdate === "user_message_chunk");
  const agents = replay.filter((u) => u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "agent_thought_chunk");
  c.check(users.every((u) => typeof u.messageId === "string" && u.messageId.length > 0), `${who}: every replayed user_message_chunk has a messageId: ${JSON.stringify(users)}`);
  const userIds = [...new Set(users.map((u) => u.messageId))];
  c.equal(userIds.length, prompts, `${who}: distinct user message ids (one per prompt)`);
  const agentIds = new Set(agents.map((u) => u.messageId));
  c.check(userIds.every((id) => !agentIds.has(id)), `${who}: the user's message ids ${JSON.stringify(userIds)} are not the agent's ${JSON.stringify([...agentIds])}`);
  same(c, agents.map((u) => u.messageId), live, `${who}: replayed agent chunks keep their live message ids`);
}

scenario(
  "message_ids",
  "every agent_message_chunk / agent_thought_chunk carries a messageId, shared by the chunks of one message, new for each message; session/load replays user_message_chunks with ids of their own (echo after a restart, tour in process), agent chunks with their live ids; ids go on after a restart",
  async ({ fx, c }) => {
    let sid;
    let live = [];
    await fx.run("echo", { name: "echo A" }, async (peer) => {
      await peer.initialize();
      sid = (await peer.newSession()).sessionId;
      const words = chunkIds((await peer.prompt(sid, "hello there world")).between);
      c.equal(words.map((x) => x.kind), ["thought", "message", "message", "message"], "echo A: chunks of 'hello there world'");
      c.check(new Set(words.slice(1).map((x) => x.id)).size === 1, `echo A: the message chunks share one id: ${JSON.stringify(words)}`);
      c.check(words[0].id !== words[1].id, `echo A: the thought is a message of its own: ${JSON.stringify(words)}`);
      const stream = chunkIds((await peer.prompt(sid, "stream 3")).between);
      c.equal(stream.length, 3, "echo A: chunks of 'stream 3'");
      c.check(new Set(stream.map((x) => x.id)).size === 1, `echo A: the chunks of 'stream 3' share one id: ${JSON.stringify(stream)}`);
      c.check(!words.some((x) => x.id === stream[0].id), `echo A: the second turn's message has a new id: ${JSON.stringify([...words, ...stream])}`);
      live = [...words, ...stream].map((x) => x.id);
    });
    await fx.run("echo", { name: "echo B" }, async (peer) => {
      await peer.initialize();
      const load = await peer.call("session/load", { sessionId: sid, cwd: fx.dataDir, mcpServers: [] }, "session/load");
      const replay = updatesIn(load.between);
      checkReplay(c, "echo B", replay, live, 2);
      const again = chunkIds((await peer.prompt(sid, "again")).between);
      const before = new Set(replay.map((u) => u.messageId).filter(Boolean));
      c.check(again.every((x) => !before.has(x.id)), `echo B: ids after the restart are new: ${JSON.stringify(again)} vs ${JSON.stringify([...before])}`);
    });

    await fx.run("tour", {}, async (peer) => {
      const { sessionId } = await tourSession(peer);
      const ids = [];
      for (const t of ["one", "two"]) {
        const chunks = chunkIds((await peer.prompt(sessionId, t)).between);
        c.equal(chunks.map((x) => x.kind), ["message"], `tour: chunks of '${t}'`);
        ids.push(...chunks.map((x) => x.id));
      }
      c.check(new Set(ids).size === 2, `tour: each reply has an id of its own: ${JSON.stringify(ids)}`);
      const load = await peer.call("session/load", { sessionId, cwd: fx.dataDir, mcpServers: [] }, "session/load");
      checkReplay(c, "tour", updatesIn(load.between), ids, 2);
      same(c, load.wire.modes, modeState("ask"), "tour: session/load answer modes");
    });

    for (const agent of fx.agents) {
      for (const f of agent.tap.agentFrames()) {
        const u = f.msg.params?.update;
        if (u && /^(agent_message|agent_thought|user_message)_chunk$/.test(u.sessionUpdate)) {
          c.check(typeof u.messageId === "string" && u.messageId.length > 0, `${agent.name}: frame #${f.seq} ${u.sessionUpdate} has a messageId: ${f.raw}`);
        }
      }
    }
  },
);

// ---------------------------------------------------------------------------

runCli({
  script: "surface.mjs",
  targetArg: "examples-dir",
  title: "ACP declared surface (modes, config options, commands, prompt content, message ids)",
  targetLabel: "examples",
  fixture: (examplesDir, validator, checks) => new Fixture(examplesDir, validator, checks, "acp-interop-surface"),
  multiline: true,
  rawLimit: 600,
  // ACP_INTEROP_TRANSCRIPT=1 prints the frame transcript of passing scenarios as well.
  transcriptOnPass: Boolean(process.env.ACP_INTEROP_TRANSCRIPT),
});

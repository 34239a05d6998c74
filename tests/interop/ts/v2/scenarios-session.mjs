// Session lifecycle scenarios of v2/interop.mjs: session/list, session/resume with and without
// replay (across agent processes sharing one ACP_DATA_DIR), and session/close (idle and during
// a turn).

import { WAIT_MS, scenario, withTimeout } from "../lib/harness.mjs";
import { isMessage, isState, isUpdate, labelOf, textOf } from "./fixture.mjs";
import { agentText, checkQuiet, checkTurn, promptTurn, updatesIn } from "./turns.mjs";

const FIRST = "first words here";

/** A session with the turns `texts` (echo), in a process of its own; returns its id and message ids. */
async function recordConversation(fx, c, texts) {
  return fx.run("echo", async (conn) => {
    await conn.initialize();
    const session = await conn.newSession();
    const messageIds = [];
    for (const text of texts) {
      const turn = await promptTurn(conn, session.sessionId, text, () => session.prompt(text));
      messageIds.push(checkTurn(c, `recording ${JSON.stringify(text)}`, turn));
    }
    session.dispose();
    return { sid: session.sessionId, messageIds };
  });
}

/** session/resume through the SDK; the agent frames for the session between request and answer. */
async function resume(conn, sid, cwd, replayFrom) {
  const params = { sessionId: sid, cwd };
  if (replayFrom !== undefined) params.replayFrom = replayFrom;
  const ex = await conn.call("session/resume", params);
  if (!ex.answer) throw new Error(`session/resume: no answer (${ex.error})`);
  const between = conn.tap.agentFrames().filter((f) => f.seq > ex.request.seq && f.seq < ex.answer.seq && "method" in f.msg && f.msg.params?.sessionId === sid);
  return { ...ex, between };
}

/** After a resume: a prompt (sent with ctx.request, the resumed session has no ActiveSession) works. */
async function promptAfterResume(c, conn, sid, label) {
  const text = "after the resume";
  const turn = await promptTurn(conn, sid, text, () => conn.ctx.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text }] }));
  checkTurn(c, label, turn);
  c.equal(agentText(updatesIn(turn.frames)), text, `${label}: agent text`);
  await checkQuiet(c, conn, sid, turn.idle, label);
}

/** The state snapshot a resume must send after any replay and before its answer (SDK 2.4.0 schema). */
function checkStateSnapshot(c, r, label) {
  const states = r.between.filter((f) => isUpdate(f, f.msg.params.sessionId, "state_update"));
  const last = states.at(-1);
  c.check(last, `${label}: a state_update before the session/resume answer (SDK 2.4.0: "Resume MUST send a current-state snapshot after any replay and before its response"); frames: ${r.between.map(labelOf).join(", ") || "none"}`);
  if (last) c.equal(last.msg.params.update.state, "idle", `${label}: state reported by the resume snapshot`);
  return last;
}

scenario(
  "session_list",
  "echo: two sessions with a turn each are listed by session/list (with and without the cwd filter) with their cwd, also by a fresh agent process",
  async ({ fx, c }) => {
    const a = await recordConversation(fx, c, ["alpha"]);
    const b = await recordConversation(fx, c, ["beta"]);
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      for (const params of [{}, { cwd: fx.workdir }]) {
        const res = await conn.ctx.request("session/list", params);
        const listed = new Map(res.sessions.map((s) => [s.sessionId, s]));
        for (const [name, sid] of [["A", a.sid], ["B", b.sid]]) {
          c.check(listed.has(sid), `session/list ${JSON.stringify(params)} lists session ${name} (${sid}); got ${JSON.stringify(res.sessions)}`);
          c.equal(listed.get(sid)?.cwd, fx.workdir, `session ${name}'s cwd in session/list ${JSON.stringify(params)}`);
        }
      }
    });
  },
);

scenario(
  "resume_with_replay",
  "echo: a new agent process resumes a recorded session with replayFrom {type: start}: both turns replayed as user/agent messages with their original user messageIds, then the state snapshot (idle) before the answer; a prompt works after",
  async ({ fx, c }) => {
    const texts = [FIRST, "stream 2"];
    const { sid, messageIds } = await recordConversation(fx, c, texts);
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const r = await resume(conn, sid, fx.workdir, { type: "start" });
      c.must(!r.error && "result" in r.answer.msg, `session/resume with replay failed: ${JSON.stringify(r.answer.msg.error)}`);
      const updates = updatesIn(r.between);
      const users = updates.filter((u) => u.sessionUpdate.startsWith("user_message"));
      const userIds = [...new Set(users.map((u) => u.messageId))];
      c.equal(userIds.map((id) => agentText(users.filter((u) => u.messageId === id), "user_message")), texts, "replayed user messages");
      c.equal(userIds, messageIds, "replayed user messages keep the messageIds the prompt answers gave");
      // The agent's text after each replayed user message.
      const starts = userIds.map((id) => users.find((u) => u.messageId === id).seq);
      const answers = starts.map((s, i) => agentText(updates.filter((u) => u.seq > s && (i + 1 >= starts.length || u.seq < starts[i + 1]))));
      c.equal(answers, [FIRST, "chunk 0\nchunk 1\n"], "replayed agent text after each user message");
      for (const u of updates.filter(isMessage)) c.check(u.messageId, `replayed ${u.sessionUpdate} #${u.seq} has a messageId`);
      const lastMessage = updates.filter(isMessage).at(-1);
      const snapshot = checkStateSnapshot(c, r, "replay");
      if (snapshot && lastMessage) c.check(snapshot.seq > lastMessage.seq, "the state snapshot follows the last replayed message");
      const marker = updates.find((u) => u.sessionUpdate === "replay_complete");
      if (marker) {
        c.note("the agent also sent replay_complete (agent-client-protocol-schema 1.20.0; not in SDK 2.4.0's schema)");
        if (lastMessage) c.check(marker.seq > lastMessage.seq, "replay_complete follows the last replayed message");
      }
      c.check(!updates.some((u) => u.sessionUpdate === "state_update" && u.state === "running"), `no running state during the replay: ${r.between.map(labelOf).join(", ")}`);
      await promptAfterResume(c, conn, sid, "after replay");
    });
  },
);

scenario(
  "resume_without_replay",
  "echo: a new agent process resumes a recorded session without replayFrom: no message replayed, no replay_complete, the state snapshot (idle) before the answer; a prompt works after",
  async ({ fx, c }) => {
    const { sid } = await recordConversation(fx, c, [FIRST]);
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const r = await resume(conn, sid, fx.workdir, undefined);
      c.must(!r.error && "result" in r.answer.msg, `session/resume failed: ${JSON.stringify(r.answer.msg.error)}`);
      const updates = updatesIn(r.between);
      c.equal(updates.filter((u) => isMessage(u) || u.sessionUpdate === "replay_complete").map((u) => u.sessionUpdate), [], "messages (or replay_complete) before the answer of a resume without replayFrom");
      checkStateSnapshot(c, r, "no replay");
      await promptAfterResume(c, conn, sid, "after resume");
    });
  },
);

scenario(
  "close_idle",
  "echo: session/close on an idle session answers {} and the session goes quiet; it is still listed (close is not delete) and can be resumed and prompted on the same connection",
  async ({ fx, c }) => {
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const sid = session.sessionId;
      checkTurn(c, "before close", await promptTurn(conn, sid, "before close", () => session.prompt("before close")));
      session.dispose();
      const closed = await conn.call("session/close", { sessionId: sid });
      // The SDK turns a -32002 answer into success: judge the wire answer.
      c.must(closed.answer && "result" in closed.answer.msg, `session/close failed: ${JSON.stringify(closed.answer?.msg)}`);
      c.check(Object.keys(closed.answer.msg.result).every((k) => k === "_meta"), `session/close result is {}: ${JSON.stringify(closed.answer.msg.result)}`);
      await checkQuiet(c, conn, sid, closed.answer, "closed");
      const list = await conn.ctx.request("session/list", {});
      c.check(list.sessions.some((s) => s.sessionId === sid), "the closed session is still listed");
      const r = await resume(conn, sid, fx.workdir, undefined);
      c.check(!r.error && "result" in r.answer.msg, `resuming the closed session: ${JSON.stringify(r.answer.msg)}`);
      await promptAfterResume(c, conn, sid, "after close and resume");
    });
  },
);

scenario(
  "close_during_turn",
  "echo 'sleep': session/close while the turn runs -> the idle state_update with stopReason cancelled comes before the close answer ({}); nothing for the session after it",
  async ({ fx, c }) => {
    await fx.run("echo", async (conn) => {
      await conn.initialize();
      const session = await conn.newSession();
      const sid = session.sessionId;
      const promptP = session.prompt("sleep");
      promptP.catch(() => {});
      await conn.waitFor((f) => isUpdate(f, sid, "agent_message_chunk") && textOf(f.msg.params.update) === "sleeping", "the 'sleeping' chunk");
      const closed = await conn.call("session/close", { sessionId: sid });
      c.must(closed.answer && "result" in closed.answer.msg, `session/close failed: ${JSON.stringify(closed.answer?.msg)}`);
      const idle = conn.tap.agentFrames().find((f) => isState(f, sid, "idle"));
      c.check(idle, `no idle state_update for the closed turn (frames: ${conn.framesAfter(0, (f) => f.dir === "agent").map(labelOf).join(", ")})`);
      if (idle) {
        c.equal(idle.msg.params.update.stopReason, "cancelled", "stopReason of the idle update on close");
        c.check(idle.seq < closed.answer.seq, "the idle (cancelled) update comes before the session/close answer");
      }
      const response = await withTimeout(promptP, WAIT_MS, "the prompt answer").catch((e) => ({ error: e }));
      c.check(typeof response.messageId === "string", `the sleep prompt was answered with its messageId: ${JSON.stringify(response)}`);
      await checkQuiet(c, conn, sid, closed.answer, "after close");
    });
  },
);

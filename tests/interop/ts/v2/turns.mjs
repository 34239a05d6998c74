// Checks on one v2 prompt turn as the raw tap saw it (interop.mjs): the prompt answer, the
// user message echo, the state updates around the agent's output, message ids, and silence
// after idle.

import { WAIT_MS, sleep, withTimeout } from "../lib/harness.mjs";
import { isMessage, isState, labelOf, textOf } from "./fixture.mjs";

/** How long a session must stay silent after its idle update. */
export const QUIET_MS = 300;

/** Updates that are the agent's work (they must follow a `running` state update). */
const OUTPUT_TAGS = new Set(["agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk", "tool_call_update", "tool_call_content_chunk", "plan_update"]);
const isOutput = (f) => (f.msg.method === "session/update" && OUTPUT_TAGS.has(f.msg.params.update.sessionUpdate)) || f.msg.method === "session/request_permission";

/** The session/update params of `frames`, with their seq. */
export const updatesIn = (frames) => frames.filter((f) => f.msg.method === "session/update").map((f) => ({ seq: f.seq, ...f.msg.params.update }));

/** Text of the agent messages in `updates`, in order (whole-message updates replace, chunks append). */
export function agentText(updates, tag = "agent_message") {
  const order = [];
  const content = new Map();
  for (const u of updates) {
    if (u.sessionUpdate !== tag && u.sessionUpdate !== `${tag}_chunk`) continue;
    if (!content.has(u.messageId)) {
      order.push(u.messageId);
      content.set(u.messageId, []);
    }
    if (u.sessionUpdate === tag) {
      if (u.content !== undefined) content.set(u.messageId, [...(u.content ?? [])]);
    } else content.get(u.messageId).push(u.content);
  }
  return order.flatMap((id) => content.get(id)).filter((b) => b?.type === "text").map((b) => b.text).join("");
}

/**
 * Sends `text` as a prompt on `sid` through `send()` (an SDK call returning the prompt promise)
 * and waits for the first idle state update of the session after the request; returns the
 * request and answer frames, the SDK's result, the idle frame and the session's agent frames
 * from the request to the idle update (inclusive).
 */
export async function promptTurn(conn, sid, text, send) {
  const mark = conn.tap.seq;
  const promise = send();
  promise.catch(() => {});
  const request = await conn.waitFor((f) => f.dir === "client" && f.seq >= mark && f.msg?.method === "session/prompt" && f.msg.params?.sessionId === sid, "the session/prompt frame");
  const idle = await conn.waitFor((f) => f.seq > request.seq && isState(f, sid, "idle"), `an idle state_update after the prompt ${JSON.stringify(text)}`);
  let result, error;
  try {
    result = await withTimeout(promise, WAIT_MS, `the answer to the prompt ${JSON.stringify(text)}`);
  } catch (e) {
    error = e;
  }
  const frames = conn.framesAfter(request.seq, (f) => f.dir === "agent" && f.seq <= idle.seq && "method" in f.msg && f.msg.params?.sessionId === sid);
  return { text, request, answer: conn.answerTo(request), result, error, idle, frames };
}

/**
 * The checks every finished turn must pass: the answer carries `messageId` (SDK 2.4.0's
 * PromptResponse requires it), a user message with that id echoes the prompt, a `running`
 * state update precedes the agent's output, every message update has a `messageId`, and the
 * idle update carries `stopReason`. Returns the user message id.
 */
export function checkTurn(c, label, turn, stopReason = "end_turn") {
  const { answer, frames, idle, text } = turn;
  c.must(answer, `${label}: the agent never answered session/prompt`);
  c.must(!("error" in answer.msg), `${label}: session/prompt answered with an error: ${JSON.stringify(answer.msg.error)}`);
  const messageId = answer.msg.result?.messageId;
  c.check(
    typeof messageId === "string" && messageId.length > 0,
    `${label}: the session/prompt result must carry the inserted message's messageId (SDK 2.4.0 PromptResponse requires it), got ${JSON.stringify(answer.msg.result)}`,
  );
  c.equal(turn.result?.messageId, messageId, `${label}: messageId the SDK's prompt() resolved with`);
  const updates = updatesIn(frames);
  const users = updates.filter((u) => u.sessionUpdate === "user_message" || u.sessionUpdate === "user_message_chunk");
  c.check(users.length > 0, `${label}: no user_message echo of the prompt (updates: ${frames.map(labelOf).join(", ")})`);
  const echoed = agentText(users.filter((u) => u.messageId === messageId), "user_message");
  c.equal(echoed, text, `${label}: text of the user message whose messageId the prompt answer gave`);
  for (const u of updates.filter(isMessage)) {
    c.check(typeof u.messageId === "string" && u.messageId.length > 0, `${label}: ${u.sessionUpdate} (frame #${u.seq}) has no messageId`);
  }
  const agentIds = new Set(updates.filter((u) => u.sessionUpdate.startsWith("agent_")).map((u) => u.messageId));
  c.check(!agentIds.has(messageId), `${label}: an agent message reuses the user message's id ${JSON.stringify(messageId)}`);
  const running = frames.find((f) => isState(f, f.msg.params.sessionId, "running"));
  const firstOutput = frames.find(isOutput);
  c.check(running, `${label}: no state_update running during the turn (frames: ${frames.map(labelOf).join(", ")})`);
  if (running && firstOutput) c.check(running.seq < firstOutput.seq, `${label}: state_update running must precede the agent's output (frames: ${frames.map(labelOf).join(", ")})`);
  c.equal(idle.msg.params.update.stopReason, stopReason, `${label}: stopReason of the idle state_update`);
  return messageId;
}

/** After `after` (a frame), the session gets nothing more for QUIET_MS. */
export async function checkQuiet(c, conn, sid, after, label) {
  await sleep(QUIET_MS);
  const late = conn.framesAfter(after.seq, (f) => f.dir === "agent" && "method" in f.msg && f.msg.params?.sessionId === sid);
  c.equal(late.map(labelOf), [], `${label}: frames for the session after ${labelOf(after)}`);
}

/** The tool calls in `updates`: toolCallId -> the list of its updates. */
export function toolCalls(updates) {
  const calls = new Map();
  for (const u of updates) {
    if (u.sessionUpdate !== "tool_call_update" && u.sessionUpdate !== "tool_call_content_chunk") continue;
    if (!calls.has(u.toolCallId)) calls.set(u.toolCallId, []);
    calls.get(u.toolCallId).push(u);
  }
  return calls;
}

/** Statuses a tool call went through, in order (patches without status skipped). */
export const statusesOf = (call) => call.filter((u) => u.status !== undefined).map((u) => u.status);

// The frames of one prompt turn as the raw tap saw them, shared by the scripts that assert
// exact frame sequences (tools.mjs, guarantees.mjs).

import { ScenarioFailure } from "./harness.mjs";

/**
 * Every agent frame from the `session/prompt` with this text up to and including its answer,
 * labelled with `label(agent, frame)`, and the client frames sent meanwhile.
 */
export function turnOf(agent, sessionId, promptText, label) {
  const tap = agent.tap;
  const req = tap
    .clientFrames()
    .find((f) => f.msg.method === "session/prompt" && f.msg.params?.sessionId === sessionId && f.msg.params?.prompt?.[0]?.text === promptText);
  if (!req) throw new ScenarioFailure(`no session/prompt ${JSON.stringify(promptText)} on the tap`);
  const key = JSON.stringify(req.msg.id);
  const frames = [];
  let answer;
  for (const f of tap.agentFrames()) {
    if (f.seq < req.seq) continue;
    if (!("method" in f.msg) && JSON.stringify(f.msg.id) === key) {
      answer = f;
      break;
    }
    frames.push(f);
  }
  if (!answer) throw new ScenarioFailure(`no answer to session/prompt ${JSON.stringify(promptText)} on the tap`);
  const all = [...frames, answer];
  const clientFrames = tap.clientFrames().filter((f) => f.seq > req.seq && f.seq < answer.seq);
  return { request: req, frames, answer, all, labels: all.map((f) => label(agent, f)), clientFrames };
}

/** Tool calls numbered by first appearance on the agent's tap (`1`, `2`, …). */
export function toolCallNumber(agent, toolCallId) {
  agent.toolCallNumbers ??= new Map();
  if (!agent.toolCallNumbers.has(toolCallId)) {
    // Number by first appearance on the tap, independent of the order labels are asked for.
    for (const f of agent.tap.agentFrames()) {
      const id = f.msg.params?.update?.toolCallId;
      if (id !== undefined && !agent.toolCallNumbers.has(id)) agent.toolCallNumbers.set(id, agent.toolCallNumbers.size + 1);
    }
  }
  return agent.toolCallNumbers.get(toolCallId) ?? `?${JSON.stringify(toolCallId)}`;
}

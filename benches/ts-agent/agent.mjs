// The bench workload agent (see examples/bench.rs) on the official ACP TypeScript SDK,
// driven by benches/throughput.rs for comparison. Run by hand: `node benches/ts-agent/agent.mjs`
// after `npm ci` in benches/ts-agent.
//
// Prompts: `stream N` sends N agent_message_chunk updates, then end_turn; chunk i's text is
// i as 8 digits and ` of the streamed answer.\n` (`00000042 of the streamed answer.\n`,
// 33 bytes, as in examples/bench.rs; the bench checks every text, in order);
// `permission N` makes N sequential session/request_permission requests, then end_turn;
// `sleep` sends one chunk (`sleeping`), waits until session/cancel, then answers cancelled.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const { methods } = acp;
// One AbortController per session with a running turn.
const turns = new Map();
let nextSession = 0;
let nextCall = 0;

function chunkText(i) {
  // The 0-based index as 8 digits, then the same text as the Rust agents.
  return `${String(i).padStart(8, "0")} of the streamed answer.\n`;
}

const app = acp
  .agent({ name: "bench-ts" })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {},
    authMethods: [],
    agentInfo: { name: "bench-ts", version: "0.0.0" },
  }))
  .onRequest(methods.agent.session.new, () => ({
    sessionId: `sess_${nextSession++}`,
  }))
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    turns.get(params.sessionId)?.abort();
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const sessionId = params.sessionId;
    const controller = new AbortController();
    turns.set(sessionId, controller);
    try {
      const text = params.prompt
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join("")
        .trim();
      const [command, arg] = text.split(/\s+/, 2);
      const n = Number.parseInt(arg ?? "0", 10) || 0;
      if (command === "stream") {
        for (let i = 0; i < n; i++) {
          await client.notify(methods.client.session.update, {
            sessionId,
            update: {
              sessionUpdate: "agent_message_chunk",
              content: { type: "text", text: chunkText(i) },
            },
          });
        }
        return { stopReason: "end_turn" };
      }
      if (command === "permission") {
        const toolCallId = `call_${nextCall++}`;
        await client.notify(methods.client.session.update, {
          sessionId,
          update: {
            sessionUpdate: "tool_call",
            toolCallId,
            title: "Dangerous action",
            kind: "execute",
            status: "pending",
          },
        });
        for (let i = 0; i < n; i++) {
          const answer = await client.request(
            methods.client.session.requestPermission,
            {
              sessionId,
              toolCall: { toolCallId },
              options: [
                { optionId: "allow", name: "Allow", kind: "allow_once" },
                { optionId: "reject", name: "Reject", kind: "reject_once" },
              ],
            },
            { cancellationSignal: controller.signal },
          );
          if (answer.outcome.outcome !== "selected") {
            return { stopReason: "cancelled" };
          }
        }
        await client.notify(methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "tool_call_update", toolCallId, status: "completed" },
        });
        return { stopReason: "end_turn" };
      }
      if (command === "sleep") {
        await client.notify(methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "sleeping" } },
        });
        if (!controller.signal.aborted) {
          await new Promise((resolve) =>
            controller.signal.addEventListener("abort", resolve, { once: true }),
          );
        }
        return { stopReason: "cancelled" };
      }
      return { stopReason: "end_turn" };
    } finally {
      if (turns.get(sessionId) === controller) {
        turns.delete(sessionId);
      }
    }
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;

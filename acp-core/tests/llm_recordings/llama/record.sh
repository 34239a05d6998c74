#!/usr/bin/env bash
# Re-records the streams in this directory from a real llama-server serving the small Gemma 3
# model: scripts/llama-server and scripts/gguf-model provide both (cached per machine).
#
# For each NAME.request.json, POSTs it (to /v1/messages when NAME starts with "anthropic",
# else to /v1/chat/completions) and writes the raw SSE body to NAME.sse. Then cancels a long
# stream after 2 s and keeps what the server logged in cancel.server.log.
#
# The server runs with the tool-use template in this directory (gemma3-tools.jinja: Gemma turns,
# Hermes/Qwen <tool_call> JSON): the GGUF embeds no chat template of its own, so llama-server
# would fall back to ChatML. Usage: acp-core/tests/llm_recordings/llama/record.sh
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
BIN="$("$ROOT/scripts/llama-server")"
GGUF="$("$ROOT/scripts/gguf-model")"
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
LOG="$(mktemp)"

"$BIN" -m "$GGUF" --alias gemma3 --host 127.0.0.1 --port "$PORT" -c 4096 -np 1 -t 2 --no-webui \
    --jinja --chat-template-file "$HERE/gemma3-tools.jinja" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
    sleep 0.5
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { cat "$LOG" >&2; exit 1; }

for request in "$HERE"/*.request.json; do
    name="$(basename "$request" .request.json)"
    path=/v1/chat/completions
    case "$name" in anthropic*) path=/v1/messages ;; esac
    curl -sSN "http://127.0.0.1:$PORT$path" -H 'content-type: application/json' \
        --data-binary @"$request" >"$HERE/$name.sse"
    echo "recorded $name.sse" >&2
done

# A client that goes away mid-stream: the server cancels the task.
from=$(( $(wc -l <"$LOG") + 1 ))
timeout 2 curl -sN "http://127.0.0.1:$PORT/v1/chat/completions" -H 'content-type: application/json' \
    -d '{"model":"gemma3","stream":true,"max_tokens":2000,"messages":[{"role":"user","content":"Write a very long story about a lighthouse keeper."}]}' \
    >/dev/null || true
sleep 1
tail -n +"$from" "$LOG" >"$HERE/cancel.server.log"
echo "recorded cancel.server.log" >&2

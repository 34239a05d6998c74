#!/usr/bin/env python3
"""Interop harness: drives an ACP agent binary with the official Python SDK
(`agent-client-protocol`, import name `acp`) acting as the client.

usage: python interop.py <agent-binary> [scenario ...]
       python interop.py --list

Validation is made to actually bite:
  * responses: the SDK itself validates every result with its pydantic models
    (`request_model`), so a bad result raises inside the scenario;
  * requests/notifications from the agent: the SDK validates them too, but a
    failure in a notification handler is only *logged*; every WARNING+ log
    record is therefore captured and fails the scenario;
  * the SDK's lenient-deserialisation helpers (`salvage_on_error`,
    `skip_invalid_items`, mirroring the schema's x-deserialize-* hints) silently
    replace invalid fields; both are wrapped so any salvage fails the scenario;
  * every frame the agent sent (seen through the connection's stream observer)
    is validated again after the scenario with the SDK's models, by method.

Exit status: 0 when all selected scenarios passed, 1 otherwise, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from importlib.metadata import version as dist_version

import pydantic
from pydantic import ValidationError

import acp
import acp.schema as schema
from acp import RequestError, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

WAIT_S = 10.0
SCENARIO_TIMEOUT_S = 60.0
SHUTDOWN_TIMEOUT_S = 10.0

# ---------------------------------------------------------------------------
# Make the SDK's silent leniency visible.

SALVAGED: list[str] = []
_orig_salvage = schema.salvage_on_error
_orig_skip = schema.skip_invalid_items


def _tracking_salvage(value: Any, handler: Any, fallback: Callable[[], Any]) -> Any:
    def noisy_fallback() -> Any:
        SALVAGED.append(f"SDK replaced an invalid field value {value!r:.200} with its default")
        return fallback()

    return _orig_salvage(value, handler, noisy_fallback)


def _tracking_skip(value: Any, handler: Any) -> Any:
    result = _orig_skip(value, handler)
    if isinstance(value, list) and len(result) != len(value):
        SALVAGED.append(f"SDK dropped {len(value) - len(result)} invalid list item(s) from {value!r:.300}")
    return result


# The generated validators look these names up in acp.schema's globals at call time.
schema.salvage_on_error = _tracking_salvage
schema.skip_invalid_items = _tracking_skip


class LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += " | " + "".join(traceback.format_exception(*record.exc_info)).strip().replace("\n", "\n    ")
        self.records.append(f"{record.levelname} {record.name}: {text}")


LOGS = LogCapture()
logging.getLogger().addHandler(LOGS)
logging.getLogger().setLevel(logging.WARNING)

# Models for validating what the agent sends, by method.
AGENT_REQUEST_MODELS = {
    "fs/read_text_file": ReadTextFileRequest,
    "fs/write_text_file": WriteTextFileRequest,
    "session/request_permission": RequestPermissionRequest,
}
AGENT_NOTIFICATION_MODELS = {"session/update": SessionNotification}
RESULT_MODELS = {
    "initialize": InitializeResponse,
    "session/new": NewSessionResponse,
    "session/prompt": PromptResponse,
}


class ScenarioFailure(Exception):
    pass


@dataclass
class Checks:
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def check(self, cond: Any, message: str) -> bool:
        if not cond:
            self.failures.append(message)
        return bool(cond)

    def must(self, cond: Any, message: str) -> None:
        if not cond:
            raise ScenarioFailure(message)

    def equal(self, actual: Any, expected: Any, what: str) -> bool:
        return self.check(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")

    def note(self, message: str) -> None:
        self.notes.append(message)


async def within(aw: Awaitable[Any], what: str, timeout: float = WAIT_S) -> Any:
    try:
        return await asyncio.wait_for(aw, timeout)
    except asyncio.TimeoutError:
        raise ScenarioFailure(f"timed out after {timeout:.0f} s: {what}") from None


def text_of(update: dict[str, Any] | None) -> str | None:
    if not isinstance(update, dict):
        return None
    content = update.get("content")
    if isinstance(content, dict) and content.get("type") == "text":
        return content.get("text")
    return None


# ---------------------------------------------------------------------------
# Frame recording through the SDK's stream observer.


@dataclass
class Frame:
    seq: int
    direction: str  # "agent" (agent -> client) or "client"
    msg: dict[str, Any]

    def kind(self) -> str:
        m = self.msg
        if m.get("method") == "session/update":
            u = (m.get("params") or {}).get("update") or {}
            tag = u.get("sessionUpdate")
            if isinstance(tag, str) and tag.endswith("_chunk"):
                return f"update:{tag} {json.dumps(text_of(u), ensure_ascii=False)}"
            # A tool_call without `status` is pending: the spec gives `pending` as its default.
            status = u.get("status") or ("pending" if tag == "tool_call" else None)
            if status:
                return f"update:{tag} status={status}"
            return f"update:{tag}"
        if "method" in m:
            return f"request:{m['method']}"
        return "response"


class Recorder:
    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.waiters: list[tuple[Callable[[Frame], bool], asyncio.Future[Frame]]] = []

    def observe(self, event: StreamEvent) -> None:
        direction = "agent" if event.direction == StreamDirection.INCOMING else "client"
        frame = Frame(len(self.frames), direction, event.message)
        self.frames.append(frame)
        for pred, fut in list(self.waiters):
            if not fut.done() and pred(frame):
                fut.set_result(frame)
                self.waiters.remove((pred, fut))

    async def wait_for(self, pred: Callable[[Frame], bool], what: str) -> Frame:
        for f in self.frames:
            if pred(f):
                return f
        fut: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
        self.waiters.append((pred, fut))
        return await within(fut, what)

    def agent(self) -> list[Frame]:
        return [f for f in self.frames if f.direction == "agent"]

    def client(self) -> list[Frame]:
        return [f for f in self.frames if f.direction == "client"]

    def updates(self, session_id: str | None = None) -> list[Frame]:
        return [
            f
            for f in self.agent()
            if f.msg.get("method") == "session/update"
            and (session_id is None or (f.msg.get("params") or {}).get("sessionId") == session_id)
        ]

    def agent_requests(self) -> list[Frame]:
        return [f for f in self.agent() if "method" in f.msg and "id" in f.msg]

    def response_to(self, request: Frame) -> Frame | None:
        for f in self.agent():
            if "method" not in f.msg and f.msg.get("id") == request.msg.get("id"):
                return f
        return None

    def turn(self, session_id: str, prompt_text: str) -> tuple[list[Frame], Frame | None]:
        """Agent frames of one session between a prompt request and its answer."""
        req = next(
            (
                f
                for f in self.client()
                if f.msg.get("method") == "session/prompt"
                and (f.msg.get("params") or {}).get("sessionId") == session_id
                and ((f.msg.get("params") or {}).get("prompt") or [{}])[0].get("text") == prompt_text
            ),
            None,
        )
        if req is None:
            raise ScenarioFailure(f"no session/prompt {prompt_text!r} recorded")
        frames: list[Frame] = []
        for f in self.agent():
            if f.seq < req.seq:
                continue
            if "method" not in f.msg and f.msg.get("id") == req.msg.get("id"):
                return frames, f
            if (f.msg.get("params") or {}).get("sessionId") == session_id:
                frames.append(f)
        return frames, None

    def validate(self) -> list[str]:
        """Validate every agent frame with the SDK's pydantic models, by method."""
        problems: list[str] = []
        methods: dict[str, str] = {}
        for f in self.client():
            if "method" in f.msg and "id" in f.msg:
                methods[json.dumps(f.msg["id"])] = f.msg["method"]
        answered: set[str] = set()
        for f in self.agent():
            m = f.msg
            where = f"frame #{f.seq} {json.dumps(m, ensure_ascii=False)[:160]}"
            if m.get("jsonrpc") != "2.0":
                problems.append(f'{where}: "jsonrpc" must be "2.0"')
            extra = set(m) - {"jsonrpc", "id", "method", "params", "result", "error"}
            if extra:
                problems.append(f"{where}: unexpected members {sorted(extra)}")
            try:
                if "method" in m and "id" in m:
                    model = AGENT_REQUEST_MODELS.get(m["method"])
                    if model is None:
                        problems.append(f"{where}: unexpected request method {m['method']!r}")
                    else:
                        model.model_validate(m.get("params"))
                elif "method" in m:
                    model = AGENT_NOTIFICATION_MODELS.get(m["method"])
                    if model is None:
                        problems.append(f"{where}: unexpected notification method {m['method']!r}")
                    else:
                        model.model_validate(m.get("params"))
                elif "id" in m:
                    key = json.dumps(m["id"])
                    if ("result" in m) == ("error" in m):
                        problems.append(f"{where}: a response needs exactly one of result/error")
                    if m["id"] is not None:
                        if key not in methods:
                            problems.append(f"{where}: response to an id the client never used")
                        if key in answered:
                            problems.append(f"{where}: second response to id {key}")
                        answered.add(key)
                    if "error" in m:
                        err = m["error"]
                        if not (
                            isinstance(err, dict)
                            and isinstance(err.get("code"), int)
                            and not isinstance(err.get("code"), bool)
                            and isinstance(err.get("message"), str)
                        ):
                            problems.append(f"{where}: malformed error object")
                    elif key in methods:
                        model = RESULT_MODELS.get(methods[key])
                        if model is None:
                            problems.append(f"{where}: no model for the result of {methods[key]}")
                        else:
                            model.model_validate(m["result"])
                else:
                    problems.append(f"{where}: neither method nor id")
            except ValidationError as e:
                problems.append(f"{where}: {e.error_count()} validation error(s): {e.errors(include_url=False)[:3]}")
        return problems


# ---------------------------------------------------------------------------
# The client implementation handed to the SDK.


class InteropClient:
    """Implements the SDK's `acp.Client` protocol over an in-memory file system."""

    def __init__(self, fixture: "Fixture") -> None:
        self.fx = fixture

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> RequestPermissionResponse:
        self.fx.permission_calls.append({"session_id": session_id, "tool_call": tool_call, "options": options})
        policy = self.fx.permission_policy
        if policy == "cancel":
            # A client that cancels the turn while this request is open must answer it with `cancelled`.
            await self.fx.conn.cancel(session_id=session_id)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        wanted = {"allow": "allow_once", "reject": "reject_once"}[policy]
        option = next((o for o in options if o.kind == wanted), None)
        if option is None:
            raise RequestError.invalid_params({"details": f"no option of kind {wanted}"})
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.fx.sdk_updates.append((session_id, update))

    async def read_text_file(self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        self.fx.fs_calls.append(("fs/read_text_file", {"path": path, "session_id": session_id}))
        if path not in self.fx.files:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.fx.files[path])

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        self.fx.fs_calls.append(("fs/write_text_file", {"path": path, "session_id": session_id, "content": content}))
        self.fx.files[path] = content
        return WriteTextFileResponse()


FULL_FS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False)
NO_FS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False)


def agent_env() -> dict[str, str]:
    """Extra environment for the agent. The SDK starts agents with a trimmed environment
    (HOME, PATH, ...); RUST_LOG, ACP_DATA_DIR (the agent's session store: a temporary directory in
    tests) and the names listed in ACP_INTEROP_PASS_ENV are passed on."""
    env = {"RUST_BACKTRACE": "1"}
    names = ["RUST_LOG", "ACP_DATA_DIR", *filter(None, os.environ.get("ACP_INTEROP_PASS_ENV", "").split(","))]
    env.update({k: os.environ[k] for k in names if k in os.environ})
    return env


class Fixture:
    def __init__(self, binary: str, checks: Checks) -> None:
        self.binary = binary
        self.c = checks
        self.files: dict[str, str] = {}
        self.fs_calls: list[tuple[str, dict[str, Any]]] = []
        self.permission_calls: list[dict[str, Any]] = []
        self.permission_policy = "allow"
        self.sdk_updates: list[tuple[str, Any]] = []
        self.recorders: list[Recorder] = []
        self.stderr_files: list[Path] = []
        self.tmp = tempfile.TemporaryDirectory(prefix="acp-interop-py-")
        self.workdir = self.tmp.name
        self.conn: Any = None
        self.rec: Recorder | None = None

    async def run(self, body: Callable[[Any, Recorder], Awaitable[None]]) -> None:
        rec = Recorder()
        self.recorders.append(rec)
        self.rec = rec
        stderr_path = Path(self.workdir) / f"agent-stderr-{len(self.recorders)}.log"
        self.stderr_files.append(stderr_path)
        with open(stderr_path, "wb") as stderr_file:
            async with spawn_agent_process(
                InteropClient(self),
                self.binary,
                env=agent_env(),
                transport_kwargs={"stderr": stderr_file.fileno(), "shutdown_timeout": SHUTDOWN_TIMEOUT_S},
                observers=[rec.observe],
            ) as (conn, process):
                self.conn = conn
                await body(conn, rec)
        # spawn_agent_process closed stdin and waited; a clean EOF exit is status 0.
        self.c.check(process.returncode == 0, f"agent should exit with status 0 after stdin EOF, got {process.returncode}")

    async def initialize(self, conn: Any, caps: ClientCapabilities | None = FULL_FS) -> InitializeResponse:
        res = await within(
            conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=caps,
                client_info=Implementation(name="acp-interop-py", version="0.0.0"),
            ),
            "initialize",
        )
        self.c.equal(res.protocol_version, acp.PROTOCOL_VERSION, "initialize.protocolVersion")
        return res

    async def new_session(self, conn: Any) -> str:
        res = await within(conn.new_session(cwd=self.workdir, mcp_servers=[]), "session/new")
        self.c.check(isinstance(res.session_id, str) and res.session_id, "session/new returned a sessionId")
        return res.session_id

    async def prompt(self, conn: Any, session_id: str, text: str, what: str | None = None) -> PromptResponse:
        return await within(conn.prompt(session_id=session_id, prompt=[text_block(text)]), what or f"prompt {text!r}")


# ---------------------------------------------------------------------------
# Scenarios

SCENARIOS: dict[str, tuple[str, Callable[..., Awaitable[None]], bool]] = {}


def scenario(name: str, description: str, needs_agent: bool = True):
    def deco(fn: Callable[..., Awaitable[None]]):
        SCENARIOS[name] = (description, fn, needs_agent)
        return fn

    return deco


@scenario(
    "validation_self_test",
    "the SDK's pydantic models (as used by the client) reject malformed agent output, and salvage tracking is live",
    needs_agent=False,
)
async def validation_self_test(fx: Fixture | None, c: Checks) -> None:
    from acp.utils import validate_model

    bad_results = [
        (PromptResponse, {"stopReason": "finished"}, "unknown stopReason"),
        (InitializeResponse, {"agentCapabilities": {}}, "initialize result without protocolVersion"),
        (NewSessionResponse, {}, "session/new result without sessionId"),
    ]
    for model, payload, why in bad_results:
        try:
            validate_model(payload, model)  # the helper the SDK's request_model uses for results
            c.check(False, f"SDK accepted an invalid {model.__name__} ({why}): {payload}")
        except ValidationError:
            pass
    bad_notifications = [
        ({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}, "chunk without content"),
        ({"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}}, "no sessionId"),
        ({"sessionId": "s", "update": {"sessionUpdate": "nonsense"}}, "unknown update kind"),
    ]
    for payload, why in bad_notifications:
        try:
            SessionNotification.model_validate(payload)
            c.check(False, f"SessionNotification accepted invalid params ({why}): {payload}")
        except ValidationError:
            pass
    # A plan entry with a bad priority is silently dropped by the SDK (x-deserialize-skip-invalid-items);
    # our hook must notice.
    before = len(SALVAGED)
    SessionNotification.model_validate(
        {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "urgent", "status": "pending"}]}}
    )
    c.check(len(SALVAGED) > before, "salvage tracking did not notice an invalid plan entry being dropped")
    del SALVAGED[before:]
    good = SessionNotification.model_validate(
        {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}}
    )
    c.equal(good.update.content.text, "x", "valid notification parses")
    c.note(f"pydantic {pydantic.VERSION}; agent-client-protocol {dist_version('agent-client-protocol')}")


@scenario("prompt_streams_chunks_and_plan", "initialize -> session/new -> prompt: plan, thought, chunks concatenating to the prompt, completed plan, end_turn")
async def prompt_streams(fx: Fixture, c: Checks) -> None:
    text = "Hello from the official Python client,  with ünïcode ✓ and  double spaces"

    async def body(conn: Any, rec: Recorder) -> None:
        init = await fx.initialize(conn)
        c.check(init.agent_capabilities is not None, "initialize result carries agentCapabilities")
        sid = await fx.new_session(conn)
        res = await fx.prompt(conn, sid, text)
        c.equal(res.stop_reason, "end_turn", "stopReason")
        # The SDK-parsed view (pydantic objects delivered to Client.session_update).
        mine = [u for s, u in fx.sdk_updates if s == sid]
        kinds = [u.session_update for u in mine]
        chunks = [u.content.text for u in mine if u.session_update == "agent_message_chunk"]
        c.check(len(chunks) >= 2, f"expected several agent_message_chunks, got {len(chunks)}")
        c.equal("".join(chunks), text, "concatenated agent_message_chunk text")
        plans = [u for u in mine if u.session_update == "plan"]
        c.check(len(plans) >= 2, f"expected two plan updates, got {len(plans)}")
        c.check("agent_thought_chunk" in kinds, "an agent_thought_chunk arrives")
        # Raw order as observed on the wire.
        frames, answer = rec.turn(sid, text)
        c.must(answer is not None, "prompt answer observed")
        wire = [f.msg["params"]["update"].get("sessionUpdate") for f in frames if f.msg.get("method") == "session/update"]
        c.equal(len(wire), len(mine), "updates on the wire vs. delivered by the SDK")
        if "plan" in wire and "agent_message_chunk" in wire:
            first_msg = wire.index("agent_message_chunk")
            last_msg = len(wire) - 1 - wire[::-1].index("agent_message_chunk")
            c.check(wire.index("plan") < first_msg, f"first plan precedes the message chunks: {wire}")
            c.check("agent_thought_chunk" in wire and wire.index("agent_thought_chunk") < first_msg, f"thought precedes the message chunks: {wire}")
            c.check(len(wire) - 1 - wire[::-1].index("plan") > last_msg, f"final plan follows the message chunks: {wire}")
        if plans:
            final = plans[-1]
            c.check(final.entries and all(e.status == "completed" for e in final.entries), f"final plan entries all completed: {final.entries}")
            c.check(bool(plans[0].entries), "first plan has entries")
        late = [f for f in rec.updates(sid) if f.seq > answer.seq]
        c.check(not late, f"no session/update after the prompt answer, got {len(late)}")

    await fx.run(body)


@scenario("pipelined_initialize_and_session_new", "initialize and session/new sent back to back (asyncio.gather) both succeed")
async def pipelined(fx: Fixture, c: Checks) -> None:
    async def body(conn: Any, rec: Recorder) -> None:
        init, new = await within(
            asyncio.gather(
                conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=FULL_FS),
                conn.new_session(cwd=fx.workdir, mcp_servers=[]),
            ),
            "pipelined initialize + session/new",
        )
        c.equal(init.protocol_version, acp.PROTOCOL_VERSION, "initialize.protocolVersion")
        c.check(isinstance(new.session_id, str) and new.session_id, "session/new returned a sessionId")
        sent = [f.msg.get("method") for f in rec.client()][:2]
        c.equal(sent, ["initialize", "session/new"], "order written by the client")
        first_answer = next((f for f in rec.agent() if "method" not in f.msg), None)
        second_request = [f for f in rec.client() if "method" in f.msg][1:2]
        if first_answer and second_request:
            c.note(
                "session/new was written before the initialize answer arrived"
                if second_request[0].seq < first_answer.seq
                else "note: initialize was answered before session/new was written (not truly pipelined this run)"
            )
        res = await fx.prompt(conn, new.session_id, "stream 3")
        c.equal(res.stop_reason, "end_turn", "stopReason")
        c.equal([text_of(f.msg["params"]["update"]) for f in rec.updates(new.session_id)], ["chunk 0\n", "chunk 1\n", "chunk 2\n"], "stream 3 chunks")

    await fx.run(body)


async def permission(fx: Fixture, c: Checks, policy: str) -> None:
    fx.permission_policy = policy

    async def body(conn: Any, rec: Recorder) -> None:
        await fx.initialize(conn)
        sid = await fx.new_session(conn)
        res = await fx.prompt(conn, sid, "permission")
        c.equal(res.stop_reason, "cancelled" if policy == "cancel" else "end_turn", "stopReason")
        c.equal(len(fx.permission_calls), 1, "number of session/request_permission calls")
        if fx.permission_calls:
            call = fx.permission_calls[0]
            c.equal(call["session_id"], sid, "permission request sessionId")
            opts = sorted((o.option_id, o.kind) for o in call["options"])
            c.check(
                ("allow", "allow_once") in opts and ("reject", "reject_once") in opts,
                f"options should include allow/allow_once and reject/reject_once, got {opts}",
            )
        frames, answer = rec.turn(sid, "permission")
        c.must(answer is not None, "prompt answer observed")
        seq = [f.kind() for f in frames]
        if policy == "cancel":
            # The open tool call is reported failed before the `cancelled` answer, and nothing else.
            c.equal(
                seq,
                ["update:tool_call status=pending", "request:session/request_permission", "update:tool_call_update status=failed"],
                "exact frame sequence of the cancelled permission turn",
            )
        else:
            status = {"allow": "completed", "reject": "failed"}[policy]
            word = {"allow": "allowed", "reject": "rejected"}[policy]
            c.equal(
                seq,
                [
                    "update:tool_call status=pending",
                    "request:session/request_permission",
                    f"update:tool_call_update status={status}",
                    f'update:agent_message_chunk "{word}"',
                ],
                "exact frame sequence of the permission turn",
            )
        tc = next((f for f in frames if f.msg["params"].get("update", {}).get("sessionUpdate") == "tool_call"), None)
        if tc is not None:
            u = tc.msg["params"]["update"]
            c.equal((u.get("title"), u.get("kind"), u.get("status", "pending")), ("Dangerous action", "execute", "pending"), "tool_call title/kind/status")
            if "status" not in u:
                c.note("tool_call omits `status` (the spec's default is pending)")
            req = next((f for f in frames if f.msg.get("method") == "session/request_permission"), None)
            if req is not None:
                c.equal(req.msg["params"]["toolCall"].get("toolCallId"), u["toolCallId"], "permission request references the tool call")
                client_answer = next(
                    (f for f in rec.client() if "method" not in f.msg and f.msg.get("id") == req.msg["id"]),
                    None,
                )
                upd = next((f for f in frames if f.msg["params"].get("update", {}).get("sessionUpdate") == "tool_call_update"), None)
                if upd is not None:
                    c.equal(upd.msg["params"]["update"]["toolCallId"], u["toolCallId"], "tool_call_update references the tool call")
                    c.check(client_answer is not None and client_answer.seq < upd.seq, "tool_call_update follows the client's permission answer")

    await fx.run(body)


@scenario("permission_allow", "client selects allow_once: tool_call pending -> request_permission -> tool_call_update completed -> 'allowed' -> end_turn")
async def permission_allow(fx: Fixture, c: Checks) -> None:
    await permission(fx, c, "allow")


@scenario("permission_reject", "client selects reject_once: tool_call pending -> request_permission -> tool_call_update failed -> 'rejected' -> end_turn")
async def permission_reject(fx: Fixture, c: Checks) -> None:
    await permission(fx, c, "reject")


@scenario("permission_cancelled_outcome", "client sends session/cancel and answers the open permission request with outcome cancelled -> stopReason cancelled")
async def permission_cancelled(fx: Fixture, c: Checks) -> None:
    await permission(fx, c, "cancel")


def message_texts(frames: list[Frame]) -> list[str | None]:
    return [text_of(f.msg["params"]["update"]) for f in frames if f.msg.get("method") == "session/update" and f.msg["params"]["update"].get("sessionUpdate") == "agent_message_chunk"]


@scenario("fs_read", "agent reads a file via the client's fs/read_text_file; the reply is exactly the file content")
async def fs_read(fx: Fixture, c: Checks) -> None:
    path = str(Path(fx.workdir) / "notes" / "hello.txt")
    content = "Hello from the Python client's file system ✓\nsecond line\twith a tab\n\nlast line without newline"
    fx.files[path] = content

    async def body(conn: Any, rec: Recorder) -> None:
        await fx.initialize(conn, FULL_FS)
        sid = await fx.new_session(conn)
        res = await fx.prompt(conn, sid, f"read {path}")
        c.equal(res.stop_reason, "end_turn", "stopReason")
        c.equal([m for m, _ in fx.fs_calls], ["fs/read_text_file"], "fs calls made by the agent")
        if fx.fs_calls:
            c.equal(fx.fs_calls[0][1], {"path": path, "session_id": sid}, "fs/read_text_file params")
        frames, _ = rec.turn(sid, f"read {path}")
        texts = message_texts(frames)
        c.equal(len(texts), 1, "number of agent_message_chunks for a read")
        c.equal("".join(t or "" for t in texts), content, "read reply text")

    await fx.run(body)


@scenario("fs_write", "agent writes via fs/write_text_file; content round-trips through a later read")
async def fs_write(fx: Fixture, c: Checks) -> None:
    path = str(Path(fx.workdir) / "out" / "written.txt")
    content = "written by the Python client  interop test ✓ (two spaces kept)"

    async def body(conn: Any, rec: Recorder) -> None:
        await fx.initialize(conn, FULL_FS)
        sid = await fx.new_session(conn)
        res = await fx.prompt(conn, sid, f"write {path} {content}")
        c.equal(res.stop_reason, "end_turn", "stopReason")
        c.equal(fx.fs_calls, [("fs/write_text_file", {"path": path, "session_id": sid, "content": content})], "fs calls made by the agent")
        c.equal(fx.files.get(path), content, "client file content after the write")
        frames, _ = rec.turn(sid, f"write {path} {content}")
        c.equal("".join(t or "" for t in message_texts(frames)), f"wrote {path}", "write reply text")
        res2 = await fx.prompt(conn, sid, f"read {path}")
        c.equal(res2.stop_reason, "end_turn", "read-back stopReason")
        frames2, _ = rec.turn(sid, f"read {path}")
        c.equal("".join(t or "" for t in message_texts(frames2)), content, "content read back through the agent")

    await fx.run(body)


@scenario("fs_read_missing_file", "client answers fs/read_text_file for a missing file with RequestError.resource_not_found: the agent recognises it, says so, ends the turn normally")
async def fs_read_missing(fx: Fixture, c: Checks) -> None:
    path = str(Path(fx.workdir) / "does-not-exist.txt")

    async def body(conn: Any, rec: Recorder) -> None:
        await fx.initialize(conn, FULL_FS)
        sid = await fx.new_session(conn)
        try:
            res = await fx.prompt(conn, sid, f"read {path}")
            outcome = f"result stopReason={res.stop_reason}"
        except RequestError as e:
            outcome = f"error response {e.args[0]!r} code={e.code} data={e.data!r}"
        client_err = next((f for f in rec.client() if "error" in f.msg), None)
        c.note(f"Python client answered fs/read_text_file with: {json.dumps(client_err.msg) if client_err else '(no error frame?)'}")
        frames, _ = rec.turn(sid, f"read {path}")
        c.note(f"agent answered the prompt with {outcome}; message chunks: {message_texts(frames)}")
        # The client's not-found error is recognised (Error::is_not_found) and reported in chat.
        c.equal(outcome, "result stopReason=end_turn", "a missing file does not fail the turn")
        c.equal(message_texts(frames), [f"no such file: {path}"], "the agent says the file is missing")
        res2 = await fx.prompt(conn, sid, "stream 1")
        c.equal(res2.stop_reason, "end_turn", "follow-up prompt after the failed read")

    await fx.run(body)


@scenario("no_fs_capability", "client without fs capabilities (false, and default): read/write reply 'fs unavailable...' and no fs/* request is sent")
async def no_fs(fx: Fixture, c: Checks) -> None:
    for label, caps in (("fs explicitly false", NO_FS), ("clientCapabilities default", None)):

        async def body(conn: Any, rec: Recorder) -> None:
            await fx.initialize(conn, caps)
            sid = await fx.new_session(conn)
            for text in (f"read {fx.workdir}/a.txt", f"write {fx.workdir}/b.txt some content"):
                res = await fx.prompt(conn, sid, text)
                c.equal(res.stop_reason, "end_turn", f"[{label}] stopReason for {text!r}")
                frames, _ = rec.turn(sid, text)
                texts = message_texts(frames)
                c.check(texts and (texts[0] or "").startswith("fs unavailable"), f"[{label}] reply to {text!r} should start with 'fs unavailable', got {texts}")
            fs_reqs = [f for f in rec.agent_requests() if str(f.msg.get("method", "")).startswith("fs/")]
            c.check(not fs_reqs, f"[{label}] agent sent fs requests to a client without fs capability: {[f.msg for f in fs_reqs]}")
            init_req = next(f for f in rec.client() if f.msg.get("method") == "initialize")
            sent_caps = init_req.msg["params"].get("clientCapabilities", "(omitted)")
            c.note(f"[{label}] the Python SDK sent clientCapabilities={json.dumps(sent_caps)}")

        await fx.run(body)
    c.equal(fx.fs_calls, [], "fs handler invocations on the client")


@scenario("cancel_mid_turn", "'sleep' then session/cancel: answer cancelled, no session/update for that session afterwards, session usable again")
async def cancel_mid_turn(fx: Fixture, c: Checks) -> None:
    async def body(conn: Any, rec: Recorder) -> None:
        await fx.initialize(conn)
        sid = await fx.new_session(conn)
        prompt_task = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("sleep")]))
        await rec.wait_for(
            lambda f: f.direction == "agent" and f.msg.get("method") == "session/update" and f.msg["params"].get("sessionId") == sid and text_of(f.msg["params"]["update"]) == "sleeping",
            "the 'sleeping' chunk",
        )
        await conn.cancel(session_id=sid)
        res = await within(prompt_task, "prompt answer after session/cancel")
        c.equal(res.stop_reason, "cancelled", "stopReason after session/cancel")
        await asyncio.sleep(0.3)
        other = await within(conn.new_session(cwd=fx.workdir, mcp_servers=[]), "barrier session/new")
        c.check(other.session_id != sid, "a second session gets a distinct id")
        _, answer = rec.turn(sid, "sleep")
        c.must(answer is not None, "cancelled prompt answer observed")
        late = [f for f in rec.updates(sid) if f.seq > answer.seq]
        c.check(not late, f"session/update for the cancelled session after its answer: {[f.msg for f in late]}")
        res2 = await fx.prompt(conn, sid, "stream 2")
        c.equal(res2.stop_reason, "end_turn", "stopReason of the next turn")
        frames2, _ = rec.turn(sid, "stream 2")
        c.equal([text_of(f.msg["params"].get("update")) for f in frames2], ["chunk 0\n", "chunk 1\n"], "updates of the next turn")

    await fx.run(body)


@scenario("concurrent_sessions", "two sessions run 'stream 200' at once: each session's chunks arrive complete and in order before its own answer")
async def concurrent(fx: Fixture, c: Checks) -> None:
    n = 200

    async def body(conn: Any, rec: Recorder) -> None:
        await fx.initialize(conn)
        a = await fx.new_session(conn)
        b = await fx.new_session(conn)
        c.check(a != b, "distinct session ids")
        ra, rb = await within(asyncio.gather(fx.prompt(conn, a, f"stream {n}"), fx.prompt(conn, b, f"stream {n}")), "both stream prompts", WAIT_S * 2)
        c.equal((ra.stop_reason, rb.stop_reason), ("end_turn", "end_turn"), "stop reasons")
        expected = [f"chunk {i}\n" for i in range(n)]
        spans = []
        for sid in (a, b):
            frames, answer = rec.turn(sid, f"stream {n}")
            c.must(answer is not None, f"answer for {sid}")
            texts = [text_of(f.msg["params"].get("update")) for f in frames]
            mismatch = next((i for i, (x, y) in enumerate(zip(texts, expected)) if x != y), None)
            c.check(texts == expected, f"session {sid}: expected {n} ordered chunks before its answer, got {len(texts)} (first mismatch at {mismatch})")
            late = [f for f in rec.updates(sid) if f.seq > answer.seq]
            c.check(not late, f"session {sid}: {len(late)} updates after its answer")
            if frames:
                spans.append((frames[0].seq, answer.seq))
            delivered = [u for s, u in fx.sdk_updates if s == sid]
            c.equal(len(delivered), n, f"updates delivered by the SDK for {sid}")
        if len(spans) == 2:
            overlap = spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]
            c.note(f"turn frame spans {spans}: {'interleaved (ran concurrently)' if overlap else 'not interleaved'}")

    await fx.run(body)


# ---------------------------------------------------------------------------
# Runner


def transcript(fx: Fixture, limit: int = 80) -> str:
    out: list[str] = []
    for i, rec in enumerate(fx.recorders):
        frames = rec.frames
        out.append(f"  --- agent process #{i + 1}: {len(frames)} frames (→ client to agent, ← agent to client) ---")
        shown: list[Frame | None] = list(frames) if len(frames) <= limit else [*frames[:20], None, *frames[-(limit - 20):]]
        for f in shown:
            if f is None:
                out.append(f"  … {len(frames) - limit} frames omitted …")
                continue
            raw = json.dumps(f.msg, ensure_ascii=False)
            out.append(f"  #{f.seq:4d} {'→' if f.direction == 'client' else '←'} {raw[:400]}{'…' if len(raw) > 400 else ''}")
        if i < len(fx.stderr_files) and fx.stderr_files[i].exists():
            err = fx.stderr_files[i].read_text(errors="replace").strip()
            if err:
                tail = err.splitlines()[-30:]
                out.append(f"  --- agent stderr (last {len(tail)} lines) ---")
                out.extend(f"  | {line}" for line in tail)
    return "\n".join(out)


async def run_scenario(name: str, binary: str) -> tuple[bool, str]:
    description, fn, needs_agent = SCENARIOS[name]
    c = Checks()
    fx = Fixture(binary, c) if needs_agent else None
    logs_before = len(LOGS.records)
    salvaged_before = len(SALVAGED)
    started = time.monotonic()
    try:
        await asyncio.wait_for(fn(fx, c), SCENARIO_TIMEOUT_S)
    except ScenarioFailure as e:
        c.failures.append(str(e))
    except asyncio.TimeoutError:
        c.failures.append(f"scenario timed out after {SCENARIO_TIMEOUT_S:.0f} s")
    except ValidationError as e:
        c.failures.append(f"the SDK rejected an agent response (pydantic): {e}")
    except RequestError as e:
        c.failures.append(f"unexpected JSON-RPC error from the agent: code={e.code} message={e.args[0]!r} data={e.data!r}")
    except Exception:
        c.failures.append("unexpected exception: " + traceback.format_exc())
    if fx is not None:
        validated = 0
        for rec in fx.recorders:
            validated += len(rec.agent())
            for p in rec.validate():
                c.failures.append(f"validation: {p}")
        c.check(validated > 0, "no agent frames were observed")
        c.note(f"{validated} agent frames validated with the SDK's pydantic models")
    for s in SALVAGED[salvaged_before:]:
        c.failures.append(f"lenient deserialisation hid invalid data: {s}")
    for r in LOGS.records[logs_before:]:
        c.failures.append(f"SDK log: {r}")
    ok = not c.failures
    lines = [f"{'PASS' if ok else 'FAIL'} {name} ({(time.monotonic() - started) * 1000:.0f} ms) — {description}"]
    lines += [f"  note: {n}" for n in c.notes]
    lines += [f"  FAILURE: {f}" for f in c.failures]
    if not ok and fx is not None:
        lines.append(transcript(fx))
    if fx is not None:
        fx.tmp.cleanup()
    return ok, "\n".join(lines)


async def main_async(binary: str, names: list[str]) -> int:
    print(f"ACP interop (Python SDK agent-client-protocol {dist_version('agent-client-protocol')}, pydantic {pydantic.VERSION}, python {sys.version.split()[0]})")
    print(f"agent: {binary}")
    passed = failed = 0
    for name in names:
        ok, text = await run_scenario(name, binary)
        print(text, flush=True)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", nargs="?")
    parser.add_argument("scenarios", nargs="*")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for name, (desc, _, _) in SCENARIOS.items():
            print(f"{name}\t{desc}")
        return 0
    if not args.binary:
        parser.print_usage(sys.stderr)
        return 2
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {unknown}; known: {list(SCENARIOS)}", file=sys.stderr)
        return 2
    if not os.access(args.binary, os.X_OK):
        print(f"agent binary {args.binary} is missing or not executable", file=sys.stderr)
        return 2
    return asyncio.run(main_async(args.binary, args.scenarios or list(SCENARIOS)))


if __name__ == "__main__":
    sys.exit(main())

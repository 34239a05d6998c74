#!/usr/bin/env python3
"""Writes the serve_bytes seed corpus (fuzz/seeds/serve_bytes/): real frames of ACP sessions,
one file per scenario, plus malformed ones. Re-run after changing it:
    python3 fuzz/seeds/make_seeds.py
Sessions are opened with `session/load` on a fixed id (`s1`): the ids `session/new` makes up
are random, so a byte-level fuzzer could never name them. The agent's own requests are
numbered 0, 1, 2… per connection, which the answers below rely on. Blank lines give the
agent's tasks time to run (the harness yields after every line)."""

import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve_bytes")

def j(obj):
    return json.dumps(obj, separators=(",", ":")).encode()

def req(id, method, params=None):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return j(m)

def note(method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return j(m)

def ok(id, result):
    return j({"jsonrpc": "2.0", "id": id, "result": result})

def err(id, code, message, data=None):
    e = {"code": code, "message": message}
    if data is not None:
        e["data"] = data
    return j({"jsonrpc": "2.0", "id": id, "error": e})

def init(id=0, fs=True, terminal=True, version=1):
    return req(id, "initialize", {
        "protocolVersion": version,
        "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": terminal},
        "clientInfo": {"name": "seed-client", "title": "Seed", "version": "1.0.0"},
    })

def load(id=1, session="s1", cwd="/work/project"):
    return req(id, "session/load", {"sessionId": session, "cwd": cwd, "mcpServers": []})

def prompt(id, text, session="s1", extra=()):
    return req(id, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}, *extra]})

def allow(option="allow_once"):
    return {"outcome": {"outcome": "selected", "optionId": option}}

GAP = b""  # a blank line: more time for the agent's tasks

SEEDS = {
    "initialize": [init()],
    "initialize-v2-no-caps": [req(0, "initialize", {"protocolVersion": 2, "clientCapabilities": {}})],
    "initialize-twice": [init(0), init(1, fs=False, version=0)],
    "new-session": [
        init(),
        req(1, "session/new", {"cwd": "/work/project", "mcpServers": []}),
        req(2, "session/new", {"cwd": "/work/project", "mcpServers": [
            {"name": "fs", "command": "/usr/bin/mcp-fs", "args": ["--root", "/"], "env": [{"name": "A", "value": "b"}]},
            {"type": "http", "name": "web", "url": "https://example.com/mcp", "headers": []}]}),
        req(3, "session/set_mode", {"sessionId": "unknown", "modeId": "code"}),
        prompt(4, "hello", session="unknown"),
    ],
    "load-and-prompt": [
        init(), load(),
        prompt(2, "hello world, how are you?"), GAP,
        prompt(3, "stream 3"), GAP,
        prompt(4, "plan next\nthink about it\ncount\ncount\ntools"), GAP,
        req(5, "session/set_mode", {"sessionId": "s1", "modeId": "code"}),
        req(6, "session/set_mode", {"sessionId": "s1", "modeId": "chaos"}),
    ],
    "prompt-content-blocks": [
        init(), load(),
        req(2, "session/prompt", {"sessionId": "s1", "prompt": [
            {"type": "text", "text": "look at these", "annotations": {"audience": ["user"], "priority": 0.5}},
            {"type": "resource_link", "uri": "file:///work/project/README.md", "name": "README.md", "mimeType": "text/markdown", "size": 1234},
            {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///work/project/a.rs", "mimeType": "text/x-rust", "text": "fn main() {}\n"}},
            {"type": "resource", "resource": {"uri": "file:///work/project/a.bin", "blob": "AAEC"}},
        ], "_meta": {"vendor": {"trace": "abc"}}}),
    ],
    "read-tool": [
        init(), load(),
        prompt(2, "read a.txt"), GAP, GAP,
        ok(0, {"content": "line one\nline two\n"}), GAP,
        prompt(3, "read missing.txt"), GAP, GAP,
        err(1, -32002, "Resource not found", {"path": "missing.txt"}), GAP,
        prompt(4, "read other.txt"), GAP, GAP,
        err(2, -32603, "Internal error"),
    ],
    "write-tool-permission": [
        init(), load(),
        prompt(2, "write notes.md - buy milk"), GAP, GAP,
        ok(0, allow("allow_always")), GAP, GAP,
        ok(1, {"content": "old\n"}), GAP, GAP,
        ok(2, {}), GAP, GAP,
        prompt(3, "write notes.md again"), GAP, GAP,
        ok(3, {"content": "old\n"}), GAP, GAP,
        ok(4, None),
    ],
    "write-tool-rejected": [
        init(), load(),
        prompt(2, "write notes.md x"), GAP, GAP,
        ok(0, allow("reject_once")), GAP, GAP,
        prompt(3, "write notes.md y"), GAP, GAP,
        ok(1, {"outcome": {"outcome": "cancelled"}}),
    ],
    "ask-permission": [
        init(), load(),
        prompt(2, "ask"), GAP, GAP,
        ok(0, allow("allow")), GAP,
        prompt(3, "ask"), GAP, GAP,
        ok(1, allow("reject")), GAP,
        prompt(4, "ask"), GAP, GAP,
        ok(2, {"outcome": {"outcome": "cancelled"}}), GAP,
        prompt(5, "ask"), GAP, GAP,
        ok(3, {"outcome": {"outcome": "selected"}}),
    ],
    "session-cancel": [
        init(), load(),
        prompt(2, "sleep"), GAP,
        note("session/cancel", {"sessionId": "s1"}), GAP,
        prompt(3, "ask"), GAP, GAP,
        note("session/cancel", {"sessionId": "s1"}), GAP,
        ok(0, allow("allow")),
        prompt(4, "hello again"),
        note("session/cancel", {"sessionId": "nope"}),
        note("session/cancel", {}),
    ],
    "cancel-request": [
        init(), load(),
        prompt(7, "sleep"), GAP,
        note("$/cancel_request", {"requestId": 7}), GAP,
        prompt("p8", "write a b"), GAP,
        note("$/cancel_request", {"requestId": "p8"}),
        note("$/cancel_request", {"requestId": 99}),
        note("$/cancel_request", {"requestId": None}),
        note("$/cancel_request", {}),
    ],
    "busy-session": [
        init(), load(),
        prompt(2, "sleep"),
        prompt(3, "hello"),
        prompt(2, "duplicate id"),
        load(4, session="s2"),
        prompt(5, "stream 2", session="s2"),
    ],
    "call-by-name": [
        init(), load(),
        prompt(2, 'call add {"a":1,"b":2}\ncall add {"a":"x"}\ncall add {"a":1,"b":2,"c":3}\ncall nope {}\ncall add not-json\nadd 9223372036854775807 1'), GAP, GAP,
        prompt(3, 'call read {"path":"a.txt"}'), GAP, GAP,
        ok(0, {"content": "a"}), GAP,
        prompt(4, 'call write {"path":"a.txt","content":"z"}'), GAP, GAP,
        ok(1, allow("allow_once")), GAP, GAP,
        err(2, -32002, "nf"), GAP, GAP,
        ok(3, None),
    ],
    "terminal": [
        init(), load(),
        prompt(2, "run ls"), GAP, GAP,
        ok(0, {"terminalId": "term-1"}), GAP, GAP,
        ok(1, {"exitCode": 0, "signal": None}), GAP, GAP,
        ok(2, {}), GAP,
        prompt(3, "run sleep"), GAP, GAP,
        ok(3, {"terminalId": "term-2"}), GAP, GAP,
        note("session/cancel", {"sessionId": "s1"}), GAP, GAP,
        ok(4, {}),
        ok(5, {}),
    ],
    "terminal-unsupported": [
        init(terminal=False, fs=False), load(),
        prompt(2, "run ls\nread a.txt\nwrite a.txt b"),
    ],
    "responses-malformed": [
        init(), load(),
        prompt(2, "read a.txt"), GAP, GAP,
        j({"jsonrpc": "2.0", "id": 0, "result": {"content": "x"}, "error": {"code": 1, "message": "both"}}),
        prompt(3, "read b.txt"), GAP, GAP,
        j({"jsonrpc": "2.0", "id": 1}),
        prompt(4, "read c.txt"), GAP, GAP,
        j({"jsonrpc": "2.0", "id": 2, "error": "oops"}),
        prompt(5, "read d.txt"), GAP, GAP,
        ok(3, {"content": 42}),
        ok(3, {"content": "twice"}),
        ok(77, {}), ok("str", {}), ok(None, {}),
        j({"jsonrpc": "2.0", "id": 1, "method": "x", "result": 1}),
    ],
    "request-with-result-and-error": [
        init(),
        j({"jsonrpc": "2.0", "id": 5, "result": 1, "error": {"code": 1, "message": "m"}}),
        j({"jsonrpc": "2.0", "id": 6, "method": "session/new", "result": {}, "error": {}}),
        j({"jsonrpc": "2.0", "id": 7, "error": {"code": "x", "message": 1}}),
    ],
    "malformed-json": [
        b"{not json", b"{", b"}", b"null", b"42", b"\"a string\"", b"true", b"[", b"{}",
        b'{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"1.0","id":1,"method":"initialize"}',
        b'{"id":2,"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":3,"method":7}',
        b'{"jsonrpc":"2.0","id":4,"method":"initialize","params":5}',
        b'{"jsonrpc":"2.0","id":{},"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":18446744073709551615,"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":-9223372036854775808,"method":"initialize","params":{"protocolVersion":1}}',
        b'{"jsonrpc":"2.0","id":8,"id":9,"method":"initialize"}',
        b'{"jsonrpc":"2.0","id":10,"method":null}',
        b'{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"one"}}',
        b'{"jsonrpc":"2.0","id":12,"method":"initialize","params":[1]}',
        b'{"jsonrpc":"2\\u002e0","id":13,"method":"initialize"}',
        b'{"jsonrpc":"2.0","\\u0069d":14,"method":"initialize","params":{"protocolVersion":1}} trailing',
        b'{"jsonrpc":"2.0","id":15,"method":"initialize","params":{"protocolVersion":1}}{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"x"}',
        b"\x00\x01\x02",
        b'{"a":' * 200 + b"1" + b"}" * 200,
        b"[" * 300 + b"]" * 300,
        b'{"jsonrpc":"2.0","id":16,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":"yes"}}}}',
    ],
    "invalid-utf8": [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"\xff\xfe","version":"1"}}}',
        b'\xff\xfe\xfd',
        b'{"jsonrpc":"2.0","id":2,"method":"\xc3\x28"}',
        b'{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]},"x":"\xed\xa0\x80"}',
        init(4), load(5),
        b'{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"bad \xf0\x28\x8c\x28"}]}}',
    ],
    "long-line": [
        init(), load(),
        # Longer than the runtime's 64 KiB read buffer: the line spans two reads.
        prompt(2, "x" * 66000),
        prompt(3, "stream 32\n" + "word " * 600),
        b" " * 1000 + note("_vendor/ping"),
    ],
    "batch": [
        j([json.loads(init(1)), json.loads(load(2))]),
        b"[]",
        j([{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}]),
        b"[1,2,3]",
        init(3),
        j([json.loads(prompt(4, "hi"))]),
    ],
    "unknown-methods": [
        note("_vendor/x"),
        req(1, "_vendor/x", {"a": 1}),
        init(2),
        note("_vendor/x", {"a": [1, 2]}),
        req(3, "_zed.dev/workspace", {}),
        note("$/progress", {"token": 1}),
        req(4, "$/ping", {}),
        note("foo/bar"),
        req(5, "session/list", {}),
        req(6, "fs/read_text_file", {"sessionId": "s1", "path": "/etc/passwd"}),
        req(7, "session/update", {}),
        note("session/prompt", {"sessionId": "s1", "prompt": []}),
        note("initialize", {"protocolVersion": 1}),
        req(8, "", {}),
        req(9, "session/close", {"sessionId": "s1"}),
        req(10, "session/list", {"cwd": "/work/project"}),
        req(11, "session/resume", {"sessionId": "s1", "cwd": "/work/project", "mcpServers": []}),
        req(12, "session/delete", {"sessionId": "s1"}),
    ],
    "before-initialize": [
        req(1, "session/new", {"cwd": "/tmp", "mcpServers": []}),
        prompt(2, "hi"),
        note("session/cancel", {"sessionId": "s1"}),
        load(3),
        init(4),
        load(5),
        prompt(6, "hi"),
    ],
    "session-close": [
        init(), load(), load(2, session="s2"),
        prompt(3, "sleep"), GAP,
        req(4, "session/close", {"sessionId": "s1"}), GAP,
        prompt(5, "hello", session="s1"),
        req(6, "session/close", {"sessionId": "s1"}),
        req(7, "session/close", {}),
        prompt(8, "ask", session="s2"), GAP, GAP,
        req(9, "session/close", {"sessionId": "s2"}), GAP,
        ok(0, allow("allow")),
        load(10, session="s1"),
        prompt(11, "count", session="s1"),
    ],
    "authenticate": [
        init(),
        req(1, "authenticate", {"methodId": "token"}),
        req(2, "authenticate", {"methodId": "password"}),
        req(3, "authenticate", {}),
        req(4, "authenticate"),
    ],
    "set-config-option": [
        init(), load(),
        req(2, "session/set_config_option", {"sessionId": "s1", "configId": "model", "value": "fast"}),
        req(3, "session/set_config_option", {"sessionId": "s1", "configId": "x", "value": True}),
        req(4, "session/set_config_option", {"sessionId": "s9", "configId": "x", "value": 1}),
    ],
    "prompt-errors": [
        init(), load(),
        prompt(2, "fail boom"), GAP,
        prompt(3, "refuse"), GAP,
        req(4, "session/prompt", {"sessionId": "s1"}),
        req(5, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text"}]}),
        req(6, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "video", "url": "x"}]}),
        req(7, "session/prompt", {"sessionId": 1, "prompt": []}),
        req(8, "session/prompt", {"sessionId": "s1", "prompt": []}),
    ],
    "crlf-and-whitespace": [
        init() + b"\r", b"   " + load() + b"  \t", b"\t", b"\r", prompt(2, "hi\r\nthere") + b"\r",
    ],
    "no-trailing-newline": [init(), load(), prompt(2, "last line without a newline")],
    "stray-responses": [
        ok(0, {}), err(1, -32603, "x"), ok("a", None),
        init(), load(),
        prompt(2, "read a.txt"), GAP, GAP,
        ok(-1, {}), ok(0, {"content": "ok"}), ok(0, {"content": "again"}),
    ],
}

def main():
    os.makedirs(OUT, exist_ok=True)
    for name, lines in SEEDS.items():
        data = b"\n".join(lines)
        if name != "no-trailing-newline":
            data += b"\n"
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {OUT}")

if __name__ == "__main__":
    main()

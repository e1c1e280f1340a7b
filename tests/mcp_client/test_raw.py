"""Malformed JSON-RPC written as raw bytes to `memlineage mcp`'s standard input (spec/mcp.md
§4): an SDK cannot send these, which is the point. Every line gets the answer JSON-RPC 2.0
calls for, within a deadline, and the connection goes on serving."""

import json
import select
import subprocess
import tempfile
import time

import pytest
from conftest import BIN

DEADLINE = 20.0


class Raw:
    """`memlineage mcp LEDGER` on pipes, initialised, spoken to one line at a time."""

    def __init__(self, ledger):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(
            [BIN, "mcp", str(ledger)],
            cwd=ledger.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
        )
        self.buf = b""
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        assert self.ask(json.dumps(init).encode())["id"] == "init"
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line):
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def recv(self):
        """The next line the server writes, as JSON; fails after DEADLINE seconds."""
        end = time.monotonic() + DEADLINE
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.p.stdout], [], [], max(left, 0))
            assert ready, "no answer within the deadline"
            chunk = self.p.stdout.read1(1 << 20)
            assert chunk, "the server closed its output"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.last_size = len(line)
        return json.loads(line)

    def ask(self, line):
        self.send(line)
        return self.recv()

    def ping(self, n):
        return self.ask(json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode())

    def close(self):
        self.p.stdin.close()
        code = self.p.wait(timeout=DEADLINE)
        self.err.seek(0)
        return code, self.err.read()


@pytest.fixture
def raw(ledger):
    r = Raw(ledger)
    yield r
    if r.p.poll() is None:
        r.p.kill()
        r.p.wait()


def error_of(answer):
    return answer["error"]["code"], answer["id"]


def call(n, name, arguments):
    return json.dumps(
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    ).encode()


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e999}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping"',
        b"not json at all",
        b"[" * 200 + b"]" * 200,
    ],
    ids=["number-out-of-range", "invalid-utf8", "truncated", "not-json", "too-deep"],
)
def test_unparseable_lines_get_a_parse_error(raw, line):
    answer = raw.ask(line)
    assert error_of(answer) == (-32700, None), answer
    assert raw.ping(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_a_line_over_16_mib_gets_a_parse_error_and_the_connection_goes_on(raw):
    answer = raw.ask(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (16 << 20) + b'"}}')
    assert error_of(answer) == (-32700, None) and "longer than" in answer["error"]["message"], answer
    assert raw.ping(2)["id"] == 2


def test_a_lone_surrogate_is_replaced_and_the_request_answered(raw):
    # What JSON.stringify writes for half an emoji.
    appended = raw.ask(
        b'{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"ledger_append",'
        b'"arguments":{"text":"broken \\ud83d emoji, whole \\ud83d\\ude00"}}}'
    )
    assert appended["id"] == "s" and not appended["result"].get("isError"), appended
    entry = appended["result"]["structuredContent"]["id"]
    got = raw.ask(call("r", "ledger_retrieve", {"ids": [entry]}))
    assert got["result"]["structuredContent"]["entries"][0]["text"] == "broken \ufffd emoji, whole \U0001f600"


@pytest.mark.parametrize(
    "line,code,id",
    [
        (b'{"id":7,"method":"ping"}', -32600, 7),
        (b'{"jsonrpc":"1.0","id":"v","method":"ping"}', -32600, "v"),
        (b'{"jsonrpc":"2.0","id":8,"method":["ping"]}', -32600, 8),
        (b'{"jsonrpc":"2.0","id":9,"method":"ping","params":"x"}', -32600, 9),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, None),
        (b"[]", -32600, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, None),
        (b'"a string"', -32600, None),
        (b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"ledger_explain","arguments":[1]}}', -32602, 10),
        (b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"ledger_explain","arguments":"x"}}', -32602, 11),
        (b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"arguments":{}}}', -32602, 12),
        (b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":5}}', -32602, 13),
        (b'{"jsonrpc":"2.0","id":14,"method":"tools/call"}', -32602, 14),
        (b'{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"nosuch","arguments":{}}}', -32602, 15),
        (b'{"jsonrpc":"2.0","id":16,"method":"no/such/method"}', -32601, 16),
    ],
)
def test_invalid_requests_are_answered_with_their_id_when_it_can_be_read(raw, line, code, id):
    answer = raw.ask(line)
    assert error_of(answer) == (code, id), answer
    assert raw.ping(99)["id"] == 99


def test_nothing_huge_is_echoed_or_logged(raw):
    five_mb = "x" * (5 << 20)
    # A malformed entry id in a tool argument: a short tool error, not the id back.
    answer = raw.ask(call(1, "ledger_explain", {"id": five_mb}))
    assert answer["result"]["isError"] is True and raw.last_size < 2048, raw.last_size
    # A 5 MB request id is not echoed; nor is a 1 MB method name.
    answer = raw.ask(json.dumps({"jsonrpc": "2.0", "id": five_mb, "method": "ping"}).encode())
    assert error_of(answer) == (-32600, None) and raw.last_size < 2048, raw.last_size
    answer = raw.ask(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "m" * (1 << 20)}).encode())
    assert error_of(answer) == (-32601, 3) and raw.last_size < 2048, raw.last_size
    # 200k unknown ids: one short refusal.
    ids = [f"{i:064x}" for i in range(200_000)]
    answer = raw.ask(call(4, "ledger_retrieve", {"ids": ids}))
    assert answer["result"]["isError"] is True and raw.last_size < 2048, raw.last_size
    code, logged = raw.close()
    assert code == 0, logged[-2000:]
    assert len(logged) < 64 << 10, len(logged)


def test_notifications_are_never_answered(raw):
    raw.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}')
    raw.send(b'{"jsonrpc":"2.0","method":"' + b"n" * 1000 + b'"}')
    raw.send(b"")
    raw.send(b"   \r")
    # The first answer is the ping's: nothing was written for the four lines before it.
    assert raw.ping(5) == {"jsonrpc": "2.0", "id": 5, "result": {}}

"""Fixtures of the MCP client tests (spec/mcp.md §5): the memlineage binary built by
`cargo test`, ledgers written by the real CLI and the real hook commands, and the official MCP
Python SDK (`mcp`, pinned in requirements.txt) driving `memlineage mcp` over stdio."""

import contextlib
import hashlib
import json
import os
import pathlib
import socket
import subprocess
import time

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("MEMLINEAGE_BIN", str(ROOT / "target" / "debug" / "memlineage"))
HOOKS = ROOT / "tests" / "hooks"
# The attacker's IBAN in tests/hooks/claude-injected.jsonl (an injected bill).
ATTACKER_IBAN = "US133000000121212121212"
INJECTED_SESSION = "9a7e33f2-claude-injected"


def run(args, cwd, stdin=None):
    """Runs the binary in `cwd`; returns the CompletedProcess."""
    return subprocess.run([BIN, *args], cwd=cwd, input=stdin, capture_output=True, timeout=120)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def ledger(tmp_path):
    """A fresh ledger made by `memlineage init`."""
    out = run(["init", "l.db"], tmp_path)
    assert out.returncode == 0, out.stderr
    return tmp_path / "l.db"


def record_with_hooks(ledger, file="claude-injected.jsonl"):
    """Feeds the prompt and tool-output events of a recorded agent session to the real
    `memlineage hook` commands; returns the session's reads (entry ids, prompt first) as the
    hooks' session file lists them (spec/hooks.md §3)."""
    session = None
    for line in (HOOKS / file).read_text().splitlines():
        case = json.loads(line)
        if case["hook"] == "pre-tool-use":
            continue
        session = case["event"]["session_id"]
        out = run(["hook", case["hook"], str(ledger)], ledger.parent, json.dumps(case["event"]).encode())
        assert out.returncode == 0, out.stderr
    return session_reads(ledger, session)


def start(ledger, session, source="startup", **fields):
    """The `SessionStart` event of `session` through the real hook command: the hooks see the
    session begin (spec/hooks.md section 3.1). Returns the process."""
    event = {"session_id": session, "hook_event_name": "SessionStart", "source": source, **fields}
    env = dict(os.environ, MEMLINEAGE_HOOK_SERVER="off")
    return subprocess.run([BIN, "hook", "session-start", str(ledger)], cwd=ledger.parent,
                          input=json.dumps(event).encode(), capture_output=True, timeout=120, env=env)


def session_file(ledger, session):
    """The hooks' file of `session` (spec/hooks.md §6)."""
    name = hashlib.sha256(session.encode()).hexdigest() + ".json"
    return pathlib.Path(str(ledger) + ".sessions") / name


def session_record(path):
    """The record a session file holds (spec/hooks.md §6.3): line 1, then each delta's reads
    appended and its other fields set; as line 1 writes it, a field at its default is absent."""
    lines = pathlib.Path(path).read_text().splitlines()
    record = json.loads(lines[0])
    for line in lines[1:]:
        delta = json.loads(line)
        record["reads"] += delta.pop("reads")
        del delta["delta"], delta["at"]
        for k, v in delta.items():
            if v is None or (k in ("covered", "seen", "started") and not v):
                record.pop(k, None)
            else:
                record[k] = v
    return record


def session_reads(ledger, session):
    return session_record(session_file(ledger, session))["reads"]


@contextlib.asynccontextmanager
async def connect(ledger, *args, errlog=None):
    """An initialised SDK client session with `memlineage mcp LEDGER ARGS...`."""
    params = StdioServerParameters(command=BIN, args=["mcp", str(ledger), *args], cwd=str(ledger.parent))
    kwargs = {"errlog": errlog} if errlog is not None else {}
    async with stdio_client(params, **kwargs) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


# ---- the gateway (spec/mcp.md §6): `memlineage mcp proxy` in front of real upstream servers ----

GATEWAY_DIR = ROOT / "tests" / "mcp_client" / "gateway"
# The reference servers and the TypeScript SDK, installed by .ci/run from gateway/package-lock.json.
NPM = os.environ.get("MCP_GATEWAY_NPM")
# mcp-server-fetch's launcher in its own venv (.ci/run, requirements-fetch.txt).
FETCH = os.environ.get("MCP_SERVER_FETCH")
LANDLORD_IBAN = "GB29NWBK60161331926819"


def npm_bin(name):
    """The launcher of an npm package installed by .ci/run; skips the test without them."""
    if not NPM:
        pytest.skip("MCP_GATEWAY_NPM is not set (.ci/run sets it)")
    return str(pathlib.Path(NPM) / "node_modules" / ".bin" / name)


def proxy_args(ledger, server, upstream, *opts, session=None):
    """The arguments of `memlineage mcp proxy LEDGER --server SERVER [--session S] OPTS -- UPSTREAM`."""
    args = ["mcp", "proxy", str(ledger), "--server", server]
    if session is not None:
        args += ["--session", session]
    return [*args, *opts, "--", *upstream]


@contextlib.asynccontextmanager
async def connect_to(command, args, cwd, **callbacks):
    """An initialised SDK client session with `command ARGS` (the gateway or a server
    directly); `callbacks` go to ClientSession (sampling, elicitation, logging, messages)."""
    # The whole environment (the SDK passes a few variables only): the upstream's settings
    # travel through the gateway as a host's `env` would.
    params = StdioServerParameters(command=command, args=list(args), cwd=str(cwd), env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **callbacks) as session:
            await session.initialize()
            yield session


def explain_reads(ledger, session):
    """`memlineage explain` of each read of the gateway's session, in order."""
    return [
        run(["explain", str(ledger), r], ledger.parent).stdout.decode()
        for r in session_reads(ledger, session)
    ]


def free_port():
    """A local TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def http_server(command, port, env):
    """`command` run with `env` until it listens on 127.0.0.1:`port` (30 s at most): the
    Streamable HTTP endpoint `http://127.0.0.1:PORT/mcp`. Stopped on exit."""
    server = subprocess.Popen(command, env={**os.environ, **env},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, f"{command} exited"
                assert time.monotonic() < deadline, f"{command} did not listen"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)

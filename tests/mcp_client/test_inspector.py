"""Smoke test with the MCP Inspector CLI (pinned in inspector/package.json): tools/list and one
tools/call against `memlineage mcp`. `.ci/run` installs it from the committed lock and points
MCP_INSPECTOR at its `mcp-inspector` launcher; without it the test is skipped."""

import json
import os
import subprocess

import pytest
from conftest import ATTACKER_IBAN, BIN, record_with_hooks

INSPECTOR = os.environ.get("MCP_INSPECTOR")

pytestmark = pytest.mark.skipif(not INSPECTOR, reason="MCP_INSPECTOR is not set (.ci/run sets it)")


def inspect(ledger, *args):
    out = subprocess.run(
        [INSPECTOR, "--cli", BIN, "mcp", str(ledger), *args],
        cwd=ledger.parent,
        capture_output=True,
        timeout=120,
        env={**os.environ, "HOME": str(ledger.parent)},
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return json.loads(out.stdout)


def test_inspector_lists_the_tools_and_is_denied_the_injected_iban(ledger):
    record_with_hooks(ledger)
    tools = inspect(ledger, "--method", "tools/list")["tools"]
    assert len(tools) == 6 and "ledger_flag" in {t["name"] for t in tools}
    got = inspect(
        ledger,
        "--method",
        "tools/call",
        "--tool-name",
        "ledger_gate_check",
        "--tool-arg",
        "tool=send_money",
        "args=" + json.dumps({"recipient": ATTACKER_IBAN}),
    )
    assert got["isError"] is False and got["structuredContent"]["decision"] == "deny", got

"""Pass-through fidelity of the gateway (spec/mcp.md §6.2): the official Python SDK client drives
@modelcontextprotocol/server-everything (npm, pinned in gateway/package-lock.json) directly and
through `memlineage mcp proxy`, and every answer must be the same: initialisation and
capabilities, every list, every tool, resource, template, prompt and completion, logging,
progress notifications, cancellation, sampling and elicitation. server-everything 2026.8.31
returns every list in one page, so pagination cursors are compared against a server on the
official Python SDK that pages two items at a time (gateway/paged.py). The policy names every
tool read-only, so that what is compared is the relay; what the gateway records is checked at
the end."""

import contextlib
import json
import re

import sys

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from conftest import BIN, GATEWAY_DIR, connect_to, explain_reads, free_port, http_server, npm_bin, proxy_args

pytestmark = pytest.mark.anyio

SAMPLED = "a sampled answer from the client's model"


def everything():
    return [npm_bin("mcp-server-everything"), "stdio"]


def dump(value):
    """A result as plain JSON (pydantic models by alias, as on the wire)."""
    if isinstance(value, list):
        return [dump(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


async def all_pages(list_method):
    """Every page of a paginated list, following `nextCursor`: [(items, nextCursor)]."""
    pages, cursor = [], None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await list_method(params=params)
        pages.append(dump(page))
        cursor = page.next_cursor
        if not cursor:
            return pages


class Seen:
    """What the server asked the client (sampling, elicitation) and sent it (logs, progress)."""

    def __init__(self):
        self.sampling, self.elicitation, self.logs, self.other = [], [], [], []

    async def sample(self, context, params):
        self.sampling.append(dump(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED),
            model="test-model",
            stop_reason="endTurn",
        )

    async def elicit(self, context, params):
        self.elicitation.append(dump(params))
        props = params.requested_schema.get("properties", {}) if hasattr(params, "requested_schema") else {}
        content = {}
        for name, schema in props.items():
            kind = schema.get("type")
            if "enum" in schema:
                content[name] = schema["enum"][0]
            elif kind == "string":
                content[name] = "someone@example.org" if schema.get("format") == "email" else "Ana"
            elif kind in ("number", "integer"):
                content[name] = schema.get("minimum", 3)
            elif kind == "boolean":
                content[name] = True
        return types.ElicitResult(action="accept", content=content)

    async def log(self, params):
        self.logs.append(dump(params))

    def callbacks(self):
        return {"sampling_callback": self.sample, "elicitation_callback": self.elicit, "logging_callback": self.log}


def timeless(value):
    """`value` with the clock times the server writes into dynamic resources replaced."""
    text = re.sub(r"\d{1,2}:\d{2}:\d{2}( [AP]M)?", "<time>", json.dumps(value))
    text = re.sub(r"\d{4}-\d{2}-\d{2}T[\d:.]+Z", "<timestamp>", text)
    return json.loads(text)


@contextlib.asynccontextmanager
async def connect_http(url, **callbacks):
    """An initialised SDK client session with the Streamable HTTP endpoint `url`."""
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write, **callbacks) as session:
            await session.initialize()
            yield session


async def transcript(command, args, cwd, url=None):
    """Everything the client sees of one scripted session with the server: over stdio with
    `command ARGS`, or over Streamable HTTP with `url`."""
    seen, out = Seen(), {}
    if url is None:
        opened = connect_to(command, args, cwd, **seen.callbacks())
    else:
        opened = connect_http(url, **seen.callbacks())
    async with opened as s:
        init = s._initialize_result  # noqa: SLF001 (the negotiated result, as received)
        out["initialize"] = dump(init)
        out["tools"] = await all_pages(s.list_tools)
        out["resources"] = await all_pages(s.list_resources)
        out["templates"] = await all_pages(s.list_resource_templates)
        out["prompts"] = await all_pages(s.list_prompts)
        first = out["resources"][0]["resources"][:3]
        out["read"] = [dump(await s.read_resource(r["uri"])) for r in first]
        out["prompt"] = [
            dump(await s.get_prompt("simple-prompt")),
            dump(await s.get_prompt("args-prompt", {"city": "Lisbon", "state": "Tejo"})),
            dump(await s.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "2"})),
        ]
        ref = types.PromptReference(type="ref/prompt", name="completable-prompt")
        out["complete"] = dump(await s.complete(ref, {"name": "department", "value": "e"}))
        out["set_level"] = dump(await s.set_logging_level("debug"))
        calls = [
            ("echo", {"message": "hello through the gateway"}),
            ("get-sum", {"a": 40, "b": 2}),
            ("get-annotated-message", {"messageType": "success", "includeImage": True}),
            ("get-resource-links", {"count": 3}),
            ("get-resource-reference", {"resourceType": "blob", "resourceId": 4}),
            ("get-structured-content", {"location": "New York"}),
            ("get-tiny-image", {}),
            ("trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 20}),
            ("trigger-elicitation-request", {}),
        ]
        out["calls"] = {name: dump(await s.call_tool(name, args)) for name, args in calls}
        progress = []

        async def on_progress(p, total, message):
            progress.append([p, total])

        long_op = {"duration": 1, "steps": 4}
        done = await s.call_tool("trigger-long-running-operation", long_op, progress_callback=on_progress)
        out["long"] = [dump(done), progress]
        # Cancelled by the client after the first progress: the call is abandoned, and the
        # session goes on.
        first_step = anyio.Event()

        async def on_first(p, total, message):
            first_step.set()

        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as tg:

                async def slow():
                    await s.call_tool("trigger-long-running-operation", {"duration": 5, "steps": 5}, progress_callback=on_first)

                tg.start_soon(slow)
                await first_step.wait()
                tg.cancel_scope.cancel()
        out["cancelled_then"] = [scope.cancelled_caught, dump(await s.call_tool("echo", {"message": "after"}))]
        out["ping"] = dump(await s.send_ping())
    out["sampling"], out["elicitation"] = seen.sampling, seen.elicitation
    out["log_levels"] = sorted({entry["level"] for entry in seen.logs})
    return timeless(out)


async def test_server_everything_answers_through_the_gateway_as_it_does_directly(ledger, tmp_path):
    direct = await transcript(*everything_cmd(), tmp_path)
    policy = GATEWAY_DIR / "everything-policy.toml"
    args = proxy_args(ledger, "everything", everything(), "--policy", str(policy), session="mcp-gateway/s-every")
    through = await transcript(BIN, args, tmp_path)
    for key in direct:
        assert through[key] == direct[key], f"{key}:\n{json.dumps(through[key])[:2000]}\n!=\n{json.dumps(direct[key])[:2000]}"
    # Progress arrived, the sampled answer came back to the server, the elicitation was asked.
    assert len(direct["long"][1]) == 4, direct["long"]
    assert SAMPLED in json.dumps(direct["calls"]["trigger-sampling-request"])
    assert len(direct["sampling"]) == 1 and len(direct["elicitation"]) == 1
    assert direct["cancelled_then"][1]["content"][0]["text"] == "Echo: after"
    # What the gateway recorded: tool results, the resource and prompt reads, and the sampling
    # and elicitation requests, all External; not the server's own declarations.
    writers = "\n".join(explain_reads(ledger, "mcp-gateway/s-every"))
    for name in ["echo", "get-tiny-image", "resources/read", "prompts/get", "resources/list",
                 "sampling/createMessage", "elicitation/create", "trigger-long-running-operation"]:
        assert f"tool:mcp__everything__{name} (tool) [EXTERNAL]" in writers, name
    for name in ["tools/list", "initialize", "prompts/list", "completion/complete"]:
        assert f"tool:mcp__everything__{name} " not in writers, name


def everything_cmd():
    cmd = everything()
    return cmd[0], cmd[1:]


async def test_pagination_cursors_pass_through_unchanged(ledger, tmp_path):
    upstream = [sys.executable, str(GATEWAY_DIR / "paged.py")]
    policy = GATEWAY_DIR / "everything-policy.toml"
    args = proxy_args(ledger, "paged", upstream, "--policy", str(policy), session="mcp-gateway/s-paged")
    seen = {}
    for name, (command, cmd_args) in {"direct": (upstream[0], upstream[1:]), "gateway": (BIN, args)}.items():
        async with connect_to(command, cmd_args, tmp_path) as s:
            seen[name] = {"tools": await all_pages(s.list_tools), "resources": await all_pages(s.list_resources)}
    assert seen["gateway"] == seen["direct"]
    cursors = [page.get("nextCursor") for page in seen["direct"]["tools"]]
    assert cursors == ["c2", "c4", None], cursors
    assert [t["name"] for page in seen["gateway"]["tools"] for t in page["tools"]] == [f"tool-{i}" for i in range(5)]


def everything_over_http():
    """server-everything in its Streamable HTTP mode on a free local port: its endpoint URL."""
    port = free_port()
    return http_server([everything()[0], "streamableHttp"], port, {"PORT": str(port)})


async def test_an_http_upstream_answers_through_the_gateway_as_it_does_directly(ledger, tmp_path):
    """spec/mcp.md §6.11: the same upstream over Streamable HTTP, the official Python SDK's HTTP
    client directly against the SDK's stdio client through `memlineage mcp proxy --url`: every
    answer the same, sampling and elicitation requests carried on the server's SSE streams and
    their answers POSTed back, and every read recorded as over stdio."""
    with everything_over_http() as url:
        direct = await transcript(None, None, tmp_path, url=url)
        policy = GATEWAY_DIR / "everything-policy.toml"
        args = ["mcp", "proxy", str(ledger), "--server", "everything", "--session",
                "mcp-gateway/s-http", "--policy", str(policy), "--url", url]
        through = await transcript(BIN, args, tmp_path)
    for key in direct:
        assert through[key] == direct[key], f"{key}:\n{json.dumps(through[key])[:2000]}\n!=\n{json.dumps(direct[key])[:2000]}"
    assert len(direct["long"][1]) == 4, direct["long"]
    assert SAMPLED in json.dumps(direct["calls"]["trigger-sampling-request"])
    assert len(through["sampling"]) == 1 and len(through["elicitation"]) == 1
    writers = "\n".join(explain_reads(ledger, "mcp-gateway/s-http"))
    for name in ["echo", "resources/read", "prompts/get", "sampling/createMessage",
                 "elicitation/create", "trigger-long-running-operation"]:
        assert f"tool:mcp__everything__{name} (tool) [EXTERNAL]" in writers, name

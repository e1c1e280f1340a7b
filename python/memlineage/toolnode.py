"""``GatedToolNode``: a ``ToolNode`` whose calls are recorded and gated (spec/python.md §4)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from . import Ledger
from .session import _require, session_id

__all__ = ["GatedToolNode", "UnclassifiedToolWarning", "refusal_text"]


def _text(content: Any) -> str:
    """A message's content as the text recorded: a string as is, anything else as JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, sort_keys=True, default=str)


def _artifact_text(artifact: Any) -> str:
    """A tool's artifact as the text recorded: JSON, objects by their ``dict()`` or
    ``model_dump()`` (LangGraph items, pydantic models), else ``str``."""

    def plain(o: Any) -> Any:
        for method in ("model_dump", "dict"):
            f = getattr(o, method, None)
            if callable(f):
                try:
                    return f()
                except Exception:  # noqa: BLE001 - fall back to the text form
                    break
        return str(o)

    if isinstance(artifact, str):
        return artifact
    return json.dumps(artifact, sort_keys=True, default=plain)


def _message_key(m: BaseMessage) -> str:
    if isinstance(m, ToolMessage) and m.tool_call_id:
        return f"tool:{m.tool_call_id}"
    if m.id:
        return f"id:{m.id}"
    digest = hashlib.sha256(f"{m.type}\0{_text(m.content)}".encode()).hexdigest()
    return f"hash:{digest}"


class UnclassifiedToolWarning(UserWarning):
    """A tool of a ``GatedToolNode`` that the ledger's policy does not classify (names as
    sensitive, as a tool rule or as read-only). It is gated, every argument as a sensitive
    tool's, unless its metadata says ``read_only`` (spec/python.md §4.2): name it in the
    policy to silence this."""


def _read_only(tool: Any) -> bool:
    """Whether the tool's own metadata, written by the developer, says it only reads:
    ``metadata={"read_only": True}``. An MCP server's ``readOnlyHint`` (which
    langchain-mcp-adapters copies into ``metadata``) is not taken: the MCP specification says
    clients MUST consider annotations untrusted unless they come from trusted servers; copy
    it into ``read_only`` for a server you trust."""
    metadata = getattr(tool, "metadata", None) or {}
    return isinstance(metadata, Mapping) and metadata.get("read_only") is True


class GatedToolNode(ToolNode):
    """``ToolNode`` whose calls are recorded and gated by memlineage (spec/python.md §4).

    Before each call, the conversation's messages are brought into the session: each
    ``HumanMessage`` not yet recorded is recorded as a user prompt (Trusted), each
    ``ToolMessage`` this node did not produce as a tool result (External). Then the gate
    checks the call (the policy decides which tools are sensitive; each argument value is
    matched against the session's reads, as the PreToolUse hook does). A refused call is not
    executed; the node returns a ``ToolMessage`` (status ``error``) that states the refusal and
    the lineage path. An executed call's output is recorded as an External entry of
    ``tool:<name>``; if it cannot be, the session is marked so that its later sensitive calls
    are refused, and the output is withheld if even that fails.

    A tool the ledger's policy does not classify is gated like a sensitive tool (fail closed),
    unless its metadata says ``read_only`` (``metadata={"read_only": True}``), in which case it
    is not gated; either way an ``UnclassifiedToolWarning`` names it when the node is built.

    When the gate answers ``ask`` (the agent composed every argument after the session read
    untrusted input and the policy's ``composed_after_external`` is ``ask``), the call runs
    only if ``on_ask(verdict)`` returns ``True``; ``verdict`` is the gate's dict, its
    ``reason`` the receipt naming the untrusted read. Without ``on_ask``, an ask is a refusal.

    ``ledger`` is the ``Ledger`` (or a ``MemLineageStore``'s); ``session`` the default
    session outside graph runs. Other arguments are ``ToolNode``'s.
    """

    def __init__(
        self,
        tools: Sequence[Any],
        *,
        ledger: Ledger,
        session: str | None = None,
        on_ask: Callable[[Mapping[str, Any]], bool] | None = None,
        **kwargs: Any,
    ) -> None:
        if "wrap_tool_call" in kwargs or "awrap_tool_call" in kwargs:
            raise ValueError("GatedToolNode installs its own wrap_tool_call")
        # Plain functions, not bound methods: the node's repr lists its wrappers.
        def gate(request: Any, execute: Callable[[Any], Any]) -> Any:
            return self._gate(request, execute)

        async def agate(request: Any, execute: Callable[[Any], Any]) -> Any:
            return await self._agate(request, execute)

        super().__init__(tools, wrap_tool_call=gate, awrap_tool_call=agate, **kwargs)
        self._ledger = ledger
        self._default_session = session
        self._on_ask = on_ask
        # Tools the policy does not classify but whose own metadata says read-only: not gated.
        self._exempt: set[str] = set()
        for name, t in self.tools_by_name.items():
            if ledger.classifies(name):
                continue
            if _read_only(t):
                self._exempt.add(name)
                how = "its metadata says read_only, so it is not gated"
            else:
                how = "it is gated, every argument as a sensitive tool's"
            warnings.warn(
                f"memlineage: the policy does not classify tool {name!r}: {how}; name it in "
                "the policy (sensitive_tools, [tools.*] or read_only_tools)",
                UnclassifiedToolWarning,
                stacklevel=2,
            )
        self._seen: dict[str, set[str]] = {}
        # Parallel calls of one step sync the same messages: one at a time.
        self._sync_lock = threading.Lock()

    @property
    def ledger(self) -> Ledger:
        """The ledger calls are recorded in."""
        return self._ledger

    def _gate(self, request: Any, execute: Callable[[Any], Any]) -> Any:
        session, refusal = self._before(request)
        if refusal is not None:
            return refusal
        return self._after(session, request, execute(request))

    async def _agate(self, request: Any, execute: Callable[[Any], Any]) -> Any:
        # The ledger calls block (with the GIL released): off the event loop.
        session, refusal = await asyncio.to_thread(self._before, request)
        if refusal is not None:
            return refusal
        result = await execute(request)
        return await asyncio.to_thread(self._after, session, request, result)

    def _before(self, request: Any) -> tuple[str, ToolMessage | None]:
        """Syncs the conversation into the session and checks the call: the session, and the
        refusal message if the call is refused."""
        call = request.tool_call
        name, args, call_id = call["name"], call.get("args") or {}, call["id"]
        config = getattr(request.runtime, "config", None)
        session = _require(session_id(config, default=self._default_session))
        with self._sync_lock:
            seen = self._seen.setdefault(session, set())
            self._sync(session, seen, request.state)
        if name in self._exempt:
            return session, None
        verdict = self._ledger.check(session, name, args)
        if verdict["allowed"]:
            return session, None
        if verdict.get("decision") == "ask" and self._on_ask is not None:
            if self._on_ask(verdict) is True:
                return session, None
        seen.add(f"tool:{call_id}")
        return session, ToolMessage(
            content=refusal_text(verdict),
            name=name,
            tool_call_id=call_id,
            status="error",
            artifact={"memlineage": verdict},
        )

    def _after(self, session: str, request: Any, result: Any) -> Any:
        call = request.tool_call
        self._seen.setdefault(session, set()).add(f"tool:{call['id']}")
        return self._record(session, call["name"], call.get("args") or {}, result)

    def _sync(self, session: str, seen: set[str], state: Any) -> None:
        """Records the conversation's prompts and foreign tool outputs not recorded yet."""
        messages = state.get(self._messages_key, []) if isinstance(state, dict) else state
        if not isinstance(messages, list):
            messages = getattr(state, self._messages_key, []) or []
        tools_of = {}
        for m in messages:
            for tc in getattr(m, "tool_calls", None) or []:
                tools_of[tc.get("id")] = (tc.get("name"), tc.get("args") or {})
        for m in messages:
            if not isinstance(m, BaseMessage):
                continue
            key = _message_key(m)
            if key in seen:
                continue
            if isinstance(m, HumanMessage):
                self._ledger.record_prompt(session, _text(m.content))
            elif isinstance(m, ToolMessage):
                tool, args = tools_of.get(m.tool_call_id, (m.name or "unknown", {}))
                self._ledger.record_tool_result(session, tool or "unknown", args, _text(m.content))
            seen.add(key)

    def _record(self, session: str, name: str, args: dict, result: Any) -> Any:
        outputs = _tool_messages(result)
        try:
            if outputs is None:
                raise ValueError(f"{name}: a result of type {type(result).__name__} cannot be read")
            for m in outputs:
                self._ledger.record_tool_result(session, name, args, _text(m.content))
                # A content_and_artifact tool's artifact reaches the graph's state too (and
                # LangMem's search hands its items there): recorded as the tool's output.
                if m.artifact is not None:
                    self._ledger.record_tool_result(session, name, args, _artifact_text(m.artifact))
            return result
        except Exception as e:  # noqa: BLE001 - any failure to record fails closed
            try:
                n = self._ledger.mark_unrecorded(session)
            except Exception as e2:  # noqa: BLE001
                return ToolMessage(
                    content=(
                        f"memlineage: the output of {name} was withheld: it could not be "
                        f"recorded ({e}) and the session could not be marked ({e2})"
                    ),
                    name=name,
                    tool_call_id=_call_id(result),
                    status="error",
                )
            return _append_note(
                result,
                f"\n[memlineage: this output could not be recorded ({e}); {n} unrecorded "
                "output(s): the session's sensitive calls will be refused]",
            )


def refusal_text(verdict: Mapping[str, Any]) -> str:
    """The text of a refusal ``ToolMessage``: the gate's reason, the lineage path (source
    first) with each hop's kind, writer and label, and that the call was not executed."""
    asked = verdict.get("decision") == "ask"
    lines = [
        f"memlineage refused this call of {verdict['tool']}; it was not executed.",
        str(verdict.get("reason") or "denied"),
    ]
    if asked:
        lines.insert(1, "It needs the user's approval, which was not given.")
    path = verdict.get("path") or []
    if path:
        hops = " -> ".join(
            f"{h['id'][:8]} {h['kind']} by {h['writer']} [{h['label']}]" for h in path
        )
        lines.append(f"Lineage path (source first): {hops}")
    lines.append("Ask the user to confirm the value in their own words to proceed.")
    return "\n".join(lines)


def _tool_messages(result: Any) -> list[ToolMessage] | None:
    if isinstance(result, ToolMessage):
        return [result]
    if isinstance(result, Command):
        update = result.update
        msgs = update.get("messages") if isinstance(update, dict) else None
        if msgs is None:
            return []
        msgs = msgs if isinstance(msgs, list) else [msgs]
        if all(isinstance(m, ToolMessage) for m in msgs):
            return msgs
    return None


def _call_id(result: Any) -> str:
    return getattr(result, "tool_call_id", "") or ""


def _append_note(result: Any, note: str) -> Any:
    if isinstance(result, ToolMessage) and isinstance(result.content, str):
        return result.model_copy(update={"content": result.content + note})
    return result

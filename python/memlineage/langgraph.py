"""LangGraph front of memlineage (spec/python.md).

- ``MemLineageStore``: a ``langgraph.store.base.BaseStore`` backed by a ledger. Every ``put``
  is a signed entry derived from what the current session read; ``get`` and ``search``
  return only verified, non-quarantined items (``LineageItem``: ``item.entry_id``,
  ``item.label``) and record them as read by the session.
- ``GatedToolNode``: a drop-in for ``langgraph.prebuilt.ToolNode``. Tool results are recorded
  as External entries of ``tool:<name>``; before a sensitive tool runs, each argument is
  matched against what the session recorded and the gate decides. A refused call is not
  executed: the node answers with a ``ToolMessage`` stating the refusal and the lineage path.
  A tool the policy does not classify is gated unless its metadata says ``read_only``
  (``UnclassifiedToolWarning`` says which); a call the gate puts to the user (``ask``) runs
  only if ``on_ask`` approves it (spec/python.md §4.2).

A session is one conversation: ``configurable["memlineage_session"]`` if the run config sets
it, else ``configurable["thread_id"]``, else the run's ``run_id``; outside a graph run, the
session bound with ``store.bind(...)`` / ``bind_session(...)`` or the ``session=`` given to the
store or node. With none of these an operation that needs a session raises ``ValueError``
rather than record reads nowhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Callable

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import _compare_values, _does_match
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from . import Ledger

__all__ = [
    "GatedToolNode",
    "UnclassifiedToolWarning",
    "LineageItem",
    "LineageSearchItem",
    "MemLineageStore",
    "bind_session",
    "session_id",
]

_BOUND: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memlineage_session", default=None
)


@contextlib.contextmanager
def bind_session(session: str) -> Iterator[str]:
    """Binds ``session`` for the store and node calls in this context (outside graph runs,
    or to override the run config)."""
    if not session:
        raise ValueError("a session id is not empty")
    token = _BOUND.set(session)
    try:
        yield session
    finally:
        _BOUND.reset(token)


def session_id(config: Mapping[str, Any] | None = None, default: str | None = None) -> str | None:
    """The session a store or node call belongs to (spec/python.md §3): the bound session,
    else from ``config`` (or the current run's config) ``configurable["memlineage_session"]``,
    ``configurable["thread_id"]``, the run's ``run_id``; else ``default``."""
    bound = _BOUND.get()
    if bound:
        return bound
    if config is None:
        try:
            from langgraph.config import get_config

            config = get_config()
        except RuntimeError:
            config = None
    if config:
        conf = config.get("configurable") or {}
        for key in ("memlineage_session", "thread_id"):
            if conf.get(key):
                return str(conf[key])
        if config.get("run_id"):
            return f"run:{config['run_id']}"
        runtime = conf.get("__pregel_runtime")
        info = getattr(runtime, "execution_info", None)
        run = getattr(info, "run_id", None)
        if run:
            return f"run:{run}"
    return default


def _require(session: str | None) -> str:
    if not session:
        raise ValueError(
            "memlineage: no session for this store call: run the graph with "
            "config={'configurable': {'thread_id': ...}}, or bind one with "
            "bind_session(...) / MemLineageStore(session=...)"
        )
    return session


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


class _LineageFields:
    """What ``LineageItem`` and ``LineageSearchItem`` add to LangGraph's items: the entry id and
    its label, set at construction and kept by ``dict()``."""

    __slots__ = ()

    def __init__(self, *, entry_id: str, label: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.entry_id = entry_id
        self.label = label

    def dict(self) -> dict:
        d = super().dict()
        d["entry_id"] = self.entry_id
        d["label"] = self.label
        return d


class LineageItem(_LineageFields, Item):
    """An ``Item`` read from the ledger: ``entry_id`` (64 hex digits) is the entry holding this
    version, ``label`` its lineage label (``trusted``, ``derived_trusted``,
    ``derived_untrusted``, ``external``)."""

    __slots__ = ("entry_id", "label")


class LineageSearchItem(_LineageFields, SearchItem):
    """A ``SearchItem`` read from the ledger, with ``entry_id`` and ``label`` as
    ``LineageItem``. ``score`` is always ``None`` (no semantic search)."""

    __slots__ = ("entry_id", "label")


def _fields(raw: dict) -> dict:
    return {
        "namespace": tuple(raw["namespace"]),
        "key": raw["key"],
        "value": raw["value"],
        "created_at": _time(raw["created_ms"]),
        "updated_at": _time(raw["updated_ms"]),
        "entry_id": raw["entry_id"],
        "label": raw["label"],
    }


class MemLineageStore(BaseStore):
    """A LangGraph store whose items are signed ledger entries (spec/python.md §2).

    ``put`` writes a new version signed by the ledger's agent principal, derived from every
    entry the session read (prompts, tool results, items got or found) at full weight;
    ``put_weighted`` gives weights. ``put(..., None)`` (``delete``) appends a signed tombstone
    of the current version. ``get`` and ``search`` verify each item (signature, inclusion
    under a signed checkpoint), leave out quarantined, deleted and unverifiable ones, and
    record those returned as read by the session. ``search`` filters by namespace prefix and
    ``filter`` as ``InMemoryStore`` does without an index (a ``query`` is ignored), newest
    version first. ``list_namespaces`` lists namespaces holding a live, non-quarantined item.
    """

    supports_ttl = False

    __slots__ = ("ledger", "session")

    def __init__(self, ledger: Ledger, *, session: str | None = None) -> None:
        self.ledger = ledger
        self.session = session

    def bind(self, session: str) -> contextlib.AbstractContextManager[str]:
        """``bind_session(session)``: the session of the calls made in this context."""
        return bind_session(session)

    def current_session(self) -> str | None:
        """The session calls made here now belong to (``session_id``), or ``None``."""
        return session_id(default=self.session)

    # BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return self._batch(ops, self._session_for(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        session = self._session_for(ops)
        loop = asyncio.get_running_loop()
        # The ledger releases the GIL: the batch runs on a worker thread.
        return await loop.run_in_executor(None, self._batch, ops, session)

    def put_weighted(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        weights: Mapping[str, float],
    ) -> LineageItem:
        """``put`` with the attribution weight (0..1) of some parents, by entry id; parents
        not named keep full weight, and named entries the session did not read are added.
        Returns the item written."""
        from langgraph.store.base import _validate_namespace

        _validate_namespace(namespace)
        session = _require(self.current_session())
        raw = self.ledger.item_put(session, list(namespace), key, dict(value), dict(weights))
        return LineageItem(**_fields(raw))

    # Helpers

    def _session_for(self, ops: list[Op]) -> str | None:
        if any(not isinstance(op, ListNamespacesOp) for op in ops):
            return _require(self.current_session())
        return None

    def _batch(self, ops: list[Op], session: str | None) -> list[Result]:
        out: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(op, session))
            elif isinstance(op, SearchOp):
                out.append(self._search(op, session))
            elif isinstance(op, PutOp):
                self._put(op, session)
                out.append(None)
            elif isinstance(op, ListNamespacesOp):
                out.append(self._list_namespaces(op))
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return out

    def _get(self, op: GetOp, session: str) -> LineageItem | None:
        raw = self.ledger.item_get(session, list(op.namespace), op.key)
        return None if raw is None else LineageItem(**_fields(raw))

    def _put(self, op: PutOp, session: str) -> None:
        if op.value is None:
            self.ledger.item_delete(session, list(op.namespace), op.key)
        else:
            self.ledger.item_put(session, list(op.namespace), op.key, dict(op.value))

    def _search(self, op: SearchOp, session: str) -> list[LineageSearchItem]:
        found = self.ledger.item_candidates(list(op.namespace_prefix))
        if op.filter:
            found = [
                c
                for c in found
                if all(_compare_values(c["value"].get(k), v) for k, v in op.filter.items())
            ]
        page = found[op.offset : op.offset + op.limit]
        if not page:
            return []
        verified = self.ledger.item_read(session, [c["entry_id"] for c in page])
        return [LineageSearchItem(**_fields(raw)) for raw in verified]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [tuple(ns) for ns in self.ledger.item_namespaces()]
        if op.match_conditions:
            namespaces = [
                ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions)
            ]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]


def _text(content: Any) -> str:
    """A message's content as the text recorded: a string as is, anything else as JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, sort_keys=True, default=str)


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

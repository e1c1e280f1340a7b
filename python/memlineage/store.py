"""``MemLineageStore``: a LangGraph ``BaseStore`` whose items are signed ledger entries
(spec/python.md §2), with ``LineageItem`` and ``LineageSearchItem``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

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

from . import Ledger
from .session import _require, bind_session, session_id

__all__ = ["LineageItem", "LineageSearchItem", "MemLineageStore"]


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

"""``MemLineageStore``: a LangGraph ``BaseStore`` whose items are signed ledger entries
(spec/python.md §2), with ``LineageItem`` and ``LineageSearchItem``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    _validate_namespace_labels,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from . import Ledger
from .index import SemanticIndex, Vectors
from .session import bind_session, session_id

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
    ``LineageItem``. ``score`` is the cosine similarity to the search's ``query`` (``None``
    without a query or an index, or for an item none of whose fields was embedded)."""

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


# How many times a search embeds matching items that have no vectors yet (written by another
# handle, or before this process opened the ledger) before it gives up: each round embeds all
# of them, so more than one is needed only while other writers add items.
_EMBED_ROUNDS = 4


class MemLineageStore(BaseStore):
    """A LangGraph store whose items are signed ledger entries (spec/python.md §2).

    ``put`` writes a new version signed by the ledger's agent principal, derived from every
    entry the session read (prompts, tool results, items got or found) at full weight;
    ``put_weighted`` gives weights. ``put(..., None)`` (``delete``) appends a signed tombstone
    of the current version. ``get`` and ``search`` verify each item (signature, inclusion
    under a signed checkpoint), leave out quarantined, deleted and unverifiable ones, and
    record those returned as read by the session. ``search`` filters by namespace prefix and
    ``filter`` as ``InMemoryStore`` does and, with an ``index`` and a ``query``, ranks by
    cosine similarity (``item.score``); only the page returned is verified.
    ``list_namespaces`` lists namespaces holding a live, non-quarantined item and records the
    items behind each namespace listed as read by the session.

    ``index`` is LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``): values are
    embedded at ``put`` as ``InMemoryStore`` embeds them (spec/python.md §2.5). The vectors
    are derived, unsigned data: they order results, never label them.

    Calls outside a graph run with no bound session (seeding memories, a script, a test)
    belong to the store's own session, ``store.store_session`` (spec/python.md §3).
    """

    supports_ttl = False

    __slots__ = ("ledger", "session", "store_session", "index_config", "embeddings", "_index")

    def __init__(
        self,
        ledger: Ledger,
        *,
        session: str | None = None,
        index: IndexConfig | None = None,
    ) -> None:
        if not isinstance(ledger, Ledger):
            hint = ""
            if isinstance(ledger, (str, bytes, os.PathLike)):
                hint = ": use MemLineageStore.open(path) to open or create a ledger file"
            raise TypeError(
                f"MemLineageStore takes a memlineage.Ledger, not {type(ledger).__name__}{hint}"
            )
        if session is not None and not isinstance(session, str):
            raise TypeError(f"session is a str, not {type(session).__name__}")
        if session == "":
            raise ValueError("a session id is not empty")
        self.ledger = ledger
        self.session = session
        self.store_session = f"store:{uuid.uuid4().hex}"
        self._index = SemanticIndex(index) if index is not None else None
        self.index_config = self._index.config if self._index else None
        self.embeddings = self._index.embeddings if self._index else None

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        index: IndexConfig | None = None,
        session: str | None = None,
        policy: str | os.PathLike[str] | None = None,
        agent: str = "agent",
        state: str | os.PathLike[str] | bool | None = None,
        **create: Any,
    ) -> MemLineageStore:
        """The store of the SQLite ledger at ``path``, created with its key file
        (``path + ".key"``) if there is none yet, as ``SqliteStore.from_conn_string`` opens or
        creates a database. ``create`` holds ``Ledger.create``'s other options (``origin``,
        ``tau``, ``rule``), used only when the ledger is created. ``state`` is the state
        directory that keeps the pin and the session records (``Ledger.open``; by default the
        one ``memlineage hook install`` gives the hooks for this path).

        Raises ``TypeError`` for a path that is not one, ``ValueError`` when the key file
        exists without its ledger, and the ``Ledger.open`` errors."""
        path = os.fsdecode(os.fspath(path))
        if not _has_ledger(path):
            try:
                ledger = Ledger.create(path, policy=policy, agent=agent, state=state, **create)
                return cls(ledger, session=session, index=index)
            except ValueError:
                # Created by another process meanwhile; otherwise the error stands.
                if not _has_ledger(path):
                    raise
        ledger = Ledger.open(path, policy=policy, agent=agent, state=state)
        return cls(ledger, session=session, index=index)

    def bind(self, session: str) -> contextlib.AbstractContextManager[str]:
        """``bind_session(session)``: the session of the calls made in this context."""
        return bind_session(session)

    def current_session(self) -> str:
        """The session calls made here now belong to: ``session_id`` (the bound session, the
        run's), else the ``session=`` given, else ``store_session``."""
        return session_id(default=self.session) or self.store_session

    # BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        session = self.current_session()
        queries = self._queries(ops)
        puts = self._embed_puts(ops)
        embed = self._index.embed if self._index else None
        return self._run(ops, session, queries, puts, embed)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        session = self.current_session()
        queries = await self._aqueries(ops)
        puts = await self._aembed_puts(ops)
        loop = asyncio.get_running_loop()
        embed = self._threadsafe_embed(loop) if self._index else None
        # The ledger releases the GIL: the batch runs on a worker thread.
        return await loop.run_in_executor(None, self._run, ops, session, queries, puts, embed)

    def get(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
    ) -> LineageItem | None:
        """``BaseStore.get`` without the batch around it (one op: the same result)."""
        _validate_namespace_labels(namespace)
        return self._get(GetOp(namespace, key), self.current_session())

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
        session = self.current_session()
        vectors = self._index.embed([self._index.texts(value)])[0] if self._index else None
        raw = self.ledger.item_put(
            session, list(namespace), key, dict(value), dict(weights), vectors
        )
        return LineageItem(**_fields(raw))

    # Helpers

    def _threadsafe_embed(self, loop: asyncio.AbstractEventLoop) -> Any:
        """``embed`` for a batch on a worker thread: the event loop, free meanwhile, runs the
        async embedding (an async-only ``embed`` function has no sync one)."""
        index = self._index

        def embed(batches: list) -> list[Vectors]:
            return asyncio.run_coroutine_threadsafe(index.aembed(batches), loop).result()

        return embed

    def _queries(self, ops: list[Op]) -> dict[str, list[float]]:
        if not self._index:
            return {}
        return {q: self._index.query(q) for q in _query_texts(ops)}

    async def _aqueries(self, ops: list[Op]) -> dict[str, list[float]]:
        if not self._index:
            return {}
        texts = _query_texts(ops)
        vectors = await asyncio.gather(*(self._index.aquery(q) for q in texts))
        return dict(zip(texts, vectors))

    def _put_texts(self, ops: list[Op]) -> tuple[list[int], list]:
        at = [i for i, op in enumerate(ops) if isinstance(op, PutOp) and op.value is not None]
        return at, [self._index.texts(ops[i].value, ops[i].index) for i in at]

    def _embed_puts(self, ops: list[Op]) -> dict[int, Vectors]:
        if not self._index:
            return {}
        at, texts = self._put_texts(ops)
        return dict(zip(at, self._index.embed(texts)))

    async def _aembed_puts(self, ops: list[Op]) -> dict[int, Vectors]:
        if not self._index:
            return {}
        at, texts = self._put_texts(ops)
        return dict(zip(at, await self._index.aembed(texts)))

    def _run(
        self,
        ops: list[Op],
        session: str,
        queries: dict[str, list[float]],
        puts: dict[int, Vectors],
        embed: Any,
    ) -> list[Result]:
        """Runs a batch as ``InMemoryStore`` does: reads (``get``, ``search``,
        ``list_namespaces``) first, in order, on the state before the batch; then the puts
        and deletes, in order."""
        out: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(op, session))
            elif isinstance(op, SearchOp):
                out.append(self._search(op, session, queries, embed))
            elif isinstance(op, ListNamespacesOp):
                out.append(self._list_namespaces(op, session))
            elif isinstance(op, PutOp):
                out.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                self._put(op, session, puts.get(i))
        return out

    def _get(self, op: GetOp, session: str) -> LineageItem | None:
        raw = self.ledger.item_get(session, list(op.namespace), op.key)
        return None if raw is None else LineageItem(**_fields(raw))

    def _put(self, op: PutOp, session: str, vectors: Vectors | None) -> None:
        if op.value is None:
            self.ledger.item_delete(session, list(op.namespace), op.key)
            return
        if self._index and vectors is None:
            vectors = []
        self.ledger.item_put(session, list(op.namespace), op.key, dict(op.value), None, vectors)

    def _search(
        self, op: SearchOp, session: str, queries: dict[str, list[float]], embed: Any
    ) -> list[LineageSearchItem]:
        if op.offset < 0 or op.limit < 0:
            raise ValueError("a search's offset and limit are not negative")
        query = queries.get(op.query) if op.query else None
        prefix = list(op.namespace_prefix)
        for _ in range(_EMBED_ROUNDS):
            raw = self.ledger.item_search(session, prefix, op.filter, query, op.offset, op.limit)
            if "items" in raw:
                return [LineageSearchItem(**_fields(r), score=r["score"]) for r in raw["items"]]
            missing = raw["unembedded"]
            vectors = embed([self._index.texts(m["value"]) for m in missing])
            self.ledger.item_embed([(m["entry_id"], v) for m, v in zip(missing, vectors)])
        raise RuntimeError(
            f"memlineage: items kept arriving without vectors over {_EMBED_ROUNDS} rounds of "
            "embedding; search again"
        )

    def _list_namespaces(self, op: ListNamespacesOp, session: str) -> list[tuple[str, ...]]:
        # Listed in Rust, where the items behind each namespace shown are verified and recorded
        # as read by the session: a namespace is text its items' writers chose (attack review
        # 50: a listing that recorded nothing showed an injected IBAN as unsourced).
        conditions = [(c.match_type, list(c.path)) for c in op.match_conditions or ()]
        listed = self.ledger.item_namespaces(
            session, conditions, op.max_depth, op.limit, op.offset
        )
        return [tuple(ns) for ns in listed]


def _query_texts(ops: list[Op]) -> list[str]:
    return list(dict.fromkeys(op.query for op in ops if isinstance(op, SearchOp) and op.query))


def _has_ledger(path: str) -> bool:
    return os.path.isfile(path) and os.path.getsize(path) > 0

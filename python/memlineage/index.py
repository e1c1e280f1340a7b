"""The semantic index of ``MemLineageStore`` (spec/python.md §2.5): LangGraph's ``index``
configuration (``dims``, ``embed``, ``fields``), the texts of an item that are embedded, and
the embedding calls.

The vectors are derived data: computed here from a verified item's value (at ``put``, or the
first time a search needs an item written elsewhere), kept beside the item index in memory,
never signed. Which fields are embedded follows ``InMemoryStore``: the index's ``fields``
(default ``["$"]``, the whole value), or the ``index=`` of a ``put`` (``False``: none); a
field holding several texts gives one vector per text (``path.0``, ``path.1``…), and an
item's score is the best of its vectors'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path, tokenize_path

__all__ = ["SemanticIndex"]

Texts = list[tuple[str, str]]
Vectors = list[tuple[str, list[float]]]


class SemanticIndex:
    """A validated ``index`` configuration and its embeddings (LangChain ``Embeddings``,
    wrapped by LangGraph's ``ensure_embeddings`` from a function, async function or provider
    string)."""

    __slots__ = ("config", "dims", "embeddings", "_fields")

    def __init__(self, config: IndexConfig) -> None:
        if not isinstance(config, Mapping):
            raise TypeError(f"index is a dict (LangGraph's IndexConfig), not {type(config).__name__}")
        dims = config.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
            raise TypeError(f"index['dims'] is a positive int (the embedding size), not {dims!r}")
        if config.get("embed") is None:
            raise TypeError("index['embed'] is required: Embeddings, a function or a provider string")
        fields = config.get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise TypeError(f"index['fields'] is a list of field paths, not {fields!r}")
        self.config = dict(config)
        self.dims = dims
        self.embeddings = ensure_embeddings(config["embed"])
        self._fields = [(f, tokenize_path(f) if f != "$" else f) for f in fields]
        self.config["__tokenized_fields"] = self._fields

    def texts(self, value: Mapping[str, Any], fields: Sequence[str] | bool | None = None) -> Texts:
        """The ``(path, text)`` pairs of ``value`` to embed: at the index's fields, or at
        ``fields`` (a ``put``'s ``index=``; ``False``: none)."""
        if fields is False:
            return []
        paths = self._fields if fields is None or fields is True else [
            (f, tokenize_path(f)) for f in fields
        ]
        out: Texts = []
        for path, field in paths:
            found = get_text_at_path(value, field)
            if len(found) > 1:
                out.extend((f"{path}.{i}", t) for i, t in enumerate(found))
            elif found:
                out.append((path, found[0]))
        return out

    def embed(self, batches: list[Texts]) -> list[Vectors]:
        """Embeds the texts of several items in one call (``embed_documents``); returns each
        item's ``(path, vector)`` pairs."""
        unique = _unique(batches)
        vectors = self.embeddings.embed_documents(unique) if unique else []
        return _spread(batches, unique, vectors)

    async def aembed(self, batches: list[Texts]) -> list[Vectors]:
        """``embed`` through ``aembed_documents``."""
        unique = _unique(batches)
        vectors = await self.embeddings.aembed_documents(unique) if unique else []
        return _spread(batches, unique, vectors)

    def query(self, text: str) -> list[float]:
        """The vector of a search query (``embed_query``)."""
        return list(self.embeddings.embed_query(text))

    async def aquery(self, text: str) -> list[float]:
        """``query`` through ``aembed_query``."""
        return list(await self.embeddings.aembed_query(text))


def _unique(batches: list[Texts]) -> list[str]:
    return list(dict.fromkeys(t for texts in batches for _, t in texts))


def _spread(batches: list[Texts], unique: list[str], vectors: Sequence[Sequence[float]]) -> list[Vectors]:
    if len(vectors) != len(unique):
        raise ValueError(
            f"the embedding function returned {len(vectors)} vectors for {len(unique)} texts"
        )
    by_text = {t: list(v) for t, v in zip(unique, vectors)}
    return [[(path, by_text[t]) for path, t in texts] for texts in batches]

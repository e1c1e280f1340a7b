"""Sessions of the LangGraph front (spec/python.md §3): which session a store or node call
belongs to.

A session is one conversation: the session bound in the calling context (``bind_session``),
else ``configurable["memlineage_session"]`` of the run config, else
``configurable["thread_id"]``, else the run's ``run_id``; else the caller's default.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["bind_session", "session_id"]

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

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

from .session import bind_session, session_id
from .store import LineageItem, LineageSearchItem, MemLineageStore
from .toolnode import GatedToolNode, UnclassifiedToolWarning, refusal_text

__all__ = [
    "GatedToolNode",
    "UnclassifiedToolWarning",
    "LineageItem",
    "LineageSearchItem",
    "MemLineageStore",
    "bind_session",
    "refusal_text",
    "session_id",
]

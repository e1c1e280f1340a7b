"""memlineage: signed, append-only provenance for LLM agent memory (spec/python.md).

``Ledger`` records what an agent session reads (prompts, tool output, memories) as signed
entries with lineage, retrieves them verified and labelled, and checks a proposed tool call
the way the command hooks do. ``memlineage.langgraph`` builds a LangGraph store and a gated
tool node on it.

Every failure is an exception named after the Rust error it carries (``LedgerError``,
``FrontError``, ``KeyStoreError``, ``HookError``, ``StoreError``, ``PolicyError``,
``AuditError``, ``CheckpointError``, ``PinError``), all subclasses of ``MemLineageError``, with the Rust
variant's name in ``.variant``. A caller's mistake (a malformed id, a weight out of range) is a
``ValueError``.
"""

from ._native import (
    ITEM_FORMAT,
    AuditError,
    CheckpointError,
    FrontError,
    HookError,
    KeyStoreError,
    Ledger,
    LedgerError,
    MemLineageError,
    PinError,
    PolicyError,
    StoreError,
)

__all__ = [
    "ITEM_FORMAT",
    "AuditError",
    "CheckpointError",
    "FrontError",
    "HookError",
    "KeyStoreError",
    "Ledger",
    "LedgerError",
    "MemLineageError",
    "PinError",
    "PolicyError",
    "StoreError",
]

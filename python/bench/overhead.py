"""Overhead of the LangGraph front (spec/benchmarks.md, "Python front"; issue 27's targets).

Each operation runs beside its floor or the plain LangGraph equivalent in the same process,
alternating rounds, and the script prints medians and their ratio:

- floors, measured in this run: one Ed25519 signature of a 200-byte message (the library's,
  `memlineage._native.sign_floor`), one durable commit (Python's sqlite3: a one-row insert in
  a WAL database with `synchronous=FULL`, as the ledger's store runs it, in the same
  directory), and `InMemoryStore`'s own `put`, `get` and `search`;
- a put (ledger in memory, and a SQLite file) beside sign + commit and beside
  `InMemoryStore.put`, in a session that read the user's prompt (so each put is tied to it);
- a get of an item this handle verified and this session read (the warm get) beside
  `InMemoryStore.get`, and a first get in a new session (verified, recorded);
- a search with limit 10 over 10 and over 1,000 items under the prefix, without and with a
  query (index of 64 dims), beside `InMemoryStore`'s;
- one gated tool call beside the same call through `ToolNode` in a one-node graph.

Usage: python python/bench/overhead.py [ROUNDS]   (default 200; prints a Markdown table)
"""

from __future__ import annotations

import hashlib
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore

from memlineage import Ledger, _native
from memlineage.langgraph import GatedToolNode, MemLineageStore

IBAN = "DE89370400440532013000"


def embed(texts):
    out = []
    for text in texts:
        v = [0.0] * 64
        for w in text.split():
            v[int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "big") % 64] += 1.0
        out.append(v)
    return out


INDEX = {"dims": 64, "embed": embed, "fields": ["text"]}


def timed(fn) -> float:
    t = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t) / 1e3  # µs


def pair(rounds: int, a, b) -> tuple[float, float]:
    """Median µs of `a` and `b`, alternating, after a warm-up round of each."""
    a(0), b(0)
    ta, tb = [], []
    for i in range(1, rounds + 1):
        ta.append(timed(lambda: a(i)))
        tb.append(timed(lambda: b(i)))
    return statistics.median(ta), statistics.median(tb)


def commit_floor(directory: Path):
    db = sqlite3.connect(directory / "floor.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB)")
    blob = b"x" * 400

    def run(i: int) -> None:
        db.execute("BEGIN")
        db.execute("INSERT INTO t (b) VALUES (?)", (blob,))
        db.execute("COMMIT")

    return run


def puts(store):
    def run(i: int) -> None:
        store.put(("bench", "puts"), f"k{i}", {"text": f"memory {i}", "n": i})

    return run


def gets(store):
    store.put(("g",), "k", {"text": "a memory"})
    store.get(("g",), "k")

    def run(_: int) -> None:
        assert store.get(("g",), "k") is not None

    return run


def searches(store, n: int, query: str | None):
    for k in range(n):
        store.put(("find", str(n)), f"k{k}", {"text": f"memory {k} about topic {k % 7}", "n": k})

    def run(_: int) -> None:
        got = store.search(("find", str(n)), query=query, limit=10)
        assert len(got) == 10

    return run


def tool_graph(node) -> object:
    g = StateGraph(MessagesState)
    g.add_node("tools", node)
    g.add_edge(START, "tools")
    g.add_edge("tools", END)
    return g.compile()


@tool
def send_money(recipient: str, amount: int) -> str:
    """Send money."""
    return f"sent {amount} EUR to {recipient}"


def calls(app):
    def run(i: int) -> None:
        state = {
            "messages": [
                HumanMessage(f"Pay 120 EUR to {IBAN}", id=f"h{i}"),
                AIMessage(
                    "",
                    id=f"a{i}",
                    tool_calls=[{"name": "send_money", "args": {"recipient": IBAN, "amount": 120},
                                 "id": f"c{i}"}],
                ),
            ]
        }
        out = app.invoke(state, {"configurable": {"thread_id": f"t{i}-{uuid.uuid4().hex[:6]}"}})
        assert out["messages"][-1].status == "success"

    return run


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rows: list[tuple[str, float, str, float]] = []
    with tempfile.TemporaryDirectory() as d:
        sign = statistics.median(_native.sign_floor(2000))
        commit, _ = pair(rounds, commit_floor(Path(d)), lambda i: None)
        floor = sign + commit
        rows.append(("one Ed25519 signature (the floor's half)", sign, "—", 0))
        rows.append(("one durable SQLite commit (the floor's other half)", commit, "—", 0))
        ledgers = {
            "in memory": Ledger.in_memory(),
            "SQLite file": Ledger.create(Path(d) / "bench.db", state=Path(d) / "state"),
        }
        for name, led in ledgers.items():
            ml = MemLineageStore(led, session=f"puts-{name}")
            ml.ledger.record_prompt(f"puts-{name}", "keep notes")
            a, b = pair(rounds, puts(ml), puts(InMemoryStore()))
            rows.append((f"put, ledger {name}", a, "InMemoryStore.put", b))
            rows.append((f"put, ledger {name}", a, "sign + commit", floor))
            a, b = pair(rounds, gets(MemLineageStore(led, session=f"g-{name}")),
                        gets(InMemoryStore()))
            rows.append((f"warm get, ledger {name}", a, "InMemoryStore.get", b))
            for n in (10, 1000):
                for q in (None, "memory about topic 3"):
                    ml = MemLineageStore(led, session=f"s-{name}-{n}-{q}", index=INDEX)
                    ref = InMemoryStore(index=INDEX)
                    a, b = pair(max(20, rounds // 4), searches(ml, n, q), searches(ref, n, q))
                    what = "query" if q else "no query"
                    rows.append((f"search limit 10 over {n:,} items, {what}, ledger {name}", a,
                                 "InMemoryStore", b))
            gated = tool_graph(GatedToolNode([send_money], ledger=led))
            plain = tool_graph(ToolNode([send_money]))
            a, b = pair(rounds, calls(gated), calls(plain))
            rows.append((f"one sensitive tool call, ledger {name}", a, "ToolNode", b))
    print(f"rounds: {rounds} (medians)\n")
    print("| operation | memlineage (µs) | beside | its µs | ratio |")
    print("|---|---|---|---|---|")
    for name, a, other, b in rows:
        ratio = f"{a / b:,.2f} ×" if b else "—"
        other_us = f"{b:,.1f}" if b else "—"
        print(f"| {name} | {a:,.1f} | {other} | {other_us} | {ratio} |")


if __name__ == "__main__":
    main()

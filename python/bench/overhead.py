"""Overhead of the LangGraph front (spec/benchmarks.md, "Python front").

Each operation runs beside the plain LangGraph equivalent in the same process, alternating
rounds, and the script prints medians and their ratio:

- a put of 8 items: MemLineageStore (ledger in memory, and a SQLite file synced per write)
  beside InMemoryStore;
- a search returning 8 items, the same pairs;
- one gated tool call (GatedToolNode: the turn's prompt recorded, the sensitive call checked,
  executed, its output recorded) beside the same call through ToolNode, both in a one-node
  graph on a new thread each round.

Usage: python python/bench/overhead.py [ROUNDS]   (default 200; prints a Markdown table)
"""

from __future__ import annotations

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

from memlineage import Ledger
from memlineage.langgraph import GatedToolNode, MemLineageStore

IBAN = "DE89370400440532013000"


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


def puts(store, session_bound: bool):
    def run(i: int) -> None:
        for k in range(8):
            store.put(("bench", f"r{i}"), f"k{k}", {"text": f"memory {k} of round {i}", "n": k})

    return run


def searches(store):
    for k in range(8):
        store.put(("find",), f"k{k}", {"text": f"memory {k}", "n": k})

    def run(_: int) -> None:
        got = store.search(("find",), limit=8)
        assert len(got) == 8

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


def calls(app, gated: bool):
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
        msg = out["messages"][-1]
        assert msg.status == "success", msg.content

    return run


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rows = []
    with tempfile.TemporaryDirectory() as d:
        ledgers = {
            "in memory": Ledger.in_memory(),
            "SQLite file": Ledger.create(Path(d) / "bench.db"),
        }
        for name, led in ledgers.items():
            ml = MemLineageStore(led, session="bench")
            a, b = pair(rounds, puts(ml, True), puts(InMemoryStore(), False))
            rows.append((f"put of 8 items, ledger {name}", a, b))
            ml2 = MemLineageStore(led, session="bench-search")
            a, b = pair(rounds, searches(ml2), searches(InMemoryStore()))
            rows.append((f"search returning 8 items, ledger {name}", a, b))
            gated = tool_graph(GatedToolNode([send_money], ledger=led))
            plain = tool_graph(ToolNode([send_money]))
            a, b = pair(rounds, calls(gated, True), calls(plain, False))
            rows.append((f"one sensitive tool call, gated vs ToolNode, ledger {name}", a, b))
    print(f"rounds: {rounds} (medians)\n")
    print("| operation | memlineage (µs) | LangGraph (µs) | ratio |")
    print("|---|---|---|---|")
    for name, a, b in rows:
        print(f"| {name} | {a:,.0f} | {b:,.0f} | {a / b:,.1f} × |")


if __name__ == "__main__":
    main()

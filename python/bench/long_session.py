"""Long sessions (spec/benchmarks.md, "Python front: long sessions"; issue 27): the cost of a
`put` in a session that has read N entries, N = 10 … 100,000, beside one Ed25519 signature
measured in the same run (the put signs one entry), and whether `explain` still reaches every
source.

For each N the script appends N prompts (in other sessions, a hundred each), has one session
read them all (`Ledger.retrieve`, in chunks), makes one warm-up put (it folds the reads into
context entries, lineage.md §4.2), then times ROUNDS puts, each after one more read, and
reports the median. A LangGraph thread reads one item and writes one memory per turn: that
is the steady state measured.

Usage: python python/bench/long_session.py [ROUNDS] [FILE]   (default 20; FILE: also on a
SQLite ledger at a temporary path, with sizes up to 10,000)

`python python/bench/long_session.py ROUNDS tools` (issue 32) times instead, in memory, the
two calls a tool-using agent makes per step after N = 10, 1,000 and 10,000 tool outputs of
3 KB each (bank statements: amounts, dates, IBANs, numbers throughout, as
`benches/long_session.rs` makes them): `record_tool_result` of one more statement, and `check`
of a payment with five arguments (an amount, an amount as text, the IBAN of an injected bill,
a card number, a subject) that the policy gates; medians of ROUNDS rounds, each round one
record and one check.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from memlineage import Ledger
from memlineage.langgraph import MemLineageStore

SIZES = [10, 1_000, 10_000, 100_000]


def build(led: Ledger, n: int) -> list[str]:
    ids = [led.record_prompt(f"w{i // 100}", f"prompt {i} of {n}")["id"] for i in range(n)]
    for i in range(0, n, 5_000):
        led.retrieve("long", ids[i : i + 5_000])
    return ids


def timed_puts(store: MemLineageStore, led: Ledger, rounds: int) -> float:
    times = []
    with store.bind("long"):
        store.put(("bench",), "warm", {"text": "warm-up"})
        for r in range(rounds):
            extra = led.record_prompt("w-extra", f"extra {r}")["id"]
            led.retrieve("long", [extra])
            t = time.perf_counter_ns()
            store.put(("bench",), f"k{r}", {"text": f"memory {r}"})
            times.append((time.perf_counter_ns() - t) / 1e3)
    return statistics.median(times)


def sign_us() -> float:
    """One signature through the same binding, in a session with no reads: the floor."""
    led = Ledger.in_memory()
    times = []
    for i in range(200):
        t = time.perf_counter_ns()
        led.record_prompt("floor", f"p{i}")
        times.append((time.perf_counter_ns() - t) / 1e3)
    return statistics.median(times)


def reaches_every_source(led: Ledger, item_entry: str, ids: list[str]) -> bool:
    """Whether the lineage of the put reaches every prompt the session read (walks parents)."""
    want, seen, stack = set(ids), set(), [item_entry]
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        stack.extend(p["id"] for p in led.explain(e)["parents"])
    return want <= seen


def statement(seed: int) -> str:
    """A 3 KB statement, different for each seed (the same text as benches/long_session.rs)."""
    out = []
    for i in range(40):
        k = seed * 40 + i
        out.append(
            f"- amount: {100 + k * 37 % 90_000}.{k % 100:02}\n  date: '2022-{1 + k % 12:02}-"
            f"{1 + k % 28:02}'\n  recipient: GB{10 + k % 90:02}BUKB{k * 7919:014}\n  subject: "
            f"Invoice {k} for order {k * 31}\n"
        )
    return "".join(out)


PAYMENT = {
    "amount": 5000,
    "amount_text": "5 000,00",
    "recipient": "ZZ77ACCOUNT0001",
    "card": "4411223398765432",
    "subject": "Pay the rent for March",
}


def tools(rounds: int) -> None:
    floor = sign_us()
    print(f"rounds: {rounds} (medians); one record_prompt with no reads: {floor:,.0f} µs\n")
    print("| tool outputs read | record_tool_result (µs) | / after 10 | check (µs) | / after 10 |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        policy = Path(d) / "policy.toml"
        policy.write_text('default_max_label = "derived_trusted"\nsensitive_tools = ["send_money"]\n')
        base = None
        for n in [10, 1_000, 10_000]:
            led = Ledger.in_memory(policy=policy)
            led.record_prompt("s", "Pay my bills")
            for i in range(1, n):
                led.record_tool_result("s", "read_file", {"path": f"bills/{i}.yaml"}, statement(i))
            rec, chk = [], []
            for r in range(rounds):
                t = time.perf_counter_ns()
                led.record_tool_result("s", "read_file", {"path": f"more/{r}.yaml"}, statement(n + r))
                rec.append((time.perf_counter_ns() - t) / 1e3)
                t = time.perf_counter_ns()
                verdict = led.check("s", "send_money", PAYMENT)
                chk.append((time.perf_counter_ns() - t) / 1e3)
                assert verdict["decision"] in ("allow", "deny", "ask"), verdict
            r_us, c_us = statistics.median(rec), statistics.median(chk)
            base = base or (r_us, c_us)
            print(f"| {n:,} | {r_us:,.0f} | {r_us / base[0]:.2f} × | {c_us:,.0f} | {c_us / base[1]:.2f} × |")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    if len(sys.argv) > 2 and sys.argv[2] == "tools":
        tools(rounds)
        return
    on_file = len(sys.argv) > 2
    floor = sign_us()
    print(f"rounds: {rounds} (medians); one record_prompt with no reads: {floor:,.0f} µs\n")
    print("| ledger | reads | put (µs) | / put after 10 reads | explain reaches all |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for where in ["in memory"] + (["SQLite file"] if on_file else []):
            base = None
            for n in SIZES:
                if where == "SQLite file" and n > 10_000:
                    continue
                led = Ledger.in_memory() if where == "in memory" else Ledger.create(Path(d) / f"l{n}.db", state=Path(d) / f"state{n}")
                store = MemLineageStore(led)
                ids = build(led, n)
                us = timed_puts(store, led, rounds)
                base = base or us
                with store.bind("long"):
                    item = store.get(("bench",), "k0")
                if n > 10_000:
                    reach = "not walked"
                else:
                    reach = "yes" if reaches_every_source(led, item.entry_id, ids) else "NO"
                print(f"| {where} | {n:,} | {us:,.0f} | {us / base:.2f} × | {reach} |")


if __name__ == "__main__":
    main()

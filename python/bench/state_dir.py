"""Cost of the state directory (spec/python.md §3.2, attack review 59): a file ledger's handle
with the default state directory (pin advanced after every call that appends) beside the same
calls with `state=False` (records beside the ledger, nothing pinned), alternating rounds in one
process, each on a fresh ledger in a temporary directory (its state directory too).

Per round and configuration: `N` `record_tool_result` of a 3 KB output, then `N` `check` of a
payment in the same session. Prints per-round means (ms) and the ratios state / beside.

Usage: python python/bench/state_dir.py [N] [ROUNDS]   (default 200 and 5)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from memlineage import Ledger


def run(state_on: bool, n: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        state = Path(d) / "state" if state_on else False
        led = Ledger.create(Path(d) / "l.db", state=state)
        led.record_prompt("s", "hello")
        t = time.perf_counter()
        for i in range(n):
            led.record_tool_result("s", "read_page", {"i": i}, f"page {i} " + "x" * 3000)
        record = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n):
            led.check("s", "send_money", {"recipient": "GB33BUKB20201555555555", "amount": 10})
        check = (time.perf_counter() - t) / n
        return record, check


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print("| round | record beside | record with state | × | check beside | check with state | × |")
    print("|---|---|---|---|---|---|---|")
    for r in range(rounds):
        (rb, cb), (rs, cs) = run(False, n), run(True, n)
        print(
            f"| {r} | {rb * 1e3:.2f} ms | {rs * 1e3:.2f} ms | {rs / rb:.2f} "
            f"| {cb * 1e3:.2f} ms | {cs * 1e3:.2f} ms | {cs / cb:.2f} |"
        )


if __name__ == "__main__":
    main()

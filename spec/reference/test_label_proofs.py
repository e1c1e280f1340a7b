#!/usr/bin/env python3
"""Runs the independent label-proof verifier (verify_label_proof.py) over the vectors.

    python3 spec/reference/test_label_proofs.py

Every file of tests/vectors/label-proof/ (spec/label-proof.md §7) must give its `want` (label,
quarantined, tombstoned, lineage path, subject index, ancestry size) or be rejected with its
`want_err` class, with the expected parameters of `expect` when present. Then, for every
honest vector, every proof with one entry or one lookup left out must be rejected (never a
verdict), and so must the proof with any one of 40 characters spread over its head changed. Exits non-zero if any
check fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import verify_label_proof as vl  # noqa: E402

VECTORS = HERE.parent.parent / "tests" / "vectors" / "label-proof"


def outcome(text: str, vkey: tuple, expected: tuple | None = None) -> dict | str:
    try:
        return vl.verify(text.encode(), vkey, expected)
    except vl.Reject as r:
        return r.cls


def drop_line_groups(text: str) -> list[str]:
    """The proof without one entry (and its path) or one lookup (and its nodes), each way."""
    head, _, checkpoint = text.partition("\n\n")
    lines = head.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith(("entry ", "lookup "))]
    out = []
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(lines)
        out.append("\n".join(lines[:s] + lines[e:]) + "\n\n" + checkpoint)
    return out


def torsion_entry(i: int) -> bytes:
    """A prompt signed with a torsion component in R (an order-8 point added): it satisfies the
    cofactored equation only, so OpenSSL refuses it and only the slow check accepts it."""
    import hashlib
    import cbor2
    ve = vl.ve
    x = 0x1D2C3B4A59687786 + i
    a = ve.encode_point(ve.scalar_mult(x, ve.BASE))
    payload = cbor2.dumps({0: 1, 1: a, 2: 0, 3: b"\x11" * 32, 4: b"\x11" * 32, 5: b"\x11" * 32,
                           6: [], 7: 1767225600000 + i, 8: 0}, canonical=True)
    protected = ve.PROTECTED_PREFIX + a
    message = ve.sig_structure(protected, payload)
    t8 = ve.decode_point(bytes.fromhex(
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"))[0]
    r = 12345 + i
    big_r = ve.encode_point(ve.point_add(ve.scalar_mult(r, ve.BASE), t8))
    k = int.from_bytes(hashlib.sha512(big_r + a + message).digest(), "little") % ve.L
    return ve.envelope(protected, payload, big_r + ((r + k * x) % ve.L).to_bytes(32, "little"))


def slow_checks_only_for_leaves(v: dict) -> bool:
    """Entries that need the slow cofactored check (about 30 ms each in plain integers) and are
    not leaves of the signed tree are refused without it: a 32 MiB proof of them once took an
    hour (attack review 44). Returns whether the proof is refused with no slow check."""
    import base64
    vkey = vl.parse_vkey(v["vkey"])
    checkpoint = v["proof"].partition("\n\n")[2]
    entries = [f"entry {i} {base64.b64encode(torsion_entry(i)).decode()}" for i in range(3)]
    text = "\n".join([vl.HEADER, "subject 0", *entries]) + "\n\n" + checkpoint
    calls = []
    original = vl.ve.verify_signature
    vl.ve.verify_signature = lambda *a: calls.append(a) or original(*a)
    try:
        got = outcome(text, vkey)
    finally:
        vl.ve.verify_signature = original
    return got == "Entry" and not calls


def main() -> int:
    failures = 0
    honest_file = VECTORS / "summary-quarantined-tombstoned.json"
    ok = slow_checks_only_for_leaves(json.loads(honest_file.read_text()))
    print(f"{'ok  ' if ok else 'FAIL'} torsion entries off the tree refused, no slow check")
    failures += not ok
    v = json.loads(honest_file.read_text())
    vkey, size = vl.parse_vkey(v["vkey"]), int(v["proof"].partition("\n\n")[2].split("\n")[1])
    try:
        vl.verify(v["proof"].encode(), vkey, None, size + 1)
        ok = False
    except vl.Reject as r:
        ok = r.cls == "Stale" and isinstance(outcome(v["proof"], vkey), dict)
    ok = ok and vl.verify(v["proof"].encode(), vkey, None, size)["index"] == v["want"]["index"]
    print(f"{'ok  ' if ok else 'FAIL'} a proof older than the trusted tree size is Stale")
    failures += not ok
    files = sorted(VECTORS.glob("*.json"))
    if len(files) < 30:
        print(f"FAIL only {len(files)} vectors in {VECTORS}")
        return 1
    honest = 0
    for f in files:
        v = json.loads(f.read_text())
        vkey = vl.parse_vkey(v["vkey"])
        exp = v.get("expect")
        expected = (exp["tau"], exp["rule"]) if exp else None
        got = outcome(v["proof"], vkey, expected)
        if "want_err" in v:
            ok = got == v["want_err"]
            shown = got if isinstance(got, str) else f"verdict {got['label']}"
        else:
            want = v["want"]
            ok = isinstance(got, dict) and all(got[k] == want[k] for k in want)
            shown = got if isinstance(got, str) else got["label"]
            if ok:
                honest += 1
                for i, mutated in enumerate(drop_line_groups(v["proof"])):
                    if isinstance(outcome(mutated, vkey), dict):
                        print(f"FAIL {f.stem}: dropping group {i} still verifies")
                        ok = False
                head = v["proof"].split("\n\n")[0]
                for at in range(0, len(head), max(1, len(head) // 40)):
                    c = head[at]
                    flip = "A" if c != "A" else "B"
                    if c == "\n":
                        continue
                    mutated = v["proof"][:at] + flip + v["proof"][at + 1:]
                    if isinstance(outcome(mutated, vkey), dict):
                        print(f"FAIL {f.stem}: character {at} changed still verifies")
                        ok = False
        print(f"{'ok  ' if ok else 'FAIL'} {f.stem:34} {shown}")
        failures += not ok
    print(f"\n{len(files) - failures}/{len(files)} vectors ({honest} honest, each also "
          "refused with any entry or lookup dropped or 40 characters of its head changed): "
          + ("all passed" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

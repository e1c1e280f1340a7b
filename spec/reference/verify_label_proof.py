#!/usr/bin/env python3
"""Independent verifier for memlineage label proofs (`memlineage/label-proof@v1`).

Written from spec/label-proof.md alone, with the documents it cites: spec/log.md (checkpoints,
verifier keys, inclusion proofs), spec/record.md (entries, through verify_entry.py),
spec/lineage.md (labels, paths) and spec/forensics.md (quarantine, receipts). It follows the
verification steps of spec/label-proof.md §4 in order and names each rejection with the class
given there.

    python3 verify_label_proof.py --log-key VKEY FILE
    python3 verify_label_proof.py --log-key VKEY [--tau MILLIONTHS --rule RULE] FILE
    python3 verify_label_proof.py --log-key VKEY --min-size TREE-SIZE FILE
    python3 verify_label_proof.py --log-key VKEY --batch EXPECTED.json

On success it prints the verdict as JSON and exits 0; on a rule violation it prints
`reject: <Class>: <detail>` to stderr and exits 1; usage and I/O errors exit 2. `--batch`
verifies every proof an EXPECTED.json list names ({file, id, label, quarantined, tombstoned,
path}, files relative to the list) and prints `agree N/M`, exiting 0 only if all agree.

Dependencies: cbor2 (via verify_entry.py) and cryptography, whose Ed25519 (OpenSSL, the
cofactorless RFC 8032 equation) serves as a fast path only: spec/record.md §2.3 step 8 is the
cofactored equation, which every signature the cofactorless one accepts satisfies too, so a
signature OpenSSL refuses is checked again with the cofactored equation in plain integers, and
only for an entry whose audit path leads to the signed root (one that does not is refused
either way: here as `Entry`, where the Rust verifier says `Proof` if its signature holds under
the cofactored equation alone). Input is read up to 32 MiB. Not for production use: a
conformance aid.
"""

from __future__ import annotations

import base64
import json
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verify_entry as ve  # noqa: E402
from checkpoint_note import (  # noqa: E402,F401 (re-exported: the tests use them from here)
    MAX_CHECKPOINT_BYTES, Checkpoint, Reject, b64, decimal, ed25519_checks, fast_equation,
    inclusion_ok, parse_vkey, sha256, valid_name, verify_checkpoint, verify_strict,
)

HEADER = "memlineage/label-proof@v1"
MAX_PROOF_BYTES = 32 << 20  # label-proof.md §2
POLICY_LINE = "memlineage/label-policy@v1"  # lineage.md §2.1
INDEX_LINE = "memlineage/effects-index@v1"  # label-proof.md §3.3

LABELS = ["TRUSTED", "DERIVED_TRUSTED", "DERIVED_UNTRUSTED", "EXTERNAL"]  # lineage.md §1
TRUSTED, DERIVED_TRUSTED, DERIVED_UNTRUSTED, EXTERNAL = range(4)
ROLE_LOG, ROLE_TOOL, ROLE_EXTERNAL = 0, 4, 5
K_TOMBSTONE, K_KEYRING, K_FLAG, K_FLAG_STRONG, K_RELEASE, K_CONTEXT = 5, 6, 7, 8, 9, 12
EFFECT_KINDS = {5, 6, 7, 8, 9, 10, 11}  # label-proof.md Conventions
BIT_ALL, BIT_STRONG = 1, 2  # forensics.md §2.3


_VERIFIED: dict[bytes, ve.Entry] = {}


def verify_entry(data: bytes, slow: bool = True) -> ve.Entry:
    """record.md §6 through verify_entry.py, with the cofactored equation's fast path (module
    docs). Entries verified once are remembered by their bytes (a batch shares many). With
    `slow` false, a signature OpenSSL refuses is refused without the cofactored check."""
    if data in _VERIFIED:
        return _VERIFIED[data]
    original = ve.verify_signature

    def fast(a: Any, kid: bytes, message: bytes, signature: bytes) -> None:
        if not fast_equation(kid, message, signature):
            if not slow:
                raise ve.Reject("BadSignature", "not checked further: not a leaf of the tree")
            original(a, kid, message, signature)
        else:  # the encoding checks of steps 4-6 still apply
            try:
                ed25519_checks(kid, signature)
            except ValueError:
                raise ve.Reject("BadSignature") from None

    ve.verify_signature = fast
    try:
        e = ve.verify(data)
    finally:
        ve.verify_signature = original
    _VERIFIED[data] = e
    return e


# ---------------------------------------------------------------------------------------------
# Signed parameters (lineage.md §2.1) and the signed index (label-proof.md §3.3).


def tagged_line(extension: list[str], tag: str, keys: tuple[str, str]) -> tuple[str, str] | None:
    """The values of the one line `<tag> <k1>=<v1> <k2>=<v2>`; None when there is none.
    Raises ValueError for a malformed or repeated one."""
    found = None
    for line in extension:
        if not line.startswith(tag):
            continue
        words = line[len(tag):].split(" ")
        if len(words) != 3 or words[0] != "":
            raise ValueError(line)
        values = []
        for word, key in zip(words[1:], keys):
            if not word.startswith(key + "="):
                raise ValueError(line)
            values.append(word[len(key) + 1:])
        if found is not None:
            raise ValueError(line)
        found = (values[0], values[1])
    return found


def signed_policy(extension: list[str]) -> tuple[int, str]:
    """lineage.md §2.1: (τ in millionths, rule)."""
    try:
        line = tagged_line(extension, POLICY_LINE, ("tau", "rule"))
    except ValueError as e:
        raise Reject("Parameters", str(e)) from None
    if line is None:
        raise Reject("UnsignedParameters")
    tau = decimal(line[0])
    if tau is None or tau > 1_000_000 or line[1] not in ("fail-closed", "fail-open"):
        raise Reject("Parameters", line)
    return tau, line[1]


def signed_index(extension: list[str]) -> bytes:
    """label-proof.md §3.3: the index root."""
    try:
        line = tagged_line(extension, INDEX_LINE, ("entries", "root"))
    except ValueError as e:
        raise Reject("IndexLine", str(e)) from None
    if line is None:
        raise Reject("NoEffectsIndex")
    root = b64(line[1], 32)
    if decimal(line[0]) is None or root is None:
        raise Reject("IndexLine", line)
    return root


# ---------------------------------------------------------------------------------------------
# The effects index (label-proof.md §3.1, §3.2).


def index_key(kind: str, subject: bytes) -> bytes:
    tag = b"\x00" if kind == "target" else b"\x01"
    return sha256(b"memlineage/effects-key@v1", tag, subject)


def chain(effects: list[tuple[int, bytes, int]]) -> bytes:
    c = bytes(32)
    for index, eid, kind in effects:
        c = sha256(b"memlineage/effects-link@v1", c, index.to_bytes(8, "big"), eid,
                   kind.to_bytes(8, "big"))
    return c


def leaf(key: bytes, m: int, c: bytes) -> bytes:
    return sha256(b"memlineage/effects-leaf@v1", key, m.to_bytes(8, "big"), c)


def inode(bit: int, left: bytes, right: bytes) -> bytes:
    return sha256(b"memlineage/effects-node@v1", bytes([bit]), left, right)


def key_bit(key: bytes, b: int) -> int:
    return (key[b // 8] >> (7 - b % 8)) & 1


@dataclass
class Lookup:
    kind: str  # "key" or "target"
    subject: bytes
    end: str  # "found", "empty", "other"
    other: tuple[bytes, int, bytes] | None
    nodes: list[tuple[int, bytes]] = field(default_factory=list)

    def order(self) -> tuple[int, bytes]:
        return (0 if self.kind == "key" else 1, self.subject)


def verify_lookup(root: bytes, lk: Lookup, effects: list[tuple[int, bytes, int]]) -> None:
    """label-proof.md §3.2 steps 1-5, as `Lookup` rejections."""
    key = index_key(lk.kind, lk.subject)
    bits = [b for b, _ in lk.nodes]
    if any(a >= b for a, b in zip(bits, bits[1:])):
        raise Reject("Lookup", "NotASearchPath")
    m = len(effects)
    if (lk.end == "found") != (m > 0):
        raise Reject("Lookup", f"Count: {lk.end} with {m} effects")
    if lk.end == "found":
        x = leaf(key, m, chain(effects))
    elif lk.end == "empty":
        if lk.nodes:
            raise Reject("Lookup", "NotASearchPath")
        x = bytes(32)
    else:
        k2, m2, c2 = lk.other
        if k2 == key or m2 < 1 or any(key_bit(k2, b) != key_bit(key, b) for b in bits):
            raise Reject("Lookup", "NotASearchPath")
        x = leaf(k2, m2, c2)
    for b, sibling in reversed(lk.nodes):
        x = inode(b, x, sibling) if key_bit(key, b) == 0 else inode(b, sibling, x)
    if x != root:
        raise Reject("Lookup", "RootMismatch")


# ---------------------------------------------------------------------------------------------
# The text form (label-proof.md §2).


@dataclass
class Proof:
    subject: int
    entries: list[tuple[int, bytes, list[bytes]]]
    lookups: list[Lookup]
    checkpoint: bytes


def encode(p: Proof) -> str:
    out = [HEADER, f"subject {p.subject}"]
    for index, cose, path in p.entries:
        out.append(f"entry {index} {base64.b64encode(cose).decode()}")
        out += [base64.b64encode(h).decode() for h in path]
    for lk in p.lookups:
        end = lk.end
        if lk.other is not None:
            k2, m2, c2 = lk.other
            end = f"other {base64.b64encode(k2).decode()} {m2} {base64.b64encode(c2).decode()}"
        out.append(f"lookup {lk.kind} {base64.b64encode(lk.subject).decode()} {end}")
        out += [f"node {b} {base64.b64encode(h).decode()}" for b, h in lk.nodes]
    return "\n".join(out) + "\n\n" + p.checkpoint.decode("utf-8", "replace")


def parse(data: bytes) -> Proof:
    if len(data) > MAX_PROOF_BYTES:
        raise Reject("TooLarge", len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("Malformed", "UTF-8") from None
    head, sep, checkpoint = text.partition("\n\n")
    if not sep or not checkpoint:
        raise Reject("Malformed", "an empty line, then the checkpoint")
    lines = head.split("\n")
    if lines[0] != HEADER or len(lines) < 2 or not lines[1].startswith("subject "):
        raise Reject("Malformed", "header and subject")
    subject = decimal(lines[1][len("subject "):])
    if subject is None:
        raise Reject("Malformed", "subject")
    p = Proof(subject, [], [], checkpoint.encode())
    for n, line in enumerate(lines[2:], start=3):
        words = line.split(" ")
        if words[0] == "entry" and len(words) == 3 and not p.lookups:
            index, cose = decimal(words[1]), b64(words[2])
            if index is None or cose is None or (p.entries and p.entries[-1][0] >= index):
                raise Reject("Malformed", f"line {n}: entry")
            p.entries.append((index, cose, []))
        elif len(words) == 1 and p.entries and not p.lookups:
            h = b64(line, 32)
            if h is None or len(p.entries[-1][2]) == 64:
                raise Reject("Malformed", f"line {n}: path hash")
            p.entries[-1][2].append(h)
        elif words[0] == "lookup" and len(words) in (4, 7) and words[1] in ("key", "target"):
            s = b64(words[2], 32)
            other = None
            if words[3] == "other" and len(words) == 7:
                k2, m2, c2 = b64(words[4], 32), decimal(words[5]), b64(words[6], 32)
                if None in (k2, m2, c2):
                    raise Reject("Malformed", f"line {n}: lookup")
                other = (k2, m2, c2)
            elif words[3] not in ("found", "empty") or len(words) != 4:
                raise Reject("Malformed", f"line {n}: lookup")
            lk = Lookup(words[1], s, words[3], other)
            if s is None or (p.lookups and p.lookups[-1].order() >= lk.order()):
                raise Reject("Malformed", f"line {n}: lookup")
            p.lookups.append(lk)
        elif words[0] == "node" and len(words) == 3 and p.lookups:
            b, h = decimal(words[1]), b64(words[2], 32)
            if b is None or b > 255 or h is None:
                raise Reject("Malformed", f"line {n}: node")
            p.lookups[-1].nodes.append((b, h))
        else:
            raise Reject("Malformed", f"line {n}")
    if encode(p) != text:
        raise Reject("Malformed", "not the canonical encoding")
    return p


# ---------------------------------------------------------------------------------------------
# Verification (label-proof.md §4).


def lifted(label: int) -> int:
    return DERIVED_TRUSTED if label <= DERIVED_TRUSTED else DERIVED_UNTRUSTED


def label_of(role: int, parents: list[tuple[int, int]], tau: int, rule: str) -> int:
    """lineage.md §3-§4; `parents` as (weight, label)."""
    if role in (ROLE_TOOL, ROLE_EXTERNAL):
        return EXTERNAL
    if not parents:
        return TRUSTED
    strong = [lifted(lab) for w, lab in parents if w > tau]
    if strong:
        return max(strong)
    return TRUSTED if rule == "fail-open" else max(lifted(lab) for _, lab in parents)


def subject_of(e: ve.Entry) -> tuple[str, bytes] | None:
    if e.kind not in EFFECT_KINDS:
        return None
    return ("key", e.binding[0]) if e.kind == K_KEYRING else ("target", e.target)


def verify(data: bytes, vkey: tuple[str, bytes, bytes], expected: tuple[int, str] | None = None,
           min_size: int | None = None) -> dict[str, Any]:
    """label-proof.md §4 steps 1-15; returns the verdict or raises Reject. `min_size` is the
    tree size of a checkpoint the caller trusts: an older proof is `Stale` (§5)."""
    p = parse(data)  # 1
    cp = verify_checkpoint(p.checkpoint, vkey)  # 2
    if min_size is not None and cp.size < min_size:
        raise Reject("Stale", f"tree size {cp.size}, older than the {min_size} trusted")
    tau, rule = signed_policy(cp.extension)  # 3
    if expected is not None and expected != (tau, rule):
        raise Reject("ParametersDiffer", f"signed {tau} {rule}")
    root = signed_index(cp.extension)  # 4
    indexes = [i for i, _, _ in p.entries]
    if p.subject not in indexes:  # 5
        raise Reject("MissingSubject", p.subject)
    entries: list[ve.Entry] = []
    for index, cose, path in p.entries:  # 6
        # The cofactored equation in plain integers costs about 30 ms; only an entry that is a
        # leaf of the signed tree is worth it. One that is not is refused either way: as
        # `Entry` here, where the Rust verifier says `Proof` if its signature holds (module
        # docs). Without this, a 32 MiB proof of entries signed with a torsion component in R
        # kept this verifier busy for about an hour.
        in_tree = not inclusion_ok(index, cp.size, sha256(b"\x00", cose), path, cp.root)
        try:
            entries.append(verify_entry(cose, slow=in_tree))
        except ve.Reject as r:
            raise Reject("Entry", f"{index}: {r}") from None
    for (index, _, path), e in zip(p.entries, entries):
        why = inclusion_ok(index, cp.size, e.id, path, cp.root)
        if why:
            raise Reject("Proof", f"{index}: {why}")
    by_id = {e.id: i for i, e in enumerate(entries)}
    if len(by_id) != len(entries):
        raise Reject("DuplicateEntry")
    at = indexes.index(p.subject)
    closure, queue = {at}, deque([at])  # 7
    while queue:
        c = queue.popleft()
        for pid, _ in entries[c].parents:
            if pid not in by_id:
                raise Reject("MissingAncestor", f"{pid.hex()} (parent of {entries[c].id.hex()})")
            i = by_id[pid]
            if indexes[i] >= indexes[c]:
                raise Reject("ParentNotEarlier", pid.hex())
            if i not in closure:
                closure.add(i)
                queue.append(i)
    ancestry = sorted(closure)
    groups: dict[tuple[str, bytes], list[int]] = {}  # 8: positions, in index order
    for i, e in enumerate(entries):
        s = subject_of(e)
        if s is not None:
            groups.setdefault(s, []).append(i)
    log_key = vkey[2]
    needed = {("target", entries[i].id) for i in ancestry}  # 9
    needed |= {("key", entries[i].writer) for i in ancestry if entries[i].writer != log_key}
    needed |= {("target", entries[j].id) for s in list(needed) for j in groups.get(s, [])
               if entries[j].kind in (K_FLAG, K_FLAG_STRONG)}
    order = lambda s: (0 if s[0] == "key" else 1, s[1])  # noqa: E731
    looked = {(lk.kind, lk.subject) for lk in p.lookups}
    for s in sorted(needed - looked, key=order):
        raise Reject("MissingLookup", f"{s[0]} {s[1].hex()}")
    for s in sorted(looked - needed, key=order):
        raise Reject("ExtraneousLookup", f"{s[0]} {s[1].hex()}")
    for lk in p.lookups:
        effects = [(indexes[j], entries[j].id, entries[j].kind)
                   for j in groups.get((lk.kind, lk.subject), [])]
        verify_lookup(root, lk, effects)
    used = set(ancestry) | {j for s in needed for j in groups.get(s, [])}  # 10
    for i in range(len(entries)):
        if i not in used:
            raise Reject("Extraneous", indexes[i])
    roles: dict[int, tuple[int, str]] = {}  # 11
    for i in ancestry:
        w = entries[i].writer
        if w == log_key:
            roles[i] = (ROLE_LOG, cp.origin)
            continue
        bindings = [j for j in groups.get(("key", w), [])
                    if entries[j].kind == K_KEYRING and entries[j].writer == log_key]
        if not bindings or indexes[bindings[0]] >= indexes[i]:
            raise Reject("UnboundWriter", f"{indexes[i]}: {w.hex()}")
        _, role, name = entries[bindings[0]].binding
        roles[i] = (role, name)
    labels: dict[bytes, int] = {}  # 12
    for i in ancestry:
        e = entries[i]
        labels[e.id] = label_of(roles[i][0], [(w, labels[pid]) for pid, w in e.parents], tau,
                                rule)
    s_id = entries[at].id
    tombstones = [entries[j].id.hex() for j in groups.get(("target", s_id), [])
                  if entries[j].kind == K_TOMBSTONE]  # 13
    quarantine = quarantine_of(entries, indexes, ancestry, groups, needed, tau, s_id)  # 14
    path = lineage_path(entries, by_id, labels, tau, rule, s_id)  # 15
    return {
        "id": s_id.hex(),
        "index": p.subject,
        "label": LABELS[labels[s_id]],
        "quarantined": quarantine is not None,
        "quarantine": quarantine,
        "tombstoned": bool(tombstones),
        "tombstones": tombstones,
        "path": [x.hex() for x in path],
        "ancestry": len(ancestry),
        "tau": tau,
        "rule": rule,
        "checkpoint": {"origin": cp.origin, "size": cp.size, "root": cp.root.hex()},
        "names": {entries[i].id.hex(): roles[i][1] for i in ancestry},
    }


def quarantine_of(entries: list[ve.Entry], indexes: list[int], ancestry: list[int],
                  groups: dict, needed: set, tau: int, s_id: bytes) -> dict | None:
    """label-proof.md §4 step 14 with forensics.md §2.3 and §3."""
    in_ancestry = {entries[i].id for i in ancestry}
    forensic = sorted({j for s in needed if s[0] == "target" for j in groups.get(s, [])
                       if entries[j].kind in (K_FLAG, K_FLAG_STRONG, K_RELEASE)},
                      key=lambda j: indexes[j])
    flags: dict[bytes, tuple[int, bytes, int]] = {}  # flag id -> (index, source, bit)
    for j in forensic:
        e = entries[j]
        if e.kind == K_RELEASE:
            flags.pop(e.target, None)
        elif e.target in in_ancestry:
            flags[e.id] = (indexes[j], e.target, BIT_ALL if e.kind == K_FLAG else BIT_STRONG)
    sources: dict[bytes, int] = {}
    for _, source, bit in flags.values():
        sources[source] = sources.get(source, 0) | bit
    bits: dict[bytes, int] = {}
    parents = {entries[i].id: entries[i].parents for i in ancestry}
    for i in ancestry:
        e = entries[i]
        b = sources.get(e.id, 0)
        for pid, w in e.parents:
            pb = bits.get(pid, 0)
            b |= pb & BIT_ALL
            if w > tau:
                b |= pb & BIT_STRONG
        if b:
            bits[e.id] = b
    if not bits.get(s_id):
        return None
    best = None
    for reach, bit in (("all", BIT_ALL), ("strong", BIT_STRONG)):
        path = receipt_path(s_id, bit, bits, sources, parents, tau)
        if path is not None and (best is None or len(path) < len(best[0])):
            best = (path, reach, bit)
    if best is None:
        return None
    path, reach, bit = best
    flag = min((f for f, (_, src, b) in flags.items() if src == path[0] and b == bit),
               key=lambda f: flags[f][0])
    return {"flag": flag.hex(), "reach": reach, "path": [x.hex() for x in path]}


def receipt_path(s_id: bytes, bit: int, bits: dict, sources: dict, parents: dict,
                 tau: int) -> list[bytes] | None:
    """forensics.md §3: breadth-first from the subject over parents in ascending id order,
    along edges carrying `bit`; the first source of that reach wins; source first."""
    if not bits.get(s_id, 0) & bit:
        return None
    prev: dict[bytes, bytes] = {}
    queue, seen = deque([s_id]), {s_id}
    while queue:
        cur = queue.popleft()
        if sources.get(cur, 0) & bit:
            path = [cur]
            while path[-1] in prev:
                path.append(prev[path[-1]])
            return path
        for pid, w in parents.get(cur, []):
            carries = bits.get(pid, 0) & bit and (bit == BIT_ALL or w > tau)
            if carries and pid not in seen:
                seen.add(pid)
                prev[pid] = cur
                queue.append(pid)
    return None


def lineage_path(entries: list[ve.Entry], by_id: dict, labels: dict, tau: int, rule: str,
                 s_id: bytes) -> list[bytes]:
    """lineage.md §6 within the ancestry; an External context entry is a source only when no
    other External entry is found (label-proof.md §4 step 15)."""
    if labels[s_id] < DERIVED_UNTRUSTED:
        return []

    def propagating(e: ve.Entry) -> list[bytes]:
        strong = [pid for pid, w in e.parents if w > tau]
        if strong or rule == "fail-open":
            return strong
        return [pid for pid, _ in e.parents]

    prev: dict[bytes, bytes] = {}
    queue, seen, unknown = deque([s_id]), {s_id}, None

    def path_from(source: bytes) -> list[bytes]:
        path = [source]
        while path[-1] in prev:
            path.append(prev[path[-1]])
        return path

    while queue:
        cur = queue.popleft()
        e = entries[by_id[cur]]
        if labels[cur] == EXTERNAL:
            if e.kind != K_CONTEXT:
                return path_from(cur)
            unknown = unknown or cur
            continue
        for pid in propagating(e):
            if labels.get(pid, EXTERNAL) >= DERIVED_UNTRUSTED and pid not in seen:
                seen.add(pid)
                prev[pid] = cur
                queue.append(pid)
    return path_from(unknown) if unknown is not None else [s_id]


# ---------------------------------------------------------------------------------------------


def batch(vkey: tuple[str, bytes, bytes], listing: Path) -> int:
    """Verifies every proof `listing` names and compares with its expected verdict."""
    expected = json.loads(read_capped(listing, MAX_PROOF_BYTES))
    agree = 0
    for want in expected:
        try:
            got = verify(read_capped(listing.parent / want["file"], MAX_PROOF_BYTES), vkey)
        except Reject as r:
            print(f"disagree {want['file']}: reject {r}")
            continue
        keys = ("id", "label", "quarantined", "tombstoned", "path")
        if all(got[k] == want[k] for k in keys):
            agree += 1
        else:
            print(f"disagree {want['file']}: got {[got[k] for k in keys]}")
    print(f"agree {agree}/{len(expected)}")
    return 0 if agree == len(expected) else 1


def read_capped(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of `path`, else ValueError: a verifier handed /dev/zero or a
    file of gigabytes must not read it whole (spec/label-proof.md §2: 32 MiB)."""
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit} bytes")
    return data


def main(argv: list[str]) -> int:
    args = argv[1:]
    try:
        vkey_text = args[args.index("--log-key") + 1]
        vkey = parse_vkey(vkey_text)
        expected = None
        if "--tau" in args or "--rule" in args:
            tau = decimal(args[args.index("--tau") + 1])
            rule = args[args.index("--rule") + 1]
            if tau is None or tau > 1_000_000 or rule not in ("fail-closed", "fail-open"):
                raise ValueError("--tau MILLIONTHS (0 to 1000000) --rule fail-closed|fail-open")
            expected = (tau, rule)
        min_size = None
        if "--min-size" in args:
            min_size = decimal(args[args.index("--min-size") + 1])
            if min_size is None:
                raise ValueError("--min-size TREE-SIZE")
        if "--batch" in args:
            return batch(vkey, Path(args[args.index("--batch") + 1]))
        data = read_capped(Path(args[-1]), MAX_PROOF_BYTES)
    except (ValueError, IndexError, OSError) as e:
        print(f"usage: --log-key VKEY [--tau N --rule R] (FILE | --batch LIST): {e}",
              file=sys.stderr)
        return 2
    try:
        verdict = verify(data, vkey, expected, min_size)
    except Reject as r:
        print(f"reject: {r}", file=sys.stderr)
        return 1
    print(json.dumps(verdict, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

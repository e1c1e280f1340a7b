#!/usr/bin/env python3
"""Independent verifier for memlineage entries (`memlineage/record@v1`).

Written from spec/record.md alone, as a check that the specification is sufficient. It follows
the reference order of spec/record.md §6 and names each rejection with the class of §7.

    python3 verify_entry.py ENTRY            # ENTRY: COSE_Sign1 bytes ("-" for stdin)
    python3 verify_entry.py --hex ENTRY      # ENTRY holds the bytes as hex text

On success it prints the entry id and fields as JSON and exits 0. On any rule violation it
prints `reject: <Class>: <detail>` to stderr and exits 1. Usage and I/O errors exit 2.

Dependencies: cbor2 (decoding, and the RFC 8949 re-encoding with canonical=True); the Ed25519
arithmetic is plain Python integers. Not for production use: it is a conformance aid.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cbor2

# spec/record.md §1, §3.1, §6.1, §6.2.
MAX_ENTRY_BYTES = 65_536
MAX_PARENTS = 1024
MAX_NAME_BYTES = 256
MAX_WEIGHT = 1_000_000
MAX_DEPTH = 8  # §6.1 item 5: at most MAX_DEPTH - 1 nested non-empty containers
FORMAT_VERSION = 1
TAG_COSE_SIGN1 = 18
# §2.1 item 2: the deterministic encoding of {1: -8, 4: kid} is this prefix followed by the kid.
PROTECTED_PREFIX = bytes.fromhex("a2 01 27 04 58 20")

# §4.1, §4.2, §5.2.
KINDS = {0: "prompt", 1: "tool_result", 2: "summary", 3: "fact", 4: "tool_call",
         5: "tombstone", 6: "keyring", 7: "quarantine", 8: "quarantine_strong",
         9: "release", 10: "lease", 11: "replacement", 12: "context"}
# Kinds whose entries carry field 9 (target), §3.1 item 9.
TARGET_KINDS = {5, 7, 8, 9, 10, 11}
ATTRIBUTIONS = {0: "coarse", 1: "lm_self_eval", 2: "attention", 3: "manual"}
ROLES = {0: "log", 1: "user", 2: "system", 3: "agent", 4: "tool", 5: "external"}
KIND_TOMBSTONE, KIND_KEYRING = 5, 6
K_TARGET, K_BINDING = 9, 10
FIELD_NAMES = {0: "version", 1: "writer", 2: "kind", 3: "content_hash", 4: "source_hash",
               5: "context_hash", 6: "parents", 7: "time", 8: "attribution", 9: "target",
               10: "binding"}


class Reject(Exception):
    """A rule of spec/record.md is broken; `cls` is the class of §7."""

    def __init__(self, cls: str, detail: Any = "") -> None:
        super().__init__(f"{cls}: {detail}" if detail != "" else cls)
        self.cls = cls
        self.detail = detail


@dataclass
class Entry:
    """A decoded, verified entry (spec/record.md §3.1)."""

    id: bytes
    version: int
    writer: bytes
    kind: int
    content_hash: bytes
    source_hash: bytes
    context_hash: bytes
    parents: list[tuple[bytes, int]]
    time_ms: int
    attribution: int
    target: bytes | None = None
    binding: tuple[bytes, int, str] | None = None
    payload: bytes = field(default=b"", repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id.hex(),
            "version": self.version,
            "writer": self.writer.hex(),
            "kind": KINDS[self.kind],
            "content_hash": self.content_hash.hex(),
            "source_hash": self.source_hash.hex(),
            "context_hash": self.context_hash.hex(),
            "parents": [{"id": i.hex(), "weight": w} for i, w in self.parents],
            "time_ms": self.time_ms,
            "attribution": ATTRIBUTIONS[self.attribution],
        }
        if self.target is not None:
            out["target"] = self.target.hex()
        if self.binding is not None:
            key, role, name = self.binding
            out["binding"] = {"key": key.hex(), "role": ROLES[role], "name": name}
        out["signature"] = "valid (strict Ed25519, spec/record.md §2.3)"
        return out


# ---------------------------------------------------------------------------------------------
# CBOR: the scan of §6.1, then one item decoded with cbor2, then map pairs in encoded order.


def read_head(data: bytes, pos: int) -> tuple[int, int, int]:
    """§6.1 items 1-4 for the head at `pos`: (major type, argument, position after the head)."""
    if pos >= len(data):
        raise Reject("Truncated", "input ends before a head")
    ib = data[pos]
    major, ai = ib >> 5, ib & 0x1F
    if major == 7:
        if 25 <= ai <= 27:
            raise Reject("Float")
        if ai >= 28:
            raise Reject("Malformed", "break outside an indefinite-length item" if ai == 31
                         else f"reserved additional information {ai}")
        raise Reject("UnsupportedSimple", f"simple value {ai}")
    if ai < 24:
        return major, ai, pos + 1
    if 28 <= ai <= 30:
        raise Reject("Malformed", f"reserved additional information {ai}")
    if ai == 31:
        if 2 <= major <= 5:
            raise Reject("IndefiniteLength")
        raise Reject("Malformed", f"additional information 31 on major type {major}")
    size = {24: 1, 25: 2, 26: 4, 27: 8}[ai]
    if pos + 1 + size > len(data):
        raise Reject("Truncated", "input ends inside a head")
    arg = int.from_bytes(data[pos + 1:pos + 1 + size], "big")
    if arg < {24: 24, 25: 1 << 8, 26: 1 << 16, 27: 1 << 32}[ai]:
        raise Reject("NonShortest", f"argument {arg} in {size} bytes")
    return major, arg, pos + 1 + size


def scan(data: bytes) -> None:
    """§6.1: one well-formed item with deterministic heads, UTF-8 text, bounded nesting, nothing
    after it."""
    pos, stack, remaining = 0, [], 1  # stack: items left at each enclosing level
    while True:
        major, arg, pos = read_head(data, pos)
        left = len(data) - pos
        children = 0
        if major in (2, 3):
            if arg > left:
                raise Reject("Truncated", "string longer than the input")
            if major == 3:
                try:
                    data[pos:pos + arg].decode("utf-8")
                except UnicodeDecodeError:
                    raise Reject("Malformed", "text string is not valid UTF-8") from None
            pos += arg
        elif major == 4:
            children = arg
        elif major == 5:
            children = 2 * arg
        elif major == 6:
            continue  # a tag's content is the next item, at the same level
        if children > left:
            raise Reject("Truncated", "more items declared than bytes remain")
        remaining -= 1
        if children:
            if len(stack) + 1 >= MAX_DEPTH:
                raise Reject("TooDeep", f"max {MAX_DEPTH}")
            stack.append(remaining)
            remaining = children
            continue
        while remaining == 0:
            if not stack:
                if pos != len(data):
                    raise Reject("TrailingBytes", len(data) - pos)
                return
            remaining = stack.pop()


def _raw_tag(tag: int):
    return lambda value, immutable: cbor2.CBORTag(tag, value)


def _bignum(tag: int):
    def decode(value: Any, immutable: bool) -> Any:
        if not isinstance(value, bytes):
            return cbor2.CBORTag(tag, value)
        n = int.from_bytes(value, "big")
        return n if tag == 2 else -1 - n

    return decode


# §6.3 step 3: tags are kept as tags (cbor2 would otherwise turn tag 1 into a datetime, strip tag
# 55799, resolve string references, ...), except that a tag 2/3 bignum is the integer it denotes
# (RFC 8949 §3.4.3), which the re-encoding of step 7 then rejects as not deterministic.
RAW_TAGS = {t: _raw_tag(t) for t in range(1 << 16)}
RAW_TAGS[2], RAW_TAGS[3] = _bignum(2), _bignum(3)


def decoder(fp: io.BytesIO) -> cbor2.CBORDecoder:
    return cbor2.CBORDecoder(fp, read_size=1, max_depth=MAX_DEPTH + 2, semantic_decoders=RAW_TAGS)


def decode_one(data: bytes) -> Any:
    """§6.2 steps 1-2: size limit, scan, then decode the one item."""
    if len(data) > MAX_ENTRY_BYTES:
        raise Reject("TooLarge", f"{len(data)} bytes, max {MAX_ENTRY_BYTES}")
    scan(data)
    try:
        return decoder(io.BytesIO(data)).decode()
    except Exception as e:  # defence in depth: the scan found every class cbor2 knows
        raise Reject("Malformed", str(e)) from None


@dataclass
class RawMap:
    """A map as its pairs in encoded order, duplicates kept (cbor2 would merge them)."""

    pairs: list[tuple[Any, Any]]


class Items:
    """Walks a well-formed item, decoding keys and values with cbor2 one at a time."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.fp = io.BytesIO(data)
        self.dec = decoder(self.fp)

    def peek_major(self) -> int:
        return self.data[self.fp.tell()] >> 5

    def value(self) -> Any:
        return self.dec.decode()

    def raw_map(self, nested_maps: frozenset[int] = frozenset()) -> RawMap:
        """Reads a map at the current position (definite length: §6.1 ran first). Values of the
        keys in `nested_maps` that are maps are read as RawMap too, to check their pairs."""
        major, n, after = read_head(self.data, self.fp.tell())
        assert major == 5
        self.fp.seek(after)
        pairs = []
        for _ in range(n):
            key = self.value()
            if is_uint(key) and key in nested_maps and self.peek_major() == 5:
                pairs.append((key, self.raw_map()))
            else:
                pairs.append((key, self.value()))
        return RawMap(pairs)


def is_uint(v: Any) -> bool:
    # bool is a subclass of int in Python: CBOR true/false are simple values, not integers.
    return type(v) is int and v >= 0


def strict_pairs(m: Any, what: str) -> list[tuple[int, Any]]:
    """§6.3 step 2: a map whose keys are uints, each once, ascending."""
    if not isinstance(m, RawMap):
        raise Reject("WrongType", f"{what}: a map")
    out: list[tuple[int, Any]] = []
    for key, value in m.pairs:
        if not is_uint(key):
            raise Reject("UnknownField", f"{what}: key {key!r}")
        if out and key == out[-1][0]:
            raise Reject("DuplicateKey", key)
        if out and key < out[-1][0]:
            raise Reject("UnsortedKeys", f"{what}: {key} after {out[-1][0]}")
        out.append((key, value))
    return out


def as_uint(v: Any, name: str) -> int:
    if not is_uint(v) or v >= 1 << 64:
        raise Reject("WrongType", f"{name}: an unsigned integer")
    return v


def as_bytes32(v: Any, name: str) -> bytes:
    if not isinstance(v, bytes) or len(v) != 32:
        raise Reject("WrongType", f"{name}: a 32-byte byte string")
    return v


def code(v: Any, name: str, registry: dict[int, str]) -> int:
    c = as_uint(v, name)
    if c not in registry:
        raise Reject("UnknownCode", f"{name} {c}")
    return c


# ---------------------------------------------------------------------------------------------
# Payload (§3, §6.3).


def decode_payload(payload: bytes) -> Entry:
    decode_one(payload)  # step 1
    items = Items(payload)
    if items.peek_major() != 5:
        raise Reject("WrongType", "payload: a map")
    fields: dict[int, Any] = {}
    for key, value in strict_pairs(items.raw_map(frozenset({K_BINDING})), "payload"):  # step 2
        if key > K_BINDING:
            raise Reject("UnknownField", key)
        fields[key] = value

    def required(k: int) -> Any:
        if k not in fields:
            raise Reject("MissingField", FIELD_NAMES[k])
        return fields[k]

    # Step 3: fields 0..10 in order.
    version = as_uint(required(0), "version")
    if version != FORMAT_VERSION:
        raise Reject("Version", version)
    writer = as_bytes32(required(1), "writer")
    kind = code(required(2), "kind", KINDS)
    content_hash = as_bytes32(required(3), "content_hash")
    source_hash = as_bytes32(required(4), "source_hash")
    context_hash = as_bytes32(required(5), "context_hash")
    parents = read_parents(required(6))
    time_ms = as_uint(required(7), "time")
    attribution = code(required(8), "attribution", ATTRIBUTIONS)
    target = as_bytes32(fields[K_TARGET], "target") if K_TARGET in fields else None
    binding = read_binding(fields[K_BINDING]) if K_BINDING in fields else None

    # Step 4: parents strictly ascending by id.
    for (a, _), (b, _) in zip(parents, parents[1:]):
        if a == b:
            raise Reject("DuplicateParent", a.hex())
        if a > b:
            raise Reject("UnsortedParents")
    # Step 5: kind-specific fields, missing before unexpected.
    if kind in TARGET_KINDS and target is None:
        raise Reject("MissingField", "target")
    if kind == KIND_KEYRING and binding is None:
        raise Reject("MissingField", "binding")
    if kind not in TARGET_KINDS and target is not None:
        raise Reject("UnexpectedField", "target")
    if kind != KIND_KEYRING and binding is not None:
        raise Reject("UnexpectedField", "binding")
    # Step 6.
    if binding is not None:
        check_key(binding[0])
    if binding is not None and len(binding[2].encode("utf-8")) > MAX_NAME_BYTES:
        raise Reject("NameTooLong", f"{len(binding[2].encode('utf-8'))} bytes")

    entry = Entry(b"", version, writer, kind, content_hash, source_hash, context_hash,
                  parents, time_ms, attribution, target, binding, payload)
    # Step 7: decode -> re-encode -> compare.
    if encode_payload(entry) != payload:
        raise Reject("NonCanonical", "payload")
    return entry


def read_parents(v: Any) -> list[tuple[bytes, int]]:
    if not isinstance(v, (list, tuple)):
        raise Reject("WrongType", "parents: an array")
    if len(v) > MAX_PARENTS:
        raise Reject("TooManyParents", f"{len(v)}, max {MAX_PARENTS}")
    out = []
    for item in v:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise Reject("WrongType", "parents: an array of [id, weight] pairs")
        pid = as_bytes32(item[0], "parents")
        weight = as_uint(item[1], "parents")
        if weight > MAX_WEIGHT:
            raise Reject("Weight", f"{weight} millionths, want 0..={MAX_WEIGHT}")
        out.append((pid, weight))
    return out


def read_binding(v: Any) -> tuple[bytes, int, str]:
    key = role = name = None
    for k, value in strict_pairs(v, "binding"):
        if k == 1:
            key = as_bytes32(value, "binding.key")
        elif k == 2:
            role = code(value, "binding.role", ROLES)
        elif k == 3:
            if not isinstance(value, str):
                raise Reject("WrongType", "binding.name: a text string")
            name = value
        else:
            raise Reject("UnknownField", f"binding.{k}")
    if key is None:
        raise Reject("MissingField", "binding.key")
    if role is None:
        raise Reject("MissingField", "binding.role")
    if name is None:
        raise Reject("MissingField", "binding.name")
    return key, role, name


def encode_payload(e: Entry) -> bytes:
    """§3.2: the deterministic encoding. Every key is below 24, so cbor2's canonical
    (length-first, RFC 7049) key order equals the RFC 8949 bytewise order here."""
    m: dict[int, Any] = {
        0: e.version, 1: e.writer, 2: e.kind, 3: e.content_hash, 4: e.source_hash,
        5: e.context_hash, 6: [[pid, w] for pid, w in e.parents], 7: e.time_ms,
        8: e.attribution,
    }
    if e.target is not None:
        m[K_TARGET] = e.target
    if e.binding is not None:
        key, role, name = e.binding
        m[K_BINDING] = {1: key, 2: role, 3: name}
    return cbor2.dumps(m, canonical=True)


# ---------------------------------------------------------------------------------------------
# Envelope (§2, §6.2).


def protected_header(kid: bytes) -> bytes:
    return PROTECTED_PREFIX + kid


def sig_structure(protected: bytes, payload: bytes) -> bytes:
    """§2.2: ["Signature1", protected, h'', payload], deterministically encoded."""
    return cbor2.dumps(["Signature1", protected, b"", payload], canonical=True)


def envelope(protected: bytes, payload: bytes, signature: bytes) -> bytes:
    """§2.1 item 6: the deterministic tagged COSE_Sign1."""
    return cbor2.dumps(cbor2.CBORTag(TAG_COSE_SIGN1, [protected, {}, payload, signature]),
                       canonical=True)


def verify(data: bytes) -> Entry:
    """spec/record.md §6.2: decode and verify one entry, or raise Reject."""
    item = decode_one(data)  # steps 1-2
    if not isinstance(item, cbor2.CBORTag) or item.tag != TAG_COSE_SIGN1:  # step 3
        raise Reject("WrongTag")
    content = item.value
    if not isinstance(content, (list, tuple)) or len(content) != 4:  # step 4
        raise Reject("WrongType", "COSE_Sign1: an array of 4 items")
    protected, unprotected, payload, signature = content
    if not all(isinstance(x, bytes) for x in (protected, payload, signature)):
        raise Reject("WrongType", "COSE_Sign1: byte strings for protected, payload, signature")
    if not isinstance(unprotected, Mapping) or len(unprotected) != 0:  # step 5
        raise Reject("UnprotectedHeader")
    if len(protected) != 38 or not protected.startswith(PROTECTED_PREFIX):  # step 6
        raise Reject("BadProtectedHeader")
    kid = protected[len(PROTECTED_PREFIX):]
    if len(signature) != 64:  # step 7
        raise Reject("WrongType", "signature: a 64-byte byte string")
    entry = decode_payload(payload)  # step 8
    if entry.writer != kid:  # step 9
        raise Reject("WriterMismatch")
    if envelope(protected, payload, signature) != data:  # step 10
        raise Reject("NonCanonical", "envelope")
    # step 11: check_key, in the line below
    verify_signature(check_key(kid), kid, sig_structure(protected, payload), signature)
    entry.id = hashlib.sha256(b"\x00" + data).digest()  # step 12
    return entry


# ---------------------------------------------------------------------------------------------
# Keys and Ed25519 signatures (§2.3): the encoding checks of steps 1-6 and the cofactored
# equation of step 8, in plain Python integers (slow: a few ms per signature).

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, -1, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)
IDENTITY = (0, 1)


def decode_point(b: bytes) -> tuple[tuple[int, int] | None, bool]:
    """§2.3 steps 1-2 without rejecting: (point or None, whether `b` is its canonical encoding).
    y is reduced mod p and x = 0 with the sign bit set is accepted; both are non-canonical."""
    raw = int.from_bytes(b, "little")
    y_raw, sign = raw & ((1 << 255) - 1), raw >> 255
    y = y_raw % P
    u, v = (y * y - 1) % P, (D * y * y + 1) % P
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P  # RFC 8032 §5.1.3
    if v * x * x % P == (-u) % P:
        x = x * SQRT_M1 % P
    if v * x * x % P != u:
        return None, False
    canonical = y_raw < P and not (x == 0 and sign == 1)
    if x != 0 and x % 2 != sign:
        x = P - x
    return (x, y), canonical


def point_add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Complete twisted Edwards addition, a = -1 (RFC 8032 §5.1.4, affine form)."""
    (x1, y1), (x2, y2) = a, b
    t = D * x1 * x2 * y1 * y2 % P
    x3 = (x1 * y2 + y1 * x2) * pow(1 + t, -1, P) % P
    y3 = (y1 * y2 + x1 * x2) * pow(1 - t, -1, P) % P
    return x3, y3


def scalar_mult(n: int, pt: tuple[int, int]) -> tuple[int, int]:
    acc = IDENTITY
    while n:
        if n & 1:
            acc = point_add(acc, pt)
        pt = point_add(pt, pt)
        n >>= 1
    return acc


def encode_point(pt: tuple[int, int]) -> bytes:
    x, y = pt
    return (y | (x & 1) << 255).to_bytes(32, "little")


def has_small_order(pt: tuple[int, int]) -> bool:
    return scalar_mult(8, pt) == IDENTITY


BASE = decode_point((4 * pow(5, -1, P) % P).to_bytes(32, "little"))[0]


def check_key(a_bytes: bytes) -> tuple[int, int]:
    """§2.3 steps 1-3: a valid public key (kid or binding key), or Reject."""
    if int.from_bytes(a_bytes, "little") & ((1 << 255) - 1) >= P:  # step 1
        raise Reject("NonCanonicalKey")
    a, _ = decode_point(a_bytes)  # step 2
    if a is None:
        raise Reject("BadKey")
    if has_small_order(a):  # step 3
        raise Reject("WeakKey")
    return a


def verify_signature(a: tuple[int, int], kid: bytes, message: bytes, signature: bytes) -> None:
    """§2.3 steps 4-8 under the key `a` (= kid) that passed check_key."""
    r_bytes, s_bytes = signature[:32], signature[32:]
    s = int.from_bytes(s_bytes, "little")
    if s >= L:  # step 4
        raise Reject("BadSignature")
    r, r_canonical = decode_point(r_bytes)  # step 5
    if r is None or not r_canonical:
        raise Reject("BadSignature")
    if has_small_order(r):  # step 6
        raise Reject("BadSignature")
    k = int.from_bytes(hashlib.sha512(r_bytes + kid + message).digest(), "little") % L  # step 7
    # step 8, cofactored: [8][S]B = [8]R + [8][k]A
    if scalar_mult(8, scalar_mult(s, BASE)) != scalar_mult(8, point_add(r, scalar_mult(k, a))):
        raise Reject("BadSignature")


# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    args = argv[1:]
    as_hex = "--hex" in args
    args = [a for a in args if a != "--hex"]
    if len(args) != 1:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        raw = sys.stdin.buffer.read() if args[0] == "-" else open(args[0], "rb").read()
        data = bytes.fromhex(raw.decode("ascii").strip()) if as_hex else raw
    except (OSError, ValueError, UnicodeDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        entry = verify(data)
    except Reject as r:
        print(f"reject: {r}", file=sys.stderr)
        return 1
    print(json.dumps(entry.to_json(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

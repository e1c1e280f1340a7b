"""Checkpoints and Ed25519 for the independent label-proof verifier (verify_label_proof.py):
C2SP signed notes and verifier keys (spec/log.md §4), RFC 9162 inclusion proofs (spec/log.md
§3.1) and the strict signature check of checkpoints, with the helpers both files share. Written
from the specification alone; not for production use: a conformance aid.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import unicodedata
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import verify_entry as ve

MAX_CHECKPOINT_BYTES = 64 * 1024  # log.md §4.3 step 1

class Reject(Exception):
    """A rule of spec/label-proof.md §4 is broken; `cls` is its class."""

    def __init__(self, cls: str, detail: Any = "") -> None:
        super().__init__(f"{cls}: {detail}" if detail != "" else cls)
        self.cls = cls


def sha256(*parts: bytes) -> bytes:
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.digest()


def b64(s: str, size: int | None = None) -> bytes | None:
    """Canonical base64 (RFC 4648 §4) of exactly `size` bytes, else None."""
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode() != s or (size is not None and len(raw) != size):
        return None
    return raw


def decimal(s: str) -> int | None:
    """Canonical ASCII decimal: no sign, no leading zeroes, below 2^64."""
    if not s.isascii() or not s.isdigit() or (len(s) > 1 and s[0] == "0"):
        return None
    n = int(s)
    return n if n < 1 << 64 else None


# ---------------------------------------------------------------------------------------------
# Ed25519 (spec/record.md §2.3 for entries, spec/log.md §4.3 step 4 for checkpoints).


def ed25519_checks(a_bytes: bytes, sig: bytes) -> tuple[Any, Any]:
    """Steps 1-6 of record.md §2.3 (also what verify_strict checks): the key valid, S < L, R
    canonical and not of small order. Returns (A, R) as points, or raises ValueError."""
    try:
        a = ve.check_key(a_bytes)
    except ve.Reject as e:
        raise ValueError(e.cls) from None
    if len(sig) != 64 or int.from_bytes(sig[32:], "little") >= ve.L:
        raise ValueError("S")
    r, canonical = ve.decode_point(sig[:32])
    if r is None or not canonical or ve.has_small_order(r):
        raise ValueError("R")
    return a, r


def fast_equation(a_bytes: bytes, message: bytes, sig: bytes) -> bool:
    """The cofactorless equation [S]B = R + [k]A through OpenSSL."""
    try:
        Ed25519PublicKey.from_public_bytes(a_bytes).verify(sig, message)
        return True
    except (InvalidSignature, ValueError):
        return False


def verify_strict(a_bytes: bytes, message: bytes, sig: bytes) -> bool:
    """log.md §4.3 step 4: checks 1-6 and the cofactorless equation."""
    try:
        ed25519_checks(a_bytes, sig)
    except ValueError:
        return False
    return fast_equation(a_bytes, message, sig)


# ---------------------------------------------------------------------------------------------
# Checkpoints (spec/log.md §4).


@dataclass
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extension: list[str]


def parse_vkey(vkey: str) -> tuple[str, bytes, bytes]:
    """log.md §4.1: `<name>+<8 hex key id>+<base64(0x01 || key)>`, strictly."""
    parts = vkey.split("+")
    if len(parts) != 3:
        raise ValueError("three +-separated parts")
    name, kid_hex, key_b64 = parts
    raw = b64(key_b64, 33)
    if not valid_name(name) or raw is None or raw[0] != 0x01:
        raise ValueError("name, or base64 of 0x01 || 32-byte key")
    if len(kid_hex) != 8 or kid_hex != kid_hex.lower():
        raise ValueError("8 lowercase hex digits")
    kid = sha256(name.encode() + b"\n\x01" + raw[1:])[:4]
    if kid.hex() != kid_hex:
        raise ValueError("key id does not match the key")
    return name, kid, raw[1:]


def valid_name(name: str) -> bool:
    """log.md §4.1: 1 to 256 bytes, no white space, no `+`, no control characters."""
    b = name.encode()
    return 0 < len(b) <= 256 and "+" not in name and not any(
        c.isspace() or control(c) for c in name
    )


def control(c: str) -> bool:
    """A control character: Unicode general category Cc (C0, DEL and C1)."""
    return unicodedata.category(c) == "Cc"


def verify_checkpoint(note: bytes, vkey: tuple[str, bytes, bytes]) -> Checkpoint:
    """log.md §4.3, every failure as `Checkpoint`."""
    name, kid, key = vkey
    if len(note) > MAX_CHECKPOINT_BYTES:
        raise Reject("Checkpoint", "TooLarge")
    try:
        text = note.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("Checkpoint", "MalformedNote: UTF-8") from None
    if any(control(c) and c != "\n" for c in text):
        raise Reject("Checkpoint", "MalformedNote: control character")
    at = text.rfind("\n\n")
    if at < 0 or not text.endswith("\n"):
        raise Reject("Checkpoint", "MalformedNote: no signature block")
    body, sigs = text[: at + 1], text[at + 2:].split("\n")[:-1]
    if not sigs or len(sigs) > 100:
        raise Reject("Checkpoint", "MalformedNote: signature lines")
    mine = []
    for line in sigs:
        if not line.startswith("\u2014 "):
            raise Reject("Checkpoint", "MalformedNote: signature line")
        parts = line[2:].split(" ")
        raw = b64(parts[-1]) if len(parts) == 2 else None
        if raw is None or len(raw) < 5 or not valid_name(parts[0]):
            raise Reject("Checkpoint", "MalformedNote: signature line")
        if parts[0] == name and raw[:4] == kid:
            mine.append(raw[4:])
    if not mine:
        raise Reject("Checkpoint", "UnknownKey")
    for sig in mine:
        if len(sig) != 64 or not verify_strict(key, body.encode(), sig):
            raise Reject("Checkpoint", "BadSignature")
    lines = body.split("\n")[:-1]
    if len(lines) < 3 or any(line == "" for line in lines):
        raise Reject("Checkpoint", "MalformedBody")
    origin, size, root = lines[0], decimal(lines[1]), b64(lines[2], 32)
    if size is None or root is None:
        raise Reject("Checkpoint", "MalformedBody")
    if origin != name:
        raise Reject("Checkpoint", "OriginMismatch")
    return Checkpoint(origin, size, root, lines[3:])


def node_hash(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01", left, right)


def inclusion_ok(index: int, size: int, leaf: bytes, path: list[bytes], root: bytes) -> str:
    """log.md §3.1 (RFC 9162 §2.1.3.2): '' when it verifies, else the ProofError class."""
    if len(leaf) != 32 or len(root) != 32:
        return "RootMismatch"
    if index >= size:
        return "IndexOutOfRange"
    inner = (index ^ (size - 1)).bit_length()
    if len(path) != inner + bin(index >> inner).count("1"):
        return "WrongPathLength"
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while fn & 1 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return "" if sn == 0 and r == root else "RootMismatch"

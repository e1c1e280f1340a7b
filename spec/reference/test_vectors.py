#!/usr/bin/env python3
"""Runs the independent verifier (verify_entry.py) over the record vectors and mutations.

    python3 spec/reference/test_vectors.py                  # all checks
    python3 spec/reference/test_vectors.py --write DIR      # also write each case to DIR
    python3 spec/reference/test_vectors.py --cbor-seq FILE  # also verify every entry of an
                                                            # RFC 8742 sequence (memlineage export)

1. Every case of tests/vectors/record.json must verify, with the listed id and payload, and
   re-signing its payload with the listed seed must reproduce the entry byte for byte.
2. Every mutated entry must be rejected with the class spec/record.md §7 names. Mutations whose
   name ends in `+resigned` carry a valid signature by the vector's key, so only the rule under
   test can reject them.
3. The command-line verifier must agree (exit 0 and the id, or exit 1 and the class).

4. The cofactored cases (spec/record.md §2.4, tests/vectors/cofactored.json): entries whose R
   or key carries a torsion component, signed with the secret key. They must verify here (the
   cofactored equation) and fail plain RFC 8032 verification (cryptography's, cofactorless),
   and the committed JSON must equal what this script generates (`--write-cofactored` rewrites
   it).

`--write DIR` writes `<case>.cose` files and `manifest.json` ({name, want, desc}), e.g. to run
another implementation over the same cases. Exits non-zero if any check fails.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import cbor2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import verify_entry as ve  # noqa: E402

VECTORS = HERE.parent.parent / "tests" / "vectors" / "record.json"
COFACTORED = HERE.parent.parent / "tests" / "vectors" / "cofactored.json"

# --- hand-written CBOR, so that mutations can break the deterministic encoding on purpose ------


def head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    for ai, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * size):
            return bytes([major << 5 | ai]) + n.to_bytes(size, "big")
    raise ValueError(n)


def uint(n: int) -> bytes:
    return head(0, n)


def bstr(b: bytes) -> bytes:
    return head(2, len(b)) + b


def tstr(s: str) -> bytes:
    return head(3, len(s.encode())) + s.encode()


def arr(items: list[bytes]) -> bytes:
    return head(4, len(items)) + b"".join(items)


def cmap(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return head(5, len(pairs)) + b"".join(k + v for k, v in pairs)


def encode_value(v) -> bytes:
    """Deterministic encoding of the payload values used here (uints, bytes, str, lists)."""
    if isinstance(v, bool) or v is None:
        raise TypeError(v)
    if isinstance(v, int):
        return uint(v)
    if isinstance(v, bytes):
        return bstr(v)
    if isinstance(v, str):
        return tstr(v)
    if isinstance(v, (list, tuple)):
        return arr([encode_value(x) for x in v])
    if isinstance(v, dict):
        return cmap([(uint(k), encode_value(x)) for k, x in sorted(v.items())])
    raise TypeError(v)


def pairs_of(payload: bytes) -> list[tuple[bytes, bytes]]:
    """The payload's (key, value) encodings, in order (decoded with cbor2 alone)."""
    return [(uint(k), encode_value(v)) for k, v in cbor2.loads(payload).items()]


def protected_for(kid: bytes) -> bytes:
    return bytes.fromhex("a20127045820") + kid  # spec/record.md §2.1 item 2


def sig_structure(protected: bytes, payload: bytes) -> bytes:
    # spec/record.md §2.2, written out byte by byte.
    return b"\x84" + tstr("Signature1") + bstr(protected) + b"\x40" + bstr(payload)


def envelope(protected: bytes, payload: bytes, signature: bytes) -> bytes:
    return b"\xd2\x84" + bstr(protected) + b"\xa0" + bstr(payload) + bstr(signature)


def public_key(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()


def sign(seed: bytes, payload: bytes) -> bytes:
    """A COSE_Sign1 over `payload` (whatever its encoding) validly signed by `seed`'s key."""
    sk = Ed25519PrivateKey.from_private_bytes(seed)
    protected = protected_for(public_key(seed))
    return envelope(protected, payload, sk.sign(sig_structure(protected, payload)))


def secret_scalar(seed: bytes) -> int:
    h = hashlib.sha512(seed).digest()  # RFC 8032 §5.1.5
    a = bytearray(h[:32])
    a[0] &= 248
    a[31] &= 127
    a[31] |= 64
    return int.from_bytes(a, "little")


def parts(cose: bytes) -> tuple[bytes, bytes, bytes]:
    t = cbor2.loads(cose)
    protected, _, payload, signature = t.value
    return protected, payload, signature


# --- cases --------------------------------------------------------------------------------------

Case = tuple[str, str, bytes, str]  # name, description, bytes, wanted class


def mutations(vectors: dict) -> list[Case]:
    by_name = {c["name"]: c for c in vectors["cases"]}
    prompt = by_name["prompt"]
    cose = bytes.fromhex(prompt["cose_hex"])
    payload = bytes.fromhex(prompt["payload_hex"])
    seed = bytes.fromhex(prompt["seed_hex"])
    keyring = by_name["keyring"]
    ring_payload = bytes.fromhex(keyring["payload_hex"])
    ring_seed = bytes.fromhex(keyring["seed_hex"])
    summary = by_name["summary-two-parents"]
    sum_payload = bytes.fromhex(summary["payload_hex"])
    sum_seed = bytes.fromhex(summary["seed_hex"])
    tomb = by_name["tombstone"]
    tomb_payload = bytes.fromhex(tomb["payload_hex"])
    protected, _, signature = parts(cose)
    base = pairs_of(payload)
    cases: list[Case] = []

    def add(name: str, desc: str, data: bytes, want: str) -> None:
        cases.append((name, desc, data, want))

    def with_pairs(fn: Callable[[list], None], src: list | None = None) -> bytes:
        p = list(base if src is None else src)
        fn(p)
        return cmap(p)

    def flip(data: bytes, index: int, bit: int = 0) -> bytes:
        b = bytearray(data)
        b[index] ^= 1 << bit
        return bytes(b)

    # Size and scan (§6.2 steps 1-2, §6.1).
    add("trailing-byte", "one 0x00 after the entry", cose + b"\x00", "TrailingBytes")
    add("truncated", "last byte removed", cose[:-1], "Truncated")
    add("empty", "no bytes at all", b"", "Truncated")
    add("too-large", "65 537 bytes", cose + bytes(65_537 - len(cose)), "TooLarge")
    # Envelope (§6.2 steps 3-7).
    add("untagged", "COSE_Sign1 without tag 18", cose[1:], "WrongTag")
    add("tag-98", "tag 98 (COSE_Sign) instead of 18", b"\xd8\x62" + cose[1:], "WrongTag")
    add("self-described", "tag 55799 around tag 18", b"\xd9\xd9\xf7" + cose, "WrongTag")
    add("array-of-3", "COSE_Sign1 array of 3 items",
        b"\xd2\x83" + bstr(protected) + b"\xa0" + bstr(payload), "WrongType")
    add("unprotected-kid", "kid in the unprotected header",
        b"\xd2\x84" + bstr(protected) + cmap([(uint(4), bstr(b"\x01"))]) + bstr(payload)
        + bstr(signature), "UnprotectedHeader")
    alg = bytes.fromhex("a20126045820") + protected[6:]
    add("alg-es256", "alg -7 (ES256) instead of -8", envelope(alg, payload, signature),
        "BadProtectedHeader")
    swapped = bytes.fromhex("a2045820") + protected[6:] + bytes.fromhex("0127")
    add("protected-unsorted", "protected header {4: kid, 1: -8}",
        envelope(swapped, payload, signature), "BadProtectedHeader")
    add("signature-63-bytes", "63-byte signature", envelope(protected, payload, signature[:63]),
        "WrongType")
    long_protected = (b"\xd2\x84\x59\x00\x26" + protected + b"\xa0" + bstr(payload)
                      + bstr(signature))
    add("protected-long-length", "protected bstr length as 59 0026 (signature still valid)",
        long_protected, "NonShortest")
    add("tag-long-form", "tag 18 as d8 12", b"\xd8\x12" + cose[1:], "NonShortest")
    add("huge-array", "array declaring 2^64 - 1 items", b"\x9b" + b"\xff" * 8, "Truncated")
    add("stray-break", "a break code after the tag", b"\xd2\xff", "Malformed")
    add("reserved-ai", "additional information 28", b"\xd2\x9c", "Malformed")
    # Signature (§2.3).
    add("signature-bit-flip", "bit 0 of signature byte 10 flipped",
        envelope(protected, payload, flip(signature, 10)), "BadSignature")
    add("payload-bit-flip", "attribution 0 -> 1, not re-signed",
        envelope(protected, flip(payload, len(payload) - 1), signature), "BadSignature")
    s = int.from_bytes(signature[32:], "little") + ve.L
    add("s-plus-l", "S + L: the same signature, malleated",
        envelope(protected, payload, signature[:32] + s.to_bytes(32, "little")), "BadSignature")
    # A signature with the small-order R = identity: valid for the cofactorless equation when
    # S = k*a, so plain RFC 8032 verification accepts it.
    ident = ve.encode_point(ve.IDENTITY)
    k = int.from_bytes(hashlib.sha512(ident + public_key(seed)
                                      + sig_structure(protected, payload)).digest(), "little")
    small_r = ident + (k * secret_scalar(seed) % ve.L).to_bytes(32, "little")
    add("small-order-r", "R = identity, S = k*a: verifies under plain RFC 8032",
        envelope(protected, payload, small_r), "BadSignature")
    # The same forgery with R = a non-canonical encoding of a small-order point: the
    # cofactored equation alone accepts each ([8]R = identity), so step 5 (y < p, not x = 0
    # with the sign bit set) is what rejects them.
    for name, r_enc in (("small-order-r-y-p-plus-1", (ve.P + 1).to_bytes(32, "little")),
                        ("small-order-r-y-p", (ve.P).to_bytes(32, "little")),
                        ("small-order-r-negative-zero", (1 | 1 << 255).to_bytes(32, "little"))):
        k_r = int.from_bytes(hashlib.sha512(r_enc + public_key(seed)
                                            + sig_structure(protected, payload)).digest(), "little")
        forged = r_enc + (k_r * secret_scalar(seed) % ve.L).to_bytes(32, "little")
        add(name, "R = non-canonical small-order encoding, S = k*a",
            envelope(protected, payload, forged), "BadSignature")
    # A signature under the small-order key A = identity: R = [r]B, S = r verifies any message.
    r = 0x1234567890ABCDEF
    forged_payload = with_pairs(lambda p: p.__setitem__(1, (uint(1), bstr(ident))))
    forged_protected = protected_for(ident)
    forged_sig = ve.encode_point(ve.scalar_mult(r, ve.BASE)) + r.to_bytes(32, "little")
    add("small-order-key", "kid = identity; R = [r]B, S = r: verifies under plain RFC 8032",
        envelope(forged_protected, forged_payload, forged_sig), "WeakKey")
    off_curve = (2).to_bytes(32, "little")
    add("kid-not-a-point", "kid with y = 2 (no x exists)",
        envelope(protected_for(off_curve),
                 with_pairs(lambda p: p.__setitem__(1, (uint(1), bstr(off_curve)))), signature),
        "BadKey")
    non_canonical = (ve.P + 3).to_bytes(32, "little")
    add("kid-non-canonical", "kid with y = p + 3 (decodes to a point of large order)",
        envelope(protected_for(non_canonical),
                 with_pairs(lambda p: p.__setitem__(1, (uint(1), bstr(non_canonical)))),
                 signature), "NonCanonicalKey")
    for name, desc, kid in (
            ("kid-y-p-plus-2", "kid with y = p + 2: non-canonical before not-a-point",
             (ve.P + 2).to_bytes(32, "little")),
            ("kid-negative-zero", "kid = identity with the sign bit set (x = 0, x_0 = 1)",
             (1 | 1 << 255).to_bytes(32, "little"))):
        add(name, desc, envelope(protected_for(kid), with_pairs(
            lambda p, kid=kid: p.__setitem__(1, (uint(1), bstr(kid)))), signature),
            "NonCanonicalKey" if name.endswith("p-plus-2") else "WeakKey")
    other = bytes([0x02] * 32)
    add("writer-mismatch+resigned", "payload writer = key 01, signed by key 02",
        sign(other, payload), "WriterMismatch")
    # Payload scan (§6.1) and encoding (§6.3 step 7), each validly signed.
    add("non-shortest-int+resigned", "version 1 written as 18 01",
        sign(seed, payload[:2] + b"\x18\x01" + payload[3:]), "NonShortest")
    add("non-shortest-int", "version 1 written as 18 01, not re-signed",
        envelope(protected, payload[:2] + b"\x18\x01" + payload[3:], signature), "NonShortest")
    add("indefinite-map+resigned", "payload map as bf ... ff",
        sign(seed, b"\xbf" + payload[1:] + b"\xff"), "IndefiniteLength")
    add("long-map-length+resigned", "map(9) written as b8 09",
        sign(seed, b"\xb8\x09" + payload[1:]), "NonShortest")
    add("indefinite-bstr+resigned", "content_hash as an indefinite byte string",
        sign(seed, with_pairs(lambda p: p.__setitem__(
            3, (uint(3), b"\x5f" + bstr(cbor2.loads(payload)[3]) + b"\xff")))), "IndefiniteLength")
    add("bignum-time+resigned", "time_ms as tag 2 bignum",
        sign(seed, with_pairs(lambda p: p.__setitem__(
            7, (uint(7), b"\xc2" + bstr(cbor2.loads(payload)[7].to_bytes(8, "big")))))),
        "NonCanonical")
    add("simple-value+resigned", "attribution as simple value 32 (f8 20)",
        sign(seed, with_pairs(lambda p: p.__setitem__(8, (uint(8), b"\xf8\x20")))),
        "UnsupportedSimple")
    add("invalid-utf8-name+resigned", "binding name with the byte c3 alone",
        sign(ring_seed, ring_payload[:-6] + b"\x65\x61\x67\xc3\x6e\x74"), "Malformed")

    def nested(depth: int) -> bytes:  # parents = [[…[0]…]]: `depth` arrays inside the map
        return arr([nested(depth - 1)]) if depth > 1 else arr([uint(0)])

    add("too-deep+resigned", "8 nested non-empty containers (map, then 7 arrays)",
        sign(seed, with_pairs(lambda p: p.__setitem__(6, (uint(6), nested(7))))), "TooDeep")
    add("nesting-7+resigned", "7 nested containers pass the scan; the parent is not a pair",
        sign(seed, with_pairs(lambda p: p.__setitem__(6, (uint(6), nested(6))))), "WrongType")
    # Payload structure (§6.3 steps 2-6), each validly signed.
    add("unsorted-keys+resigned", "fields 1 and 2 swapped",
        sign(seed, with_pairs(lambda p: p.__setitem__(slice(1, 3), [p[2], p[1]]))),
        "UnsortedKeys")
    add("duplicate-key+resigned", "field 2 twice",
        sign(seed, with_pairs(lambda p: p.insert(3, p[2]))), "DuplicateKey")
    add("unknown-field+resigned", "field 11 added",
        sign(seed, with_pairs(lambda p: p.append((uint(11), uint(0))))), "UnknownField")
    add("text-key+resigned", "a text key first",
        sign(seed, with_pairs(lambda p: p.insert(0, (tstr("v"), uint(1))))), "UnknownField")
    add("negative-key+resigned", "key -1 appended",
        sign(seed, with_pairs(lambda p: p.append((b"\x20", uint(0))))), "UnknownField")
    add("missing-time+resigned", "field 7 removed",
        sign(seed, with_pairs(lambda p: p.pop(7))), "MissingField")
    add("float-time+resigned", "time_ms as the float 1.0",
        sign(seed, with_pairs(lambda p: p.__setitem__(7, (uint(7), b"\xf9\x3c\x00")))),
        "Float")
    add("bool-version+resigned", "version as true",
        sign(seed, with_pairs(lambda p: p.__setitem__(0, (uint(0), b"\xf5")))),
        "UnsupportedSimple")
    add("tagged-time+resigned", "time_ms wrapped in tag 1 (epoch time)",
        sign(seed, with_pairs(lambda p: p.__setitem__(7, (uint(7), b"\xc1" + p[7][1])))),
        "WrongType")
    add("short-hash+resigned", "content_hash of 31 bytes",
        sign(seed, with_pairs(lambda p: p.__setitem__(3, (uint(3), bstr(bytes(31)))))),
        "WrongType")
    add("payload-array+resigned", "payload is an array",
        sign(seed, arr([uint(1)])), "WrongType")
    add("version-2+resigned", "version 2",
        sign(seed, with_pairs(lambda p: p.__setitem__(0, (uint(0), uint(2))))), "Version")
    add("unknown-kind+resigned", "kind 99",
        sign(seed, with_pairs(lambda p: p.__setitem__(2, (uint(2), uint(99))))), "UnknownCode")
    add("private-use-kind+resigned", "kind 256 (private use)",
        sign(seed, with_pairs(lambda p: p.__setitem__(2, (uint(2), uint(256))))),
        "UnknownCode")
    add("unknown-attribution+resigned", "attribution 4",
        sign(seed, with_pairs(lambda p: p.__setitem__(8, (uint(8), uint(4))))), "UnknownCode")
    add("prompt-with-target+resigned", "field 9 on a prompt",
        sign(seed, with_pairs(lambda p: p.append((uint(9), bstr(bytes(32)))))),
        "UnexpectedField")
    tomb_pairs = pairs_of(tomb_payload)
    add("tombstone-without-target+resigned", "field 9 removed from the tombstone",
        sign(seed, with_pairs(lambda p: p.pop(9), tomb_pairs)), "MissingField")
    parent = lambda b, w: arr([bstr(bytes([b]) * 32), uint(w)])  # noqa: E731
    sum_pairs = pairs_of(sum_payload)
    add("weight-over-one+resigned", "weight 1 000 001",
        sign(sum_seed, with_pairs(lambda p: p.__setitem__(
            6, (uint(6), arr([parent(1, 1_000_001)]))), sum_pairs)), "Weight")
    add("unsorted-parents+resigned", "parents [02…, 01…]",
        sign(sum_seed, with_pairs(lambda p: p.__setitem__(
            6, (uint(6), arr([parent(2, 5), parent(1, 5)]))), sum_pairs)), "UnsortedParents")
    add("duplicate-parents+resigned", "parents [02…, 02…]",
        sign(sum_seed, with_pairs(lambda p: p.__setitem__(
            6, (uint(6), arr([parent(2, 5), parent(2, 6)]))), sum_pairs)), "DuplicateParent")
    add("parent-triple+resigned", "a parent [id, weight, 0]",
        sign(sum_seed, with_pairs(lambda p: p.__setitem__(
            6, (uint(6), arr([arr([bstr(bytes(32)), uint(1), uint(0)])]))), sum_pairs)),
        "WrongType")
    many = [arr([bstr(i.to_bytes(32, "big")), uint(1)]) for i in range(1025)]
    add("too-many-parents+resigned", "1025 parents",
        sign(sum_seed, with_pairs(lambda p: p.__setitem__(6, (uint(6), arr(many))), sum_pairs)),
        "TooManyParents")
    ring_pairs = pairs_of(ring_payload)
    ring = cbor2.loads(ring_payload)[10]

    def binding(pairs: list[tuple[bytes, bytes]]) -> bytes:
        return sign(ring_seed, with_pairs(lambda p: p.__setitem__(9, (uint(10), cmap(pairs))),
                                          ring_pairs))

    key, role, name = (uint(1), bstr(ring[1])), (uint(2), uint(ring[2])), (uint(3), tstr(ring[3]))
    add("name-too-long+resigned", "binding name of 257 bytes",
        binding([key, role, (uint(3), tstr("a" * 257))]), "NameTooLong")
    add("name-256+resigned", "binding name of 256 bytes: valid, but not the vector",
        binding([key, role, (uint(3), tstr("é" * 128))]), "")
    add("binding-weak-key+resigned", "binding of the identity key (small order)",
        binding([(uint(1), bstr(ident)), role, name]), "WeakKey")
    add("binding-non-canonical-key+resigned", "binding key with y = p + 3",
        binding([(uint(1), bstr(non_canonical)), role, name]), "NonCanonicalKey")
    add("binding-not-a-point+resigned", "binding key with y = 2",
        binding([(uint(1), bstr(off_curve)), role, name]), "BadKey")
    add("unknown-role+resigned", "binding role 9", binding([key, (uint(2), uint(9)), name]),
        "UnknownCode")
    add("binding-missing-name+resigned", "binding without key 3", binding([key, role]),
        "MissingField")
    add("binding-duplicate-key+resigned", "binding key 2 twice",
        binding([key, role, role, name]), "DuplicateKey")
    add("binding-key-0+resigned", "binding with a key 0", binding([(uint(0), uint(0)), key, role,
                                                                  name]), "UnknownField")
    add("binding-on-prompt+resigned", "field 10 on a prompt",
        sign(seed, with_pairs(lambda p: p.append((uint(10), cmap([key, role, name]))))),
        "UnexpectedField")
    return cases


def plain_rfc8032_accepts(data: bytes) -> bool:
    """Whether cryptography's (OpenSSL's) plain, cofactorless Ed25519 verify accepts the entry's
    signature under its kid."""
    protected, payload, signature = parts(data)
    try:
        Ed25519PublicKey.from_public_bytes(protected[6:]).verify(
            signature, sig_structure(protected, payload))
        return True
    except Exception:  # noqa: BLE001
        return False


def cofactored_cases(vectors: dict) -> list[dict]:
    """Entries that only the cofactored equation accepts (spec/record.md §2.4): R = [r]B + T, or
    the key A = [a]B + T, with T of order 8, each signed with the secret scalar."""
    prompt = {c["name"]: c for c in vectors["cases"]}["prompt"]
    payload = bytes.fromhex(prompt["payload_hex"])
    seed = bytes.fromhex(prompt["seed_hex"])
    a = secret_scalar(seed)
    t8 = ve.decode_point(bytes.fromhex(
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"))[0]
    assert ve.scalar_mult(4, t8) != ve.IDENTITY and ve.has_small_order(t8)  # order 8

    def signed(kid: bytes, body: bytes, torsion_in_r: bool) -> bytes:
        protected = protected_for(kid)
        msg = sig_structure(protected, body)
        for r in range(0x5EED, 0x5EED + 64):  # the first r whose k is not 0 mod 8
            pt = ve.scalar_mult(r, ve.BASE)
            r_bytes = ve.encode_point(ve.point_add(pt, t8) if torsion_in_r else pt)
            k = int.from_bytes(hashlib.sha512(r_bytes + kid + msg).digest(), "little") % ve.L
            if k % 8:
                s = (r + k * a) % ve.L
                return envelope(protected, body, r_bytes + s.to_bytes(32, "little"))
        raise AssertionError("no r found")

    mixed_key = ve.encode_point(ve.point_add(ve.scalar_mult(a, ve.BASE), t8))
    pairs = pairs_of(payload)
    pairs[1] = (uint(1), bstr(mixed_key))
    key_body = cmap(pairs)
    out = []
    for name, desc, data in [
        ("mixed-order-r", "R = [r]B + T8, S = r + k*a: the prompt vector's key", signed(
            public_key(seed), payload, True)),
        ("mixed-order-key", "kid A = [a]B + T8, R = [r]B, S = r + k*a", signed(
            mixed_key, key_body, False)),
    ]:
        out.append({"name": name, "desc": desc, "cose_hex": data.hex(),
                    "id_hex": hashlib.sha256(b"\x00" + data).hexdigest(),
                    "cofactored": "accept", "cofactorless": "reject"})
    return out


def check_cofactored(cases: list[dict], write: bool, fail: Callable[[str], None]) -> int:
    text = json.dumps({"source": "spec/reference/test_vectors.py --write-cofactored",
                       "cases": cases}, indent=1) + "\n"
    if write:
        COFACTORED.write_text(text)
    elif COFACTORED.read_text() != text:
        fail(f"{COFACTORED.name} differs from what this script generates")
    n = 0
    for c in cases:
        data = bytes.fromhex(c["cose_hex"])
        try:
            ve.verify(data)
        except ve.Reject as r:
            fail(f"cofactored {c['name']}: rejected: {r}")
            continue
        if plain_rfc8032_accepts(data):
            fail(f"cofactored {c['name']}: plain RFC 8032 (cofactorless) accepts it too")
            continue
        print(f"ok   cofactored {c['name']:<30} accepted; cofactorless rejects")
        n += 1
    return n


# --- running -------------------------------------------------------------------------------------


def run_cli(data: bytes) -> tuple[int, str, str]:
    with tempfile.NamedTemporaryFile(suffix=".cose") as f:
        f.write(data)
        f.flush()
        p = subprocess.run([sys.executable, str(HERE / "verify_entry.py"), f.name],
                           capture_output=True, text=True, check=False)
    return p.returncode, p.stdout, p.stderr


def check_vectors(vectors: dict, fail: Callable[[str], None]) -> int:
    n = 0
    for case in vectors["cases"]:
        name = case["name"]
        cose = bytes.fromhex(case["cose_hex"])
        try:
            e = ve.verify(cose)
        except ve.Reject as r:
            fail(f"vector {name}: rejected: {r}")
            continue
        if e.id.hex() != case["id_hex"]:
            fail(f"vector {name}: id {e.id.hex()}, want {case['id_hex']}")
        if e.payload.hex() != case["payload_hex"]:
            fail(f"vector {name}: payload differs")
        if ve.encode_payload(e) != e.payload:
            fail(f"vector {name}: payload does not re-encode to itself")
        seed = bytes.fromhex(case["seed_hex"])
        if sign(seed, e.payload) != cose:
            fail(f"vector {name}: re-signing with the seed does not reproduce the entry")
        code, out, err = run_cli(cose)
        if code != 0 or json.loads(out)["id"] != case["id_hex"]:
            fail(f"vector {name}: CLI exit {code}: {err.strip()}")
        print(f"ok   vector {name:<34} id {e.id.hex()[:16]}… kind {ve.KINDS[e.kind]}")
        n += 1
    return n


def check_mutations(cases: list[Case], fail: Callable[[str], None]) -> int:
    n = 0
    for name, desc, data, want in cases:
        try:
            ve.verify(data)
            got = ""
        except ve.Reject as r:
            got = r.cls
        if got != want:
            fail(f"mutation {name} ({desc}): got {got or 'accepted'}, want {want or 'accepted'}")
            continue
        code, _, err = run_cli(data)
        cli_got = err.split(":")[1].strip() if code == 1 else ""
        if (code, cli_got) != ((1, want) if want else (0, "")):
            fail(f"mutation {name}: CLI exit {code}: {err.strip()}")
            continue
        print(f"ok   {name:<41} {want or 'accepted'}")
        n += 1
    return n


def check_plain_rfc8032_accepts_forgeries(cases: list[Case], fail: Callable[[str], None]) -> None:
    """The small-order cases verify under cryptography's (OpenSSL's) plain Ed25519: the checks
    of spec/record.md §2.3 steps 2-4 are what reject them."""
    for name, _, data, _ in cases:
        if name not in ("small-order-key", "small-order-r"):
            continue
        if plain_rfc8032_accepts(data):
            print(f"note {name}: plain RFC 8032 verification (cryptography) accepts it")
        else:
            print(f"note {name}: cryptography already rejects it")


def check_cbor_seq(path: Path, fail: Callable[[str], None]) -> int:
    """Verifies every entry of an RFC 8742 CBOR sequence (e.g. `memlineage export`)."""
    data = path.read_bytes()
    pos, n, ids = 0, 0, set()
    while pos < len(data):
        end = skip_item(data, pos)
        try:
            e = ve.verify(data[pos:end])
            if e.id in ids:
                fail(f"{path}: entry {n} duplicates an earlier id")
            ids.add(e.id)
        except ve.Reject as r:
            fail(f"{path}: entry {n} at byte {pos}: {r}")
        pos, n = end, n + 1
    print(f"ok   {n} entries of {path} verify")
    return n


def skip_item(data: bytes, pos: int) -> int:
    """The position after the CBOR item at `pos` (definite lengths, as memlineage writes)."""
    major, n, pos = ve.read_head(data, pos)
    if major in (2, 3):
        return pos + n
    if major == 4:
        for _ in range(n):
            pos = skip_item(data, pos)
    elif major == 5:
        for _ in range(2 * n):
            pos = skip_item(data, pos)
    elif major == 6:
        pos = skip_item(data, pos)
    return pos


def main(argv: list[str]) -> int:
    failures: list[str] = []

    def fail(msg: str) -> None:
        failures.append(msg)
        print(f"FAIL {msg}")

    vectors = json.loads(VECTORS.read_text())
    cases = mutations(vectors)
    if "--write" in argv:
        out = Path(argv[argv.index("--write") + 1])
        out.mkdir(parents=True, exist_ok=True)
        for name, _, data, _ in cases:
            (out / f"{name}.cose").write_bytes(data)
        (out / "manifest.json").write_text(json.dumps(
            [{"name": n, "want": w, "desc": d} for n, d, _, w in cases], indent=1) + "\n")
    n_vec = check_vectors(vectors, fail)
    n_mut = check_mutations(cases, fail)
    check_plain_rfc8032_accepts_forgeries(cases, fail)
    cof = cofactored_cases(vectors)
    n_cof = check_cofactored(cof, "--write-cofactored" in argv, fail)
    n_seq = 0
    if "--cbor-seq" in argv:
        n_seq = check_cbor_seq(Path(argv[argv.index("--cbor-seq") + 1]), fail)
    print(f"\n{n_vec}/{len(vectors['cases'])} vectors, {n_mut}/{len(cases)} mutations, "
          f"{n_cof}/{len(cof)} cofactored"
          + (f", {n_seq} exported entries" if n_seq else "")
          + f": {'FAILED' if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Lists the public surface of the memlineage library from rustdoc's JSON output, one item a
line, sorted: what `cargo public-api` shows, without needing it (spec/public-api.txt).

Usage: scripts/public_api.sh (builds the JSON with nightly rustdoc, then runs this), or
  python3 scripts/public_api.py target/doc/memlineage.json > spec/public-api.txt

Lines: `pub mod`, `pub use` (re-exports, with what they name), `pub fn` (with argument and
return types), `pub struct` and its public fields, `pub enum` and its variants (marked
`#[non_exhaustive]` where they are), `pub trait` and its items, `pub const`, `pub type`, and
the trait implementations of each public type (auto traits and blanket implementations left
out). Methods are listed under the type that has them."""
import json
import sys

D = json.load(open(sys.argv[1]))
INDEX = D["index"]


def item(i):
    return INDEX.get(str(i))


def kind(it):
    return next(iter(it["inner"]))


def args_of(a):
    if not a:
        return ""
    if "angle_bracketed" in a:
        parts = []
        for x in a["angle_bracketed"]["args"]:
            if "type" in x:
                parts.append(ty(x["type"]))
            elif "lifetime" in x:
                parts.append(x["lifetime"])
            elif "const" in x:
                parts.append(str(x["const"].get("expr", "_")))
        for c in a["angle_bracketed"].get("constraints", []):
            b = c.get("binding", {})
            if "equality" in b and "type" in b["equality"]:
                parts.append(f"{c['name']} = {ty(b['equality']['type'])}")
            else:
                parts.append(c["name"])
        return "<" + ", ".join(parts) + ">" if parts else ""
    if "parenthesized" in a:
        p = a["parenthesized"]
        out = "(" + ", ".join(ty(t) for t in p["inputs"]) + ")"
        if p.get("output"):
            out += " -> " + ty(p["output"])
        return out
    return ""


def bound(b):
    if "trait_bound" in b:
        t = b["trait_bound"]["trait"]
        m = "?" if b["trait_bound"].get("modifier") == "maybe" else ""
        return m + t["path"] + args_of(t.get("args"))
    if "outlives" in b:
        return b["outlives"]
    return "_"


def ty(t):
    if t is None:
        return "()"
    k = next(iter(t))
    v = t[k]
    if k == "resolved_path":
        return v["path"] + args_of(v.get("args"))
    if k == "primitive":
        return v
    if k == "generic":
        return v
    if k == "borrowed_ref":
        lt = (v["lifetime"] + " ") if v.get("lifetime") else ""
        return "&" + lt + ("mut " if v["is_mutable"] else "") + ty(v["type"])
    if k == "raw_pointer":
        return ("*mut " if v["is_mutable"] else "*const ") + ty(v["type"])
    if k == "tuple":
        return "(" + ", ".join(ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if k == "slice":
        return "[" + ty(v) + "]"
    if k == "array":
        return "[" + ty(v["type"]) + "; " + str(v["len"]) + "]"
    if k == "impl_trait":
        return "impl " + " + ".join(bound(b) for b in v)
    if k == "dyn_trait":
        parts = [p["trait"]["path"] + args_of(p["trait"].get("args")) for p in v["traits"]]
        if v.get("lifetime"):
            parts.append(v["lifetime"])
        return "dyn " + " + ".join(parts)
    if k == "qualified_path":
        tr = v.get("trait")
        if tr:
            return f"<{ty(v['self_type'])} as {tr['path']}>::{v['name']}"
        return f"{ty(v['self_type'])}::{v['name']}"
    if k == "function_pointer":
        s = v["sig"]
        out = "fn(" + ", ".join(ty(a[1]) for a in s["inputs"]) + ")"
        return out + (" -> " + ty(s["output"]) if s.get("output") else "")
    if k == "infer":
        return "_"
    return k


def generics(g):
    names = []
    for p in g.get("params", []):
        pk = p["kind"]
        if "lifetime" in pk:
            names.append(p["name"])
        elif "type" in pk:
            if pk["type"].get("is_synthetic"):
                continue
            bs = pk["type"].get("bounds", [])
            names.append(p["name"] + (": " + " + ".join(bound(b) for b in bs) if bs else ""))
        elif "const" in pk:
            names.append("const " + p["name"] + ": " + ty(pk["const"]["type"]))
    return "<" + ", ".join(names) + ">" if names else ""


def fn_sig(name, f):
    h = f["header"]
    pre = ("const " if h.get("is_const") else "") + ("async " if h.get("is_async") else "")
    pre += "unsafe " if h.get("is_unsafe") else ""
    args = []
    for n, t in f["sig"]["inputs"]:
        if n == "self":
            args.append(ty(t).replace("Self", "self") if t.get("generic") != "Self" else "self")
        else:
            args.append(f"{n}: {ty(t)}")
    out = f"{pre}fn {name}{generics(f['generics'])}({', '.join(args)})"
    if f["sig"].get("output"):
        out += " -> " + ty(f["sig"]["output"])
    return out


def non_exhaustive(it):
    return any("non_exhaustive" in json.dumps(a) for a in it.get("attrs", []))


LINES = set()
SEEN = set()


def emit(line):
    LINES.add(line)


def impls_of(path, impl_ids):
    for iid in impl_ids:
        im = item(iid)
        if im is None:
            continue
        imp = im["inner"]["impl"]
        if imp.get("is_synthetic") or imp.get("blanket_impl"):
            continue
        tr = imp.get("trait")
        if tr:
            emit(f"impl {tr['path']}{args_of(tr.get('args'))} for {path}")
            continue
        for mid in imp["items"]:
            m = item(mid)
            if m is None or m.get("visibility") != "public":
                continue
            mk = kind(m)
            if mk == "function":
                emit(f"pub {fn_sig(path + '::' + m['name'], m['inner']['function'])}")
            elif mk == "assoc_const":
                emit(f"pub const {path}::{m['name']}: {ty(m['inner']['assoc_const']['type'])}")


def describe(path, it):
    k = kind(it)
    v = it["inner"][k]
    ne = "#[non_exhaustive] " if non_exhaustive(it) else ""
    if k == "function":
        emit(f"pub {fn_sig(path, v)}")
    elif k == "struct":
        emit(f"{ne}pub struct {path}{generics(v['generics'])}")
        sk = v["kind"]
        fields = sk.get("plain", {}).get("fields", []) if isinstance(sk, dict) else []
        if isinstance(sk, dict) and "tuple" in sk:
            fields = [f for f in sk["tuple"] if f is not None]
        for fid in fields:
            f = item(fid)
            if f and f.get("visibility") == "public":
                emit(f"pub {path}.{f['name']}: {ty(f['inner']['struct_field'])}")
        impls_of(path, v.get("impls", []))
    elif k == "enum":
        emit(f"{ne}pub enum {path}{generics(v['generics'])}")
        for vid in v["variants"]:
            var = item(vid)
            if var:
                vne = "#[non_exhaustive] " if non_exhaustive(var) else ""
                emit(f"{vne}{path}::{var['name']}")
        impls_of(path, v.get("impls", []))
    elif k == "trait":
        emit(f"pub trait {path}{generics(v['generics'])}")
        for mid in v["items"]:
            m = item(mid)
            if m and kind(m) == "function":
                emit(f"{fn_sig(path + '::' + m['name'], m['inner']['function'])}")
            elif m:
                emit(f"{kind(m)} {path}::{m['name']}")
    elif k == "constant":
        emit(f"pub const {path}: {ty(v['type'])}")
    elif k == "static":
        emit(f"pub static {path}: {ty(v['type'])}")
    elif k == "type_alias":
        emit(f"pub type {path}{generics(v['generics'])} = {ty(v['type'])}")
    elif k == "macro":
        emit(f"macro {path}!")
    else:
        emit(f"{k} {path}")


def walk(mid, path, uses):
    m = item(mid)
    emit(f"pub mod {path}")
    for cid in m["inner"]["module"]["items"]:
        c = item(cid)
        if c is None or c.get("visibility") != "public":
            continue
        k = kind(c)
        if k == "module":
            walk(cid, f"{path}::{c['name']}", uses)
        elif k == "use":
            uses.append((path, c["inner"]["use"]))
        elif k != "impl":
            SEEN.add(str(cid))
            describe(f"{path}::{c['name']}", c)


uses = []
walk(D["root"], item(D["root"])["name"], uses)
# Re-exports: named, and the item spelt out where no public module path reaches it.
while uses:
    path, u = uses.pop(0)
    target = item(u["id"]) if u.get("id") is not None else None
    if u["is_glob"]:
        emit(f"pub use {path}::* (= {u['source']}::*)")
        if target and kind(target) == "module":
            for cid in target["inner"]["module"]["items"]:
                c = item(cid)
                if c and c.get("visibility") == "public" and kind(c) not in ("impl", "use"):
                    if str(cid) not in SEEN:
                        SEEN.add(str(cid))
                        describe(f"{path}::{c['name']}", c)
        continue
    emit(f"pub use {path}::{u['name']} (= {u['source']})")
    if target and str(u["id"]) not in SEEN and kind(target) not in ("module", "use"):
        SEEN.add(str(u["id"]))
        describe(f"{path}::{u['name']}", target)

def order(line):
    """Sort key: the item's path, so that a type's fields, variants, methods and
    implementations follow it."""
    if line.startswith("impl "):
        return (line.rsplit(" for ", 1)[1], 2, line)
    at = line.find("memlineage")
    rest = line[at:]
    end = min([i for i in (rest.find("("), rest.find("<"), rest.find(" "), rest.find(": "))
               if i >= 0] or [len(rest)])
    return (rest[:end].replace(".", "::"), 1, line)


print("\n".join(sorted((x for x in LINES if "StructuralPartialEq" not in x), key=order)))

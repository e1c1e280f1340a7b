"""Shared fixtures: ledgers in a temporary directory, the Rust CLI binary."""

import hashlib
import os
import pathlib

import pytest

import memlineage

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def state_home(tmp_path, monkeypatch):
    """Every test's default state directories (the pin and session records of a file ledger,
    spec/python.md §3.2) under its own temporary `XDG_STATE_HOME`, not the user's."""
    home = tmp_path / "state-home"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@pytest.fixture
def ledger_path(tmp_path):
    return tmp_path / "agent.db"


@pytest.fixture
def ledger(ledger_path):
    return memlineage.Ledger.create(ledger_path)


@pytest.fixture
def cli():
    """The `memlineage` binary cargo built (MEMLINEAGE_BIN, else target/debug/memlineage)."""
    path = pathlib.Path(os.environ.get("MEMLINEAGE_BIN", REPO / "target" / "debug" / "memlineage"))
    if not path.is_file():
        pytest.fail(f"no memlineage binary at {path}: run `cargo build --bin memlineage` first")
    return path


def hashed_embedding(texts, dims=64):
    """A deterministic local embedding for tests (no model, no network): each lower-cased
    word adds 1 to the component its SHA-256 picks, so texts sharing words are similar.
    LangGraph's `index["embed"]` accepts such a function."""
    out = []
    for text in texts:
        v = [0.0] * dims
        for word in text.lower().replace(",", " ").replace(".", " ").split():
            v[int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big") % dims] += 1.0
        out.append(v)
    return out


@pytest.fixture
def index():
    """A LangGraph `IndexConfig` over `hashed_embedding`, embedding the `text` field."""
    return {"dims": 64, "embed": hashed_embedding, "fields": ["text"]}

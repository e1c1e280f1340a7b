"""Shared fixtures: ledgers in a temporary directory, the Rust CLI binary."""

import os
import pathlib

import pytest

import memlineage

REPO = pathlib.Path(__file__).resolve().parents[2]


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

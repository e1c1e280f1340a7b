#!/usr/bin/env bash
# The explorer's browser tests (spec/explorer.md §6): installs the pinned playwright-core from
# the committed lock into target/explorer-browser, then drives Debian's /usr/bin/chromium
# (apt-get install chromium) against the debug binary `cargo build` made.
# Usage: bash tests/browser/run.sh            (from anywhere; SCREENSHOT=PATH also saves a PNG)
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p target/explorer-browser
cp tests/browser/package.json tests/browser/package-lock.json target/explorer-browser/
(cd target/explorer-browser && npm ci --no-audit --no-fund --loglevel=error)
export PLAYWRIGHT_CORE="$PWD/target/explorer-browser/node_modules/playwright-core"
export MEMLINEAGE_BIN="${MEMLINEAGE_BIN:-$PWD/target/debug/memlineage}"
exec node --test --test-concurrency=1 tests/browser/explorer.test.mjs

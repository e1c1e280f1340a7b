#!/usr/bin/env bash
# Regenerates docs/explorer-quarantine.png, the README's screenshot of the quarantine view of
# one flag on the demo ledger: `cargo build && bash tests/browser/screenshot.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p docs
SCREENSHOT="$PWD/docs/explorer-quarantine.png" exec bash tests/browser/run.sh

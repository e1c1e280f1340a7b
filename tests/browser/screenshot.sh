#!/usr/bin/env bash
# Regenerates the README's screenshots on the demo ledger: the landing page
# (docs/explorer-landing.png), a poisoned memory's page at its lineage picture
# (docs/explorer-entry.png) and the quarantine view of one flag
# (docs/explorer-quarantine.png): `cargo build && bash tests/browser/screenshot.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p docs
SCREENSHOT="$PWD/docs/explorer-quarantine.png" \
  SCREENSHOT_LANDING="$PWD/docs/explorer-landing.png" \
  SCREENSHOT_ENTRY="$PWD/docs/explorer-entry.png" \
  exec bash tests/browser/run.sh

#!/usr/bin/env bash
# Times `memlineage serve` on a large ledger (spec/benchmarks.md, "Explorer pages"): the
# overview and an entry page (target: under 100 ms each), plus the entry list, the quarantine
# view and the start-up (index build). A measurement, not a test: it asserts nothing.
#
# Usage: cargo build --release && bash scripts/explorer_bench.sh [N] [BIN]
#   N    entries, about (default 100000): N/3 prompts, N/3 tool outputs, N/3 agent memories
#        each with both as parents (weights 1.0 and 0.9); one tool output is flagged.
#   BIN  the binary (default target/release/memlineage).
# Each page is fetched 20 times after one warm-up with curl over loopback; the median and the
# largest total time are printed in milliseconds.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100000}"
BIN="$(realpath "${2:-target/release/memlineage}")"
dir="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
cd "$dir"
third=$((N / 3))
"$BIN" init l.db >/dev/null
python3 - "$third" >first.jsonl <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"writer": "user", "role": "user", "kind": "prompt", "content": f"prompt {i}: pay the bill"}))
    print(json.dumps({"writer": "tool:read_file", "role": "tool", "kind": "tool_result", "content": f"bill {i}: 98.70 to UK12345678901234567890"}))
PY
t0=$(date +%s.%N)
"$BIN" append l.db --input first.jsonl >first.ids
python3 - >second.jsonl <<'PY'
import json
ids = [json.loads(l)["id"] for l in open("first.ids")]
for i in range(0, len(ids) - 1, 2):
    print(json.dumps({"writer": "agent", "role": "agent", "kind": "summary", "content": f"memory {i // 2}: pay the bill",
                      "parents": [{"id": ids[i], "weight": 1.0}, {"id": ids[i + 1], "weight": 0.9}]}))
PY
"$BIN" append l.db --input second.jsonl >second.ids
tool=$(python3 -c 'import json; print(json.loads(open("first.ids").readlines()[1])["id"])')
"$BIN" flag l.db "$tool" --reason "bench advisory" >/dev/null
"$BIN" checkpoint l.db >/dev/null
t1=$(date +%s.%N)
size=$("$BIN" verify l.db 2>/dev/null | sed -n 's/^checkpoint: .* size \([0-9]*\) .*/\1/p')
echo "ledger: $size entries, $(du -h l.db | cut -f1), built in $(python3 -c "print(round($t1 - $t0, 1))") s"
mid=$(python3 -c 'import json; l = open("second.ids").readlines(); print(json.loads(l[len(l) // 2])["id"])')

fifo="$dir/out"; mkfifo "$fifo"
s0=$(date +%s.%N)
"$BIN" serve l.db --addr 127.0.0.1:0 >"$fifo" &
pid=$!
read -r line <"$fifo"
s1=$(date +%s.%N)
base=$(echo "$line" | grep -o 'http://[0-9.:]*')
echo "serve: start-up (open, verify every signature, index) $(python3 -c "print(round(($s1 - $s0) * 1000))") ms"

time_page() {
  local path="$1"
  curl -s -o /dev/null "$base$path"
  for _ in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "$base$path"; done |
    python3 -c '
import statistics, sys
t = sorted(float(x) * 1000 for x in sys.stdin)
print(f"median {statistics.median(t):7.1f} ms   max {t[-1]:7.1f} ms")' |
    sed "s|^|$(printf '%-34s' "$2")|"
}
time_page "/" "overview"
time_page "/entry/$mid" "entry page (a memory, 2 parents)"
time_page "/entry/$tool" "entry page (the flagged source)"
time_page "/entries" "entry list, first page"
time_page "/entries?kind=summary&page=300" "entry list, filtered, page 300"
time_page "/quarantine" "quarantine view"

#!/usr/bin/env bash
# Times `memlineage serve` on a large ledger under a flood of flags (spec/benchmarks.md,
# "Explorer pages"; issue 31: every page <= 100 ms at the median, /style.css <= 10 ms while a
# slow page is loading), plus the start-up (index build, reach counts, receipt sources). A
# measurement, not a test: it asserts nothing.
#
# Usage: cargo build --release && bash scripts/explorer_bench.sh [N] [FLAGS] [BIN]
#   N      entries, about (default 100000): N/3 prompts, N/3 tool outputs, N/3 agent memories
#          each with both as parents (weights 1.0 and 0.9); the first tool output is a hub,
#          a parent (weight 0.5) of the first N/4 memories as well.
#   FLAGS  active flags (default 1000): 30 % on the hub (each reaching about N/4 entries), the
#          rest on distinct tool outputs; each with its own reason.
#   BIN    the binary (default target/release/memlineage).
# Each page is fetched once (its first, cold fetch is printed apart: it makes the receipts it
# shows), then 20 times with curl over loopback; the median and the largest total time are
# printed in milliseconds. Then the slowest page is fetched in a loop
# by two clients while /style.css and the landing page are timed again.
#
# Start-up only: bash scripts/explorer_bench.sh --start BIN LEDGER... [RUNS=3 in the environment]
#   times, on each existing LEDGER (its key file beside it), from spawning `serve` until it
#   prints its address (ready) and until it prints that its index is complete (indexed), and
#   four pages fetched once each while it indexes and 20 times after (median): the overview,
#   the entry list at its middle page, an entry page at the middle leaf, the list filtered by
#   kind (which waits for the index, or says it is still indexing).
set -euo pipefail
if [ "${1:-}" = "--start" ]; then
  BIN="$(realpath "$2")"
  shift 2
  runs="${RUNS:-3}"
  for ledger in "$@"; do
    dir="$(mktemp -d)"
    fifo="$dir/out"; mkfifo "$fifo"
    for run in $(seq "$runs"); do
      s0=$(date +%s.%N)
      "$BIN" serve "$ledger" --addr 127.0.0.1:0 >"$fifo" &
      pid=$!
      exec 3<"$fifo"
      read -r line <&3
      s1=$(date +%s.%N)
      base=$(echo "$line" | grep -o 'http://[0-9.:]*')
      size=$(curl -s "$base/ledger" | sed -n 's|.*<th>Entries</th><td>\([0-9]*\)</td>.*|\1|p')
      mid=$((size / 2))
      entry=$(curl -s -o /dev/null -w '%{redirect_url}' "$base/find?id=%23$mid")
      pages=("/ledger" "/entries?page=$((mid / 100 + 1))" "${entry#"$base"}" "/entries?kind=prompt&page=2")
      during=""
      for p in "${pages[@]}"; do
        during+=$(curl -s -o /dev/null -w ' %{http_code}:%{time_total}' "$base$p")
      done
      read -r indexed <&3
      s2=$(date +%s.%N)
      after=""
      for p in "${pages[@]}"; do
        after+=" $(for _ in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "$base$p"; done |
          python3 -c 'import statistics, sys; print(round(statistics.median(float(x) * 1000 for x in sys.stdin), 1))')"
      done
      kill "$pid"; wait "$pid" 2>/dev/null || true
      exec 3<&-
      python3 - "$ledger" "$size" "$run" "$s0" "$s1" "$s2" "$during" "$after" "$indexed" <<'PY'
import sys
ledger, size, run, s0, s1, s2, during, after, indexed = sys.argv[1:]
ms = lambda a, b: round((float(b) - float(a)) * 1000)
d = " ".join(f"{c}/{round(float(t) * 1000, 1)}" for c, t in (x.split(":") for x in during.split()))
print(f"{ledger} ({size} entries) run {run}: ready {ms(s0, s1)} ms, indexed {ms(s0, s2)} ms; "
      f"pages during indexing (status/ms) {d}; medians after (ms) {after.strip()}; {indexed}")
PY
    done
    rm -rf "$dir"
  done
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
cd "$(dirname "$0")/.."
N="${1:-100000}"
FLAGS="${2:-1000}"
BIN="$(realpath "${3:-target/release/memlineage}")"
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
python3 - "$N" >second.jsonl <<'PY'
import json, sys
hub_children = int(sys.argv[1]) // 4
ids = [json.loads(l)["id"] for l in open("first.ids")]
for i in range(0, len(ids) - 1, 2):
    parents = [{"id": ids[i], "weight": 1.0}, {"id": ids[i + 1], "weight": 0.9}]
    if 0 < i // 2 < hub_children:
        parents.append({"id": ids[1], "weight": 0.5})
    parents.sort(key=lambda p: p["id"])
    print(json.dumps({"writer": "agent", "role": "agent", "kind": "summary", "content": f"memory {i // 2}: pay the bill",
                      "parents": parents}))
PY
"$BIN" append l.db --input second.jsonl >second.ids
# A batch holds at most one forensic entry per target: one file per flag on the hub, the
# others spread over them.
python3 - "$FLAGS" <<'PY'
import json, sys
flags = int(sys.argv[1])
ids = [json.loads(l)["id"] for l in open("first.ids")]
tools = ids[1::2]
on_hub = max(1, flags * 3 // 10)
batches = [[] for _ in range(on_hub)]
for n in range(flags):
    target = tools[0] if n < on_hub else tools[1 + n]
    batches[n % on_hub].append(json.dumps({"writer": "advisory", "role": "system", "kind": "quarantine",
        "target": target, "content": f"advisory {n}: this tool output carried a prompt injection"}))
for k, b in enumerate(batches):
    with open(f"flags-{k:05}.jsonl", "w") as f:
        f.write("\n".join(b) + "\n")
PY
for f in flags-*.jsonl; do "$BIN" append l.db --input "$f"; done >flags.ids
"$BIN" checkpoint l.db >/dev/null
t1=$(date +%s.%N)
size=$("$BIN" verify l.db 2>/dev/null | sed -n 's/^checkpoint: .* size \([0-9]*\) .*/\1/p')
echo "ledger: $size entries, $(du -h l.db | cut -f1), built in $(python3 -c "print(round($t1 - $t0, 1))") s"
mid=$(python3 -c 'import json; l = open("second.ids").readlines(); print(json.loads(l[len(l) // 2])["id"])')
hubbed=$(python3 -c 'import json; l = open("second.ids").readlines(); print(json.loads(l[1])["id"])')
tool=$(python3 -c 'import json; print(json.loads(open("first.ids").readlines()[1])["id"])')
hubflag=$(python3 -c 'import json; print(json.loads(open("flags.ids").readline())["id"])')
echo "flags: $FLAGS ($(wc -l <flags.ids) appended)"

fifo="$dir/out"; mkfifo "$fifo"
s0=$(date +%s.%N)
"$BIN" serve l.db --addr 127.0.0.1:0 >"$fifo" &
pid=$!
exec 3<"$fifo"
read -r line <&3
s1=$(date +%s.%N)
base=$(echo "$line" | grep -o 'http://[0-9.:]*')
echo "serve: ready (address printed) $(python3 -c "print(round(($s1 - $s0) * 1000))") ms"
read -r indexed <&3
s2=$(date +%s.%N)
echo "serve: $indexed after $(python3 -c "print(round(($s2 - $s0) * 1000))") ms (verify every signature, index, reach sizes)"

time_page() {
  local path="$1"
  # The first fetch is timed apart: it makes the receipts the page shows (kept afterwards).
  { curl -s -o /dev/null -w '%{time_total}\n' "$base$path"
    for _ in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "$base$path"; done; } |
    python3 -c '
import statistics, sys
first, *rest = [float(x) * 1000 for x in sys.stdin]
t = sorted(rest)
print(f"median {statistics.median(t):7.1f} ms   max {t[-1]:7.1f} ms   first {first:7.1f} ms")' |
    sed "s|^|$(printf '%-40s' "$2")|"
}
time_page "/" "landing (poisoned, page 1)"
time_page "/?sort=source&page=100" "landing, by source, page 100"
time_page "/ledger" "ledger overview"
time_page "/entry/$mid" "entry page (a memory, 2 parents)"
time_page "/entry/$hubbed" "entry page (a memory under the hub)"
time_page "/entry/$tool" "entry page (the hub)"
time_page "/entry/${mid:0:8}" "short id (303 to the entry)"
time_page "/entries" "entry list, first page"
time_page "/entries?kind=summary&page=300" "entry list, filtered, page 300"
time_page "/quarantine" "flags, page 1"
time_page "/quarantine?page=10" "flags, page 10"
time_page "/quarantine/$hubflag" "one hub flag (reach, graph, receipts)"
time_page "/quarantine/$hubflag?page=200" "one hub flag, page 200"
time_page "/calls" "gate decisions"
time_page "/style.css" "style.css, idle"

# Two clients keep the slowest page loading while the stylesheet and the landing are timed.
slow="/quarantine/$hubflag?page=200"
busy() { while :; do curl -s -o /dev/null "$base$slow"; done; }
busy & b1=$!
busy & b2=$!
sleep 1
time_page "/style.css" "style.css, slow page loading"
time_page "/" "landing, slow page loading"
kill "$b1" "$b2" 2>/dev/null || true
wait "$b1" "$b2" 2>/dev/null || true
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
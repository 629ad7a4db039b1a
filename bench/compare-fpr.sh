#!/usr/bin/env bash
# bench/compare-fpr.sh: how often `kscope bench compare` calls two runs of
# one workload a regression (its false-positive rate on this machine), and
# how often it sees a broker stopped for 500 ms once (its power), side by
# side with the per-second Mann-Whitney comparison of kscope before issue
# 20 (BEFORE_REV) and with the same exceedance tests taking requests as
# independent. One `kscope lab broker` on loopback; PAIRS pairs of
# back-to-back runs of one workload (2 producers, 1 consumer, 2000 msgs/s
# of 1 KiB, acks=all, 2 s warm-up, DURATION s measured, a fresh topic
# each); then STALLS runs during which the broker is stopped (SIGSTOP) for
# 500 ms once, each compared with the run before it.
#
#   bench/compare-fpr.sh              # PAIRS=20 STALLS=10 DURATION=12 BEFORE_REV=c117b3b
#   KSCOPE_BIN=/path/kscope bench/compare-fpr.sh
#
# Needs root (SIGSTOP of the broker). Prints a Markdown report;
# bench/compare-results.md holds a run's output.
set -euo pipefail
shopt -s inherit_errexit
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-comparefpr}"
port="${KSCOPE_BENCH_PORT:-19099}"
pairs="${PAIRS:-20}"
stalls="${STALLS:-10}"
duration="${DURATION:-12}"
before_rev="${BEFORE_REV:-c117b3b}"
rm -rf "$work"
mkdir -p "$work/runs"
scripts/setup.sh >/dev/null
if [[ -z "${KSCOPE_BIN:-}" ]]; then
  CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
  kscope="$root/bin/kscope"
else
  kscope="$KSCOPE_BIN"
fi
git worktree add -f --detach "$work/before-src" "$before_rev" >/dev/null 2>&1
(cd "$work/before-src" && CGO_ENABLED=0 go build -o "$work/kscope-before" ./cmd/kscope)
git worktree remove --force "$work/before-src"

cleanup() {
  [[ -n "${broker_pid:-}" ]] && kill -CONT "$broker_pid" 2>/dev/null || true
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  rm -rf "$work/broker"
}
trap cleanup EXIT
"$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
broker_pid="$("$kscope" lab broker status --dir "$work/broker" | awk '$1 == "pid" {print $2}')"

n=0
run() { # NAME: one run of the workload into runs/NAME.json
  n=$((n + 1))
  "$kscope" bench run --bootstrap "127.0.0.1:$port" --topic "fpr-$n" --partitions 4 --producers 2 --consumers 1 \
    --rate 2000 --message-size 1024 --acks all --linger 5ms --warmup 2s --duration "${duration}s" -q \
    -o "$work/runs/$1.json" >"$work/runs/$1.out" 2>&1
}
# verdicts A B LABEL: one line "LABEL this before naive" (1: a regression).
verdicts() {
  local this before
  set +e
  "$kscope" bench compare --format json "$work/runs/$1.json" "$work/runs/$2.json" >"$work/runs/$3.cmp.json" 2>/dev/null
  this=$?
  "$work/kscope-before" bench compare "$work/runs/$1.json" "$work/runs/$2.json" >/dev/null 2>&1
  before=$?
  set -e
  python3 - "$work/runs/$3.cmp.json" "$3" "$this" "$before" <<'EOF'
import json, math, sys
c = json.load(open(sys.argv[1]))
rows = [r for r in c["rows"] if r.get("method") != "none"]
naive = 0
# The same exceedance tests with requests taken as independent: a
# two-proportion score test, Bonferroni over the comparison's tests.
for r in rows:
    ex = r.get("exceedance")
    if not ex:
        continue
    xa, xb, na, nb = ex["count_a"], ex["count_b"], ex["total_a"], ex["total_b"]
    p = (xa + xb) / (na + nb)
    if p <= 0 or p >= 1:
        continue
    z = (xb / nb - xa / na) / math.sqrt(p * (1 - p) * (1 / na + 1 / nb))
    pv = math.erfc(abs(z) / math.sqrt(2))
    if z > 0 and pv < 0.05 / len(rows) and xb / nb > (xa / na) * 1.05:
        naive = 1
print(sys.argv[2], 1 if sys.argv[3] == "1" else 0, 1 if sys.argv[4] == "1" else 0, naive)
EOF
}

: >"$work/verdicts.txt"
for i in $(seq 1 "$pairs"); do
  run "same-$i-a"
  run "same-$i-b"
  verdicts "same-$i-a" "same-$i-b" "same-$i" >>"$work/verdicts.txt"
done
for i in $(seq 1 "$stalls"); do
  run "stall-$i-a"
  (sleep $((2 + duration / 2)) && kill -STOP "$broker_pid" && sleep 0.5 && kill -CONT "$broker_pid") &
  run "stall-$i-b"
  wait
  verdicts "stall-$i-a" "stall-$i-b" "stall-$i" >>"$work/verdicts.txt"
done

python3 - "$work/verdicts.txt" "$pairs" "$stalls" "$duration" "$before_rev" "$(nproc)" <<'EOF'
import math, sys
lines = [l.split() for l in open(sys.argv[1])]
pairs, stalls, duration, rev, cpus = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def wilson(k, n, z=1.959964):
    if n == 0:
        return (0, 1)
    p = k / n
    d = 1 + z * z / n
    m = (p + z * z / (2 * n)) / d
    h = z / d * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0, m - h), min(1, m + h)
def cell(k, n):
    lo, hi = wilson(k, n)
    return f"{k} of {n} ({100*k/n:.0f}%, 95% CI {100*lo:.0f}-{100*hi:.0f}%)" if n else "-"
same = [l for l in lines if l[0].startswith("same-")]
stall = [l for l in lines if l[0].startswith("stall-")]
print(f"Same broker, {cpus} CPUs; each run: 2 producers, 1 consumer, 2000 msgs/s of 1 KiB, acks=all, 2 s warm-up, {duration} s measured, a fresh topic.")
print()
print("| pairs | called a regression by kscope bench compare | by kscope before issue 20 (" + rev + ", per-second Mann-Whitney) | by the exceedance tests with requests taken as independent |")
print("|---|---|---|---|")
for name, rows, n in (("same workload twice (false positives)", same, pairs), ("broker stopped 500 ms once in B (power)", stall, stalls)):
    print(f"| {name} | {cell(sum(int(r[1]) for r in rows), len(rows))} | {cell(sum(int(r[2]) for r in rows), len(rows))} | {cell(sum(int(r[3]) for r in rows), len(rows))} |")
EOF

#!/usr/bin/env bash
# bench/agent-replay-rounds.sh: is the agent's CPU per request of one build
# the same as another's? bench/agent-replay.sh's replay (a real broker's
# capture at its maximum rate, replayed into a veth; the agent with
# --no-trace captures the other end), run ROUNDS times for each build,
# the builds interleaved within each round so that a drift of the machine
# falls on all of them alike. Then, for each replay rate, every build
# against the first: the median µs of agent CPU per request, the
# difference of medians with a 95% bootstrap interval, and a two-sided
# Mann–Whitney permutation p-value over the rounds.
#
#   BUILDS="before=/tmp/kscope-old now=bin/kscope" ROUNDS=10 bench/agent-replay-rounds.sh
#   AGENT_ARGS="--views none" ...   # passed to every agent
#
# One replay of the 1 GB capture takes about 20 s (topspeed and PPS,
# default 100000): 10 rounds of 3 builds, 10 minutes. A single run's
# figure moves by ±10% on this 2-core VM; a difference of about 1 µs
# (8%) is what 10 rounds resolve. Keep the machine otherwise idle.
set -euo pipefail
shopt -s inherit_errexit
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${ROUNDS:-10}"
read -r -a builds <<<"${BUILDS:?BUILDS=\"name=path name=path ...\" (the first is the reference)}"
if ((${#builds[@]} < 2)); then
  echo "agent-replay-rounds: BUILDS needs at least two name=path pairs" >&2
  exit 2
fi
for b in "${builds[@]}"; do
  if [[ "$b" != *=* || ! -x "${b#*=}" ]]; then
    echo "agent-replay-rounds: $b: want name=path to an executable kscope" >&2
    exit 2
  fi
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for b in "${builds[@]}"; do
    name="${b%%=*}" bin="${b#*=}"
    echo "round $r/$rounds: $name (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    KSCOPE_BIN="$bin" CAPTURE="${CAPTURE:-60}" PPS="${PPS:-100000}" bench/agent-replay.sh |
      sed -n "s/^| \([a-z0-9]*\) |.*| \([0-9.]*\) |\$/$name \1 \2/p" >>"$out/runs.txt"
  done
done
python3 - "$out/runs.txt" "${builds[0]%%=*}" <<'EOF'
import random, statistics, sys
runs, ref = sys.argv[1], sys.argv[2]
res = {}
for line in open(runs):
    name, rate, us = line.split()
    if rate == "replay":
        continue
    res.setdefault(rate, {}).setdefault(name, []).append(float(us))

def mann_whitney_p(a, b, n=20000):
    def u(x, y):
        return sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)
    mid = len(a) * len(b) / 2
    seen = abs(u(a, b) - mid)
    pool, rnd, hits = a + b, random.Random(1), 0
    for _ in range(n):
        rnd.shuffle(pool)
        hits += abs(u(pool[:len(a)], pool[len(a):]) - mid) >= seen
    return hits / n

def median_diff_ci(a, b, n=5000):
    rnd = random.Random(2)
    d = sorted(statistics.median(rnd.choices(a, k=len(a))) - statistics.median(rnd.choices(b, k=len(b))) for _ in range(n))
    return d[int(0.025 * n)], d[int(0.975 * n)]

print("| replay | build | rounds | median µs/request | range | against " + ref + " | 95% interval | p (Mann–Whitney) |")
print("|---|---|---|---|---|---|---|---|")
for rate, builds in res.items():
    base = builds[ref]
    for name, v in builds.items():
        m = statistics.median(v)
        line = f"| {rate} | {name} | {len(v)} | {m:.2f} | {min(v):.2f}–{max(v):.2f} |"
        if name == ref:
            line += " | | |"
        else:
            lo, hi = median_diff_ci(v, base)
            d = m - statistics.median(base)
            line += f" {d:+.2f} ({100 * d / statistics.median(base):+.1f}%) | [{lo:+.2f}, {hi:+.2f}] | {mann_whitney_p(v, base):.3f} |"
        print(line)
print()
print("Rounds, in order (µs of agent CPU per request):")
print()
for rate, builds in res.items():
    for name, v in builds.items():
        print(f"- {rate} {name}: " + " ".join(f"{x:.2f}" for x in v))
EOF

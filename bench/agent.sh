#!/usr/bin/env bash
# bench/agent.sh: what `kscope agent` costs a broker host, at fixed loads
# and at the broker's maximum, side by side with nothing watching, with an
# earlier build of the agent (BEFORE_REV, to show a change's effect in the
# same run) and, at the maximum, with what a user would otherwise turn on:
# Kafka's own request logger (kafka.request.logger at DEBUG).
#
# One `kscope lab broker` on loopback (a second one with its request
# logger on, for that arm), driven by `kscope bench run` with 8 producers
# and 2 consumers:
#
#   fixed loads  LOADS messages/s of 900 bytes, linger 0, 1 KiB batches:
#                one message per produce request, so the load is a request
#                rate (the clients' own count of the requests they wrote
#                is in the result, and printed);
#   max          --rate max with 100-byte messages into one partition:
#                the most requests/s this machine's broker serves.
#
# Each load runs TRIALS times in each arm, the arms' order rotating from
# trial to trial (interleaved, so that drift hits every arm), DURATION
# seconds measured each. Arms: none (nothing watching), agent (this
# build), before (BEFORE_REV's build, if given), thief (a control: a
# process that does nothing but take the CPU the agent took, see below),
# and at the max only: capture (this build with --no-trace: its share of
# the cost, the rest being the tracing's) and reqlog. The agent runs as
# deployed: capture, eBPF tracing (writes, journal, block I/O, kernel
# waits), metrics and the slow log (--out).
#
# The thief is stress-ng's cpu stressor at --cpu-load P with 1 ms busy
# slices, P the mean CPU (% of a core) this build's agent took at that
# load in the runs before it (the agent's arm runs first in the first
# trial). It separates what any process taking that much CPU from the
# broker's cores costs the broker from what is the agent's own doing: its
# programs in the broker's system calls, its capture's copy of every
# packet in the senders' context. Its CPU is measured like the agent's.
#
# TRACEPOINT=1 adds an arm at every load: this build with
# --syscall-probe tracepoint. Where the kernel allows fentry, the agent
# arm times the broker's system calls at the system call functions, and
# this arm shows what the syscalls tracepoints would cost instead (on a
# host that refuses fentry, as this project's, both arms are the same).
#
# PIN=1 puts the broker (every thread, also the request logger's) and
# whatever watches it (agent or thief) on CPU 0 and the clients on CPU 1:
# the broker's host is then one core the clients do not share, as when
# they run on other machines. Without it (the default) all share both.
#
# Measured per run, over its steady part (DURATION-2 s from 2 s after the
# load's warm-up, the agent started before the load):
# the agent's CPU (user+system from /proc, its whole process), the
# requests it decoded, the run time of its BPF programs (kernel.bpf_stats_enabled,
# /proc/PID/fdinfo: time spent in the traced processes' context, a cost
# to the host rather than to the agent; at fixed loads only: the
# statistics add two clock reads to every program run, which at the max
# would take CPU from the broker whose throughput is measured), the
# broker's CPU; over the whole
# run: the agent's peak RSS, the packets and events it lost; from the
# clients' measured part: the messages/s acknowledged and the p99 of the
# service latency they saw. Figures are means with 95%
# confidence intervals over the trials (Student's t).
#
# Then, if SOAK > 0, the agent alone for SOAK seconds at the highest
# fixed load, its RSS sampled every 10 s: flat memory.
#
#   bench/agent.sh            # LOADS="2500 5000 10000" TRIALS=3 DURATION=20 SOAK=300
#   BEFORE_REV=8dca453 bench/agent.sh
#   KSCOPE_BIN=/path/kscope bench/agent.sh
#   MAX=0 LOADS=5000 TRIALS=6 bench/agent.sh   # fixed loads only, no maximum
#   MAX_TRIALS=5 bench/agent.sh                # more trials at the max (default TRIALS)
#   PIN=1 LOADS=5000 bench/agent.sh             # broker and agent on CPU 0, clients on CPU 1
#   TRACEPOINT=1 bench/agent.sh                 # also the agent with --syscall-probe tracepoint
#
# Needs root. Prints a Markdown report; bench/agent-results.md holds a
# run's output.
set -euo pipefail
shopt -s inherit_errexit
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-agentbench}"
port="${KSCOPE_BENCH_PORT:-19096}"
logport="${KSCOPE_BENCH_LOG_PORT:-19098}"
mport="${KSCOPE_METRICS_PORT:-19464}"
read -r -a loads <<<"${LOADS:-2500 5000 10000}"
trials="${TRIALS:-3}"
max_trials="${MAX_TRIALS:-$trials}"
duration="${DURATION:-20}"
soak="${SOAK:-300}"
with_max="${MAX:-1}"
pin="${PIN:-0}"
tracepoint_arm="${TRACEPOINT:-0}"
# Commands that run on the broker's host and the clients', as taskset
# prefixes (empty unless PIN=1).
host=() clients=()
if [[ "$pin" == 1 ]]; then
  (($(nproc) >= 2)) || { echo "agent.sh: PIN=1 needs 2 CPUs" >&2; exit 1; }
  host=(taskset -c 0) clients=(taskset -c 1)
fi
warmup=3
before_rev="${BEFORE_REV:-}"
mkdir -p "$work"
scripts/setup.sh >/dev/null
if [[ -z "${KSCOPE_BIN:-}" ]]; then
  CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
  kscope="$root/bin/kscope"
else
  kscope="$KSCOPE_BIN"
fi
before=""
if [[ -n "$before_rev" ]]; then
  rm -rf "$work/before-src"
  git worktree add -f --detach "$work/before-src" "$before_rev" >/dev/null 2>&1
  (cd "$work/before-src" && CGO_ENABLED=0 go build -o "$work/kscope-before" ./cmd/kscope)
  git worktree remove --force "$work/before-src"
  before="$work/kscope-before"
fi
hz="$(getconf CLK_TCK)"
stats_before="$(sysctl -n kernel.bpf_stats_enabled)"
sysctl -q -w kernel.bpf_stats_enabled=1

agent_pid=""
cleanup() {
  [[ -n "$agent_pid" ]] && kill "$agent_pid" 2>/dev/null || true
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  "$kscope" lab broker stop --dir "$work/broker-log" >/dev/null 2>&1 || true
  # The brokers' logs reach gigabytes per run; the results stay.
  rm -rf "$work/broker" "$work/broker-log" "$work/slow"
  sysctl -q -w kernel.bpf_stats_enabled="$stats_before" || true
}
trap cleanup EXIT

start_broker() { # DIR PORT [--request-log]
  "$kscope" lab broker stop --dir "$1" >/dev/null 2>&1 || true
  rm -rf "$1"
  "$kscope" lab broker start --dir "$1" --port "$2" "${@:3}" >/dev/null
  local pid
  pid="$("$kscope" lab broker status --dir "$1" | awk '$1 == "pid" {print $2; exit}')"
  # Threads the JVM starts later inherit the mask of those that start them.
  [[ "$pin" == 1 ]] && taskset -a -p -c 0 "$pid" >/dev/null
  echo "$pid"
}
broker_pid="$(start_broker "$work/broker" "$port")"
log_pid="$(start_broker "$work/broker-log" "$logport" --request-log)"

# cpu_ticks PID: user+system ticks of PID and its children (stress-ng's
# worker is a child of the process started).
cpu_ticks() { cat "/proc/$1/stat" $({ pgrep -P "$1" || true; } | sed 's|.*|/proc/&/stat|') 2>/dev/null | awk '{t += $14 + $15} END {print t}'; }
rss_kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
bpf_ns() { cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "run_time_ns:" {t += $2} END {printf "%d\n", t}'; }
# metric NAME: the sum of a metric's samples on the agent's /metrics.
metric() {
  curl -s "http://127.0.0.1:$mport/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $NF} END {printf "%.0f\n", s}'
}

# load LOAD PORT NAME: one bench run (LOAD: messages/s, or max).
load() {
  local args=(--producers 8 --consumers 2 --linger 0 --batch-bytes 1024)
  if [[ "$1" == max ]]; then
    args+=(--rate max --message-size 100 --partitions 1)
  else
    args+=(--rate "$1" --message-size 900 --partitions 4)
  fi
  "${clients[@]}" "$kscope" bench run --bootstrap "127.0.0.1:$2" "${args[@]}" --warmup "${warmup}s" --duration "${duration}s" \
    --topic "ab-$3" -q -o "$work/$3.json" >"$work/$3.out" 2>&1
}

start_agent() { # BINARY [FLAGS]
  "${host[@]}" "$1" agent --iface lo --port "$port" --pid "$broker_pid" --listen "127.0.0.1:$mport" \
    --out "$work/slow" --slow 100ms "${@:2}" >"$work/agent.out" 2>&1 &
  agent_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$mport/healthz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$mport/healthz" >/dev/null || { cat "$work/agent.out" >&2; exit 1; }
}
stop_agent() {
  kill "$agent_pid"
  wait "$agent_pid" || true
  agent_pid=""
  rm -rf "$work/slow"
}
# thief_share LOAD: the mean CPU (% of a core, at least 1) of this build's
# agent at LOAD in the runs so far.
thief_share() {
  awk -F'\t' -v l="$1" '$1 == "agent" && $2 == l {s += $8; n++} END {if (!n) exit 1; p = int(s / n + 0.5); print (p < 1 ? 1 : p)}' "$work/runs.tsv"
}
# The thief's pid goes where the agent's would (agent_pid): it is measured,
# sampled and stopped like one.
start_thief() { # SHARE
  "${host[@]}" stress-ng --cpu 1 --cpu-load "$1" --cpu-load-slice 1 --cpu-method loop -t 0 -q >"$work/thief.out" 2>&1 &
  agent_pid=$!
  sleep 1
}

# run ARM LOAD TRIAL: one run; appends a line to runs.tsv.
n=0
run() {
  local arm=$1 ld=$2 trial=$3 bpid=$broker_pid bport=$port name
  n=$((n + 1))
  name="$arm-$ld-$trial-$n"
  [[ "$arm" == reqlog ]] && bpid=$log_pid bport=$logport
  case "$arm" in
    agent) start_agent "$kscope" ;;
    capture) start_agent "$kscope" --no-trace ;;
    tracepoint) start_agent "$kscope" --syscall-probe tracepoint ;;
    before) start_agent "$before" ;;
    thief)
      local share
      share="$(thief_share "$ld")" || { echo "agent.sh: no agent run at $ld before the thief's" >&2; exit 1; }
      start_thief "$share"
      ;;
  esac
  if [[ "$ld" == max ]]; then
    sysctl -q -w kernel.bpf_stats_enabled=0
  else
    sysctl -q -w kernel.bpf_stats_enabled=1
  fi
  local a0=0 a1=0 f0=0 f1=0 r0=0 r1=0 peak=0 b0 b1 t0 t1 sampler=""
  if [[ -n "$agent_pid" ]]; then
    (while kill -0 "$agent_pid" 2>/dev/null; do rss_kib "$agent_pid" >>"$work/rss-$name"; sleep 2; done) 2>/dev/null &
    sampler=$!
  fi
  load "$ld" "$bport" "$name" &
  local lp=$!
  sleep $((warmup + 2))
  # The thief has no metrics to read: only its CPU is measured.
  local agent=0
  [[ -n "$agent_pid" && "$arm" != thief ]] && agent=1
  b0="$(cpu_ticks "$bpid")" t0="$(date +%s.%N)"
  [[ -n "$agent_pid" ]] && a0="$(cpu_ticks "$agent_pid")"
  ((agent)) && f0="$(bpf_ns "$agent_pid")" r0="$(metric kscope_requests_total)"
  sleep $((duration - 2))
  b1="$(cpu_ticks "$bpid")" t1="$(date +%s.%N)"
  [[ -n "$agent_pid" ]] && a1="$(cpu_ticks "$agent_pid")"
  ((agent)) && f1="$(bpf_ns "$agent_pid")" r1="$(metric kscope_requests_total)"
  wait "$lp"
  local drops=0
  if [[ -n "$agent_pid" ]]; then
    ((agent)) && drops=$(($(metric kscope_agent_capture_drops_total) + $(metric kscope_agent_ringbuf_drops_total)))
    stop_agent
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    peak="$(sort -n "$work/rss-$name" | tail -1)"
  fi
  python3 - "$work/$name.json" "$arm" "$ld" "$trial" "$t0" "$t1" "$b0" "$b1" "$a0" "$a1" "$f0" "$f1" "$r0" "$r1" \
    "$peak" "$drops" "$hz" >>"$work/runs.tsv" <<'EOF'
import json, sys
(path, arm, ld, trial, t0, t1, b0, b1, a0, a1, f0, f1, r0, r1, peak, drops, hz) = sys.argv[1:]
res = json.load(open(path))
t = res["totals"]
wall = float(t1) - float(t0)
hz = float(hz)
# CPU and the agent's requests over the same steady window.
agent_req = (float(r1) - float(r0)) / wall
print("\t".join(str(x) for x in (arm, ld, trial, round(t["requests_per_sec"]), round(t["msgs_per_sec"]),
      res["latency"]["service"]["p99_us"], round((float(b1) - float(b0)) / hz / wall * 100, 2),
      round((float(a1) - float(a0)) / hz / wall * 100, 3), round((float(f1) - float(f0)) / 1e9 / wall * 100, 3),
      round(agent_req), peak, drops)))
EOF
}

: >"$work/runs.tsv"
arms=(none agent)
[[ -n "$before" ]] && arms+=(before)
[[ "$tracepoint_arm" == 1 ]] && arms+=(tracepoint)
arms+=(thief)
load 5000 "$port" warmup >/dev/null
load 5000 "$logport" warmup-log >/dev/null
for trial in $(seq "$((trials > max_trials ? trials : max_trials))"); do
  these_loads=()
  ((trial <= trials)) && these_loads+=("${loads[@]}")
  [[ "$with_max" == 1 ]] && ((trial <= max_trials)) && these_loads+=(max)
  for ld in "${these_loads[@]}"; do
    these=("${arms[@]}")
    [[ "$ld" == max ]] && these+=(capture reqlog)
    k=${#these[@]}
    for i in $(seq 0 $((k - 1))); do
      run "${these[$(((i + trial) % k))]}" "$ld" "$trial"
    done
  done
done

soak_line=""
if ((soak > 0)); then
  ld="${loads[-1]}"
  start_agent "$kscope"
  : >"$work/soak-rss.tsv"
  (s0="$(date +%s)"; while kill -0 "$agent_pid" 2>/dev/null; do
    printf '%s\t%s\n' "$(($(date +%s) - s0))" "$(rss_kib "$agent_pid")" >>"$work/soak-rss.tsv"; sleep 10; done) 2>/dev/null &
  sampler=$!
  a0="$(cpu_ticks "$agent_pid")" t0="$(date +%s.%N)" r0="$(metric kscope_requests_total)"
  saved="$duration"; duration="$soak"
  load "$ld" "$port" soak
  duration="$saved"
  a1="$(cpu_ticks "$agent_pid")" t1="$(date +%s.%N)" r1="$(metric kscope_requests_total)"
  drops=$(($(metric kscope_agent_capture_drops_total) + $(metric kscope_agent_ringbuf_drops_total)))
  stop_agent
  kill "$sampler" 2>/dev/null || true
  soak_line="$(python3 - "$work/soak-rss.tsv" "$t0" "$t1" "$a0" "$a1" "$r0" "$r1" "$drops" "$hz" "$ld" "$soak" <<'EOF'
import sys
path, t0, t1, a0, a1, r0, r1, drops, hz, ld, soak = sys.argv[1:]
rss = [int(l.split("\t")[1]) for l in open(path) if l.strip() and l.split("\t")[1].strip()]
wall = float(t1) - float(t0)
cpu = (float(a1) - float(a0)) / float(hz) / wall * 100
req = (float(r1) - float(r0)) / wall
first = rss[min(6, len(rss) - 1)]  # after the first minute
print(f"Soak: {float(soak)/60:.0f} min at {ld} messages/s: the agent decoded {req:.0f} requests/s at {cpu:.1f}% of a core "
      f"({cpu / (req / 1e4):.1f}% per 10k requests/s), {drops} packets or events lost; RSS {rss[0]/1024:.0f} MiB at start, "
      f"{first/1024:.0f} MiB after a minute, {rss[-1]/1024:.0f} MiB at the end, {max(rss)/1024:.0f} MiB at most "
      f"({len(rss)} samples).")
EOF
)"
fi

python3 - "$work/runs.tsv" "$trials" "$duration" "$before_rev" "$(nproc)" "$max_trials" "$pin" <<'EOF'
import math, sys
from collections import defaultdict
path, trials, duration, before_rev, cores, max_trials, pin = sys.argv[1:]
# Student's t, two-sided 95%, by degrees of freedom.
T = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}
rows = defaultdict(list)
# trial[(load, trial)][arm]: one run's figures, for the trial pairs below.
trial = defaultdict(dict)
for line in open(path):
    f = line.rstrip("\n").split("\t")
    rows[(f[1], f[0])].append([float(x) for x in f[3:]])
    trial[(f[1], f[2])][f[0]] = dict(msgs=float(f[4]), p99=float(f[5]), bcpu=float(f[6]))
def ci(xs):
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, float("nan")
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return m, T.get(len(xs) - 1, 1.96) * sd / math.sqrt(len(xs))
def fmt(xs, nd=1):
    m, h = ci(xs)
    return f"{m:.{nd}f} ± {h:.{nd}f}" if not math.isnan(h) else f"{m:.{nd}f}"
order = {"none": 0, "agent": 1, "before": 2, "tracepoint": 3, "capture": 4, "thief": 5, "reqlog": 6}
names = {"none": "nothing watching", "agent": "kscope agent", "before": f"kscope agent before ({before_rev})",
         "tracepoint": "kscope agent --syscall-probe tracepoint", "capture": "kscope agent --no-trace", "thief": "CPU thief at the agent's CPU (stress-ng)",
         "reqlog": "Kafka request logger"}
where = ("The broker (and the agent or thief) pinned to CPU 0, the clients to CPU 1." if pin == "1"
         else f"{cores} cores, shared by all.")
print(f"# kscope agent: cost at fixed loads and at the maximum\n")
print(f"Load: `kscope bench run`, 8 producers, 2 consumers, linger 0, 1 KiB batches; fixed loads of 900-byte messages "
      f"(one per produce request), max: `--rate max` with 100-byte messages into one partition. {trials} trials per arm "
      f"({max_trials} at the max), arms interleaved, {duration} s measured per run (CPU and the agent's requests over its steady part: "
      f"{int(duration) - 2} s from 2 s after the warm-up; BPF statistics on at the fixed loads only). "
      f"Thief: `stress-ng --cpu 1 --cpu-load P --cpu-load-slice 1`, P the agent's mean CPU (% of a core) at that load "
      f"in the runs before it. Means ± 95% confidence intervals over the trials. {where}\n")
print("| load (msgs/s) | arm | requests/s | msgs/s | p99 service ms | broker CPU % | agent CPU % of a core | agent CPU % per 10k req/s | agent BPF % of a core | BPF % per 10k req/s | agent peak RSS MiB | lost |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
def loadkey(k):
    return (math.inf if k[0] == "max" else float(k[0]), order[k[1]])
for key in sorted(rows, key=loadkey):
    rs = rows[key]
    col = lambda i: [r[i] for r in rs]
    req, msgs, p99, bcpu, acpu, bpf, areq, peak, lost = (col(i) for i in range(9))
    line = f"| {key[0]} | {names[key[1]]} | {fmt(req, 0)} | {fmt(msgs, 0)} | {fmt([x / 1000 for x in p99])} | {fmt(bcpu)} |"
    if key[1] in ("agent", "before", "tracepoint", "capture"):
        # Per the requests the agent decoded over the same wall time as
        # its CPU (the clients count only the measured part).
        per = [a / (q / 1e4) for a, q in zip(acpu, areq)]
        bper = [b / (q / 1e4) for b, q in zip(bpf, areq)]
        # No BPF statistics at the max (see the header).
        b = "—" if key[0] == "max" else fmt(bpf, 2)
        bp = "—" if key[0] == "max" else fmt(bper, 2)
        line += f" {fmt(acpu, 2)} | {fmt(per, 2)} | {b} | {bp} | {max(peak)/1024:.0f} | {int(sum(lost))} |"
    elif key[1] == "thief":
        line += f" {fmt(acpu, 2)} | | | | | |"
    else:
        line += " | | | | | |"
    print(line)
# Trial pairs: each arm against nothing watching and the agent against the
# thief, in the same trial (runs of one trial are minutes apart, of
# different trials longer: pairs see drift the intervals do not).
short = {"none": "nothing", "agent": "agent", "before": "before", "tracepoint": "tracepoint", "capture": "--no-trace",
         "thief": "thief"}
print("\nTrial pairs (in how many trials the first arm's value was lower or higher than the second's):\n")
for ld in sorted({k[0] for k in trial}, key=lambda l: math.inf if l == "max" else float(l)):
    ts = [t for k, t in trial.items() if k[0] == ld]
    parts = []
    for a, b in (("agent", "none"), ("before", "none"), ("tracepoint", "none"), ("capture", "none"), ("thief", "none"),
                 ("agent", "thief"), ("agent", "before"), ("agent", "tracepoint"), ("agent", "capture")):
        both = [t for t in ts if a in t and b in t]
        if not both:
            continue
        lower = sum(t[a]["msgs"] < t[b]["msgs"] for t in both)
        higher = sum(t[a]["p99"] > t[b]["p99"] for t in both)
        # At the max the broker's cores are saturated: its CPU per message
        # is what the arms change.
        per = (lambda r: r["bcpu"] / r["msgs"]) if ld == "max" else (lambda r: r["bcpu"])
        cpu = sum(per(t[a]) > per(t[b]) for t in both)
        what = f"msgs/s lower {lower}, " if ld == "max" else ""
        cpuname = "broker CPU per message" if ld == "max" else "broker CPU"
        parts.append(f"{short[a]} vs {short[b]}: {what}p99 higher {higher}, {cpuname} higher {cpu}, of {len(both)}")
    print(f"- {ld}: " + "; ".join(parts))
EOF
echo
[[ -n "$soak_line" ]] && echo "$soak_line" && echo
maxenv=""
[[ "$with_max" != 1 ]] && maxenv="MAX=$with_max "
[[ "$pin" == 1 ]] && maxenv+="PIN=1 "
[[ "$tracepoint_arm" == 1 ]] && maxenv+="TRACEPOINT=1 "
echo "Command: \`${maxenv}BEFORE_REV=${before_rev:-none} TRIALS=$trials MAX_TRIALS=$max_trials DURATION=$duration SOAK=$soak LOADS=\"${loads[*]}\" bench/agent.sh\`, $(date -u +%F), $(nproc) cores, kernel $(uname -r)."

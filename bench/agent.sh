#!/usr/bin/env bash
# bench/agent.sh: the cost of watching a broker continuously, side by side
# with what a user would otherwise turn on: Kafka's own request logger
# (kafka.request.logger at DEBUG, the only per-request record a broker
# keeps). One `kscope lab broker` on loopback, driven at its maximum
# request rate by `kscope bench run --rate max` (100-byte messages, linger
# 0, 1 KiB batches: about 7 messages a request, so that requests, not
# bytes, are the load), in three phases of PHASE
# seconds each on the same broker:
#
#   base    nothing watching: the broker's CPU per request
#   reqlog  the broker restarted with its request logger on
#   agent   `kscope agent` (capture + eBPF + slow log) watching; SOAK
#           seconds long, sampling the agent's RSS and CPU every 10 s
#
# CPU is user+system time from /proc of the broker's and the agent's
# processes over each phase. Requests are what the agent counted
# (kscope_requests_total) in its phase, and what the load generator
# reported in the others; drops are the agent's own counters.
#
#   bench/agent.sh                     # PHASE=60 SOAK=600 SIZE=100 PRODUCERS=4
#   KSCOPE_BIN=/path/kscope bench/agent.sh
#
# Prints a Markdown report; bench/agent-results.md holds a run's output.
set -euo pipefail
shopt -s inherit_errexit
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-agentbench}"
port="${KSCOPE_BENCH_PORT:-19096}"
mport="${KSCOPE_METRICS_PORT:-19464}"
phase="${PHASE:-60}"
soak="${SOAK:-600}"
size="${SIZE:-100}"
producers="${PRODUCERS:-4}"
mkdir -p "$work"
scripts/setup.sh >/dev/null
if [[ -z "${KSCOPE_BIN:-}" ]]; then
  CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
  kscope="$root/bin/kscope"
else
  kscope="$KSCOPE_BIN"
fi
hz="$(getconf CLK_TCK)"

agent_pid=""
cleanup() {
  [[ -n "$agent_pid" ]] && kill "$agent_pid" 2>/dev/null || true
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# start_broker [--request-log]: a fresh broker.
start_broker() {
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  rm -rf "$work/broker"
  "$kscope" lab broker start --dir "$work/broker" --port "$port" "$@" >/dev/null
  broker_pid="$("$kscope" lab broker status --dir "$work/broker" | awk '$1 == "pid" {print $2}')"
}

# cpu_ticks PID: user+system clock ticks of a process so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }

# load SECONDS NAME: the maximum request rate for SECONDS; prints the
# produce requests/s the load generator's broker saw (from its summary).
load() {
  "$kscope" bench run --bootstrap "127.0.0.1:$port" --rate max --producers "$producers" --linger 0 --batch-bytes 1024 \
    --message-size "$size" --consumers 1 --warmup 3s --duration "${1}s" --topic "agentbench-$2" \
    --partitions 4 -o "$work/$2.json" >"$work/$2.out" 2>&1
}

# metric NAME: the sum of a metric's samples on the agent's /metrics.
metric() {
  curl -s "http://127.0.0.1:$mport/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $NF} END {printf "%.0f\n", s}'
}

# sent NAME: messages the load generator got acknowledged.
sent() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["totals"]["acked"])' "$work/$1.json"; }

declare -A cpu msgs
run_phase() { # NAME SECONDS
  local t0 t1 c0 c1
  c0="$(cpu_ticks "$broker_pid")"
  t0="$(date +%s.%N)"
  load "$2" "$1"
  t1="$(date +%s.%N)"
  c1="$(cpu_ticks "$broker_pid")"
  cpu[$1]="$(python3 -c "print(($c1 - $c0) / $hz)")"
  msgs[$1]="$(sent "$1")"
  elapsed[$1]="$(python3 -c "print($t1 - $t0)")"
}
declare -A elapsed

start_broker
run_phase base "$phase"
start_broker --request-log
run_phase reqlog "$phase"
logbytes="$(stat -c %s "$work/broker/kafka-request.log" 2>/dev/null || echo 0)"
start_broker

"$kscope" agent --iface lo --port "$port" --pid "$broker_pid" --listen "127.0.0.1:$mport" \
  --out "$work/slow" --slow 100ms --pprof >"$work/agent.out" 2>&1 &
agent_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$mport/healthz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$mport/healthz" >/dev/null || { cat "$work/agent.out"; exit 1; }
: >"$work/agent-samples.tsv"
(
  start="$(date +%s)"
  while kill -0 "$agent_pid" 2>/dev/null; do
    printf '%s\t%s\t%s\t%s\n' "$(($(date +%s) - start))" "$(rss_kib "$agent_pid")" "$(cpu_ticks "$agent_pid")" \
      "$(metric kscope_requests_total)" >>"$work/agent-samples.tsv"
    sleep 10
  done
) &
sampler=$!
a0="$(cpu_ticks "$agent_pid")"
r0="$(metric kscope_requests_total)"
run_phase agent "$soak"
a1="$(cpu_ticks "$agent_pid")"
r1="$(metric kscope_requests_total)"
drops="$(metric kscope_agent_capture_drops_total)"
rdrops="$(metric kscope_agent_ringbuf_drops_total)"
skipped="$(metric kscope_agent_skipped_bytes_total)"
decode="$(metric kscope_agent_decode_errors_total)"
series="$(curl -s "http://127.0.0.1:$mport/metrics" | grep -c '^kscope_')"
kill "$agent_pid"
wait "$agent_pid" || true
agent_pid=""
wait "$sampler" 2>/dev/null || true

python3 - "$work" "$hz" "${cpu[base]}" "${msgs[base]}" "${elapsed[base]}" "${cpu[reqlog]}" "${msgs[reqlog]}" \
  "${elapsed[reqlog]}" "${cpu[agent]}" "${msgs[agent]}" "${elapsed[agent]}" "$a0" "$a1" "$r0" "$r1" \
  "$drops" "$rdrops" "$skipped" "$decode" "$series" "$logbytes" "$phase" "$soak" "$size" "$producers" <<'EOF'
import sys
(work, hz, cb, mb, eb, cr, mr, er, ca, ma, ea, a0, a1, r0, r1, drops, rdrops, skipped, decode, series,
 logbytes, phase, soak, size, producers) = sys.argv[1:]
hz = float(hz)
agent_cpu = (float(a1) - float(a0)) / hz
reqs = float(r1) - float(r0)
ea = float(ea)
rate = reqs / ea
samples = [l.rstrip('\n').split('\t') for l in open(f'{work}/agent-samples.tsv') if l.strip()]
rss = [int(s[1]) for s in samples if s[1]]
print(f"# kscope agent soak: {float(soak)/60:.0f} min at the broker's maximum request rate\n")
print(f"Load: `kscope bench run --rate max`, {producers} producers, {size}-byte messages, linger 0, 1 KiB batches, 4 partitions, one consumer. Messages/s and CPU per message are over each whole run (warm-up and drain included).\n")
print("| phase | seconds | messages acked | messages/s | broker CPU s | broker CPU µs/message |")
print("|---|---|---|---|---|---|")
for name, c, m, e in (("nothing watching", cb, mb, eb), ("Kafka request logger on", cr, mr, er), ("kscope agent watching", ca, ma, ea)):
    c, m, e = float(c), float(m), float(e)
    print(f"| {name} | {e:.0f} | {m:.0f} | {m/e:.0f} | {c:.1f} | {c/m*1e6:.1f} |")
print()
print(f"Request logger: {int(logbytes)/2**20:.0f} MiB of log in {float(phase):.0f} s.\n")
print(f"Agent: {reqs:.0f} requests decoded in {ea:.0f} s = {rate:.0f} requests/s; "
      f"agent CPU {agent_cpu:.1f} s = {agent_cpu/ea*100:.1f}% of one core = "
      f"{agent_cpu/ea/(rate/1e4)*100:.1f}% of a core per 10k requests/s.")
print(f"Losses: {drops} packets dropped by the kernel, {rdrops} traced events lost in ring buffers, "
      f"{skipped} stream bytes skipped, {decode} decode errors. Series on /metrics: {series}.")
if rss:
    print(f"Agent RSS: {rss[0]/1024:.0f} MiB at the first sample, {rss[-1]/1024:.0f} MiB at the last, max {max(rss)/1024:.0f} MiB "
          f"({len(rss)} samples, every 10 s).\n")
    print("| s | RSS MiB | requests |")
    print("|---|---|---|")
    step = max(1, len(samples)//12)
    for s in samples[::step]:
        print(f"| {s[0]} | {int(s[1])/1024:.1f} | {s[3]} |")
EOF

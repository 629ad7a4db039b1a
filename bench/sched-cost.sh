#!/usr/bin/env bash
# bench/sched-cost.sh: what explain's scheduling evidence costs at the
# demo's load. One broker (kscope lab broker), the load of scripts/demo.sh
# (two ProducerPerformance at 2000 records/s of 512 B, acks=all,
# linger.ms=2, for DURATION seconds), traced by `kscope iotrace` as
# `kscope record` traces it, TRIALS pairs of runs, the order alternating:
#
#   off: iotrace --min-latency 1ms --waits (the journal on): about what
#        record traced before the scheduling evidence;
#   on:  the same plus --runq --conns: run-queue delays with their holders
#        (a program on every context switch and wake-up of the machine),
#        wake-ups by another broker thread, connection threads.
#
# Measured the way bench/iotrace.sh measures iotrace: the run time of
# iotrace's BPF programs (kernel.bpf_stats_enabled, from /proc/PID/fdinfo of
# its program descriptors) plus its own CPU time (/proc/PID/stat), over the
# CPU the machine had (wall time x cores). The cost of the scheduling
# evidence is on minus off. Also printed: the machine's context switches
# per second (/proc/stat ctxt), which the per-switch program's cost
# scales with, and the events the on runs reported.
#
#   bench/sched-cost.sh         # TRIALS=3 DURATION=10 RUNQ_MIN=250us
#
# RUNQ_MIN is the on runs' --runq-min: the shortest wait for a CPU (and sleep) traced; record's default.
#
# Needs root (eBPF). bench/sched-cost-results.md holds a run's output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-schedbench}"
port="${KSCOPE_BENCH_PORT:-19095}"
trials="${TRIALS:-3}"
duration="${DURATION:-10}"
runq_min="${RUNQ_MIN:-250us}"
mkdir -p "$work"
scripts/setup.sh >/dev/null
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
kscope="$root/bin/kscope"
libs="$(scripts/kafka-jars.sh)"
java=(java -Xmx256m -XX:TieredStopAtLevel=1 -cp "$libs/*")

"$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
rm -rf "$work/broker"
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
"$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
iot_pid=""
cleanup() {
  if [[ -n "$iot_pid" ]]; then kill -INT "$iot_pid" 2>/dev/null || true; wait "$iot_pid" 2>/dev/null || true; fi
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  sysctl -q -w kernel.bpf_stats_enabled="$stats_before" || true
  rm -rf "$work/broker"
}
trap cleanup EXIT
broker_pid=$("$kscope" lab broker status --dir "$work/broker" | awk '$1 == "pid" {print $2}')
[[ -n "$broker_pid" ]] || { echo "bench/sched-cost.sh: no broker pid" >&2; exit 1; }
for topic in orders payments; do
  "${java[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" --create --if-not-exists \
    --topic "$topic" --partitions 6 >/dev/null
done

# load: the demo's two producers for DURATION seconds.
load() {
  local pids=()
  for topic in orders payments; do
    "${java[@]}" org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records $((2000 * duration)) \
      --record-size 512 --throughput 2000 --producer-props "bootstrap.servers=127.0.0.1:$port" linger.ms=2 acks=all \
      >/dev/null 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
}
ticks=$(getconf CLK_TCK)
bpf_ns() { cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "run_time_ns:" {t += $2} END {printf "%d\n", t}'; }
proc_ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
ctxt() { awk '$1 == "ctxt" {print $2}' /proc/stat; }

# traced MODE: the load under iotrace; prints "cpu% switches/s events".
traced() {
  local extra=()
  [[ "$1" == on ]] && extra=(--runq --runq-min "$runq_min" --conns)
  sysctl -q -w kernel.bpf_stats_enabled=1
  "$kscope" iotrace --pid "$broker_pid" --min-latency 1ms --waits "${extra[@]}" --format json \
    >"$work/iotrace.out" 2>"$work/iotrace.err" &
  iot_pid=$!
  for _ in $(seq 100); do grep -q "tracing pid" "$work/iotrace.err" && break; sleep 0.1; done
  grep -q "tracing pid" "$work/iotrace.err" || { cat "$work/iotrace.err" >&2; exit 1; }
  local t0 t1 cpu0 cpu1 bpf0 bpf1 c0 c1
  bpf0=$(bpf_ns "$iot_pid"); cpu0=$(proc_ticks "$iot_pid"); c0=$(ctxt); t0=$(date +%s%N)
  load
  t1=$(date +%s%N); c1=$(ctxt); bpf1=$(bpf_ns "$iot_pid"); cpu1=$(proc_ticks "$iot_pid")
  kill -INT "$iot_pid"; wait "$iot_pid"; iot_pid=""
  sysctl -q -w kernel.bpf_stats_enabled=0
  local events
  events=$(grep -c '"kind":"\(run_delay\|wakeup\|conn_thread\)"' "$work/iotrace.out" || true)
  awk -v b=$((bpf1 - bpf0)) -v c=$((cpu1 - cpu0)) -v hz="$ticks" -v w=$((t1 - t0)) -v n="$(nproc)" \
    -v s=$((c1 - c0)) -v e="$events" 'BEGIN{printf "%.3f %.0f %d\n", (b + c * 1e9 / hz) / (w * n) * 100, s / (w / 1e9), e}'
}

load >/dev/null # warm-up: JIT, segments
rows=""
declare -a diffs
for i in $(seq "$trials"); do
  if ((i % 2)); then a=$(traced off); b=$(traced on); else b=$(traced on); a=$(traced off); fi
  read -r ac as _ <<<"$a"; read -r bc bs be <<<"$b"
  d=$(awk -v a="$ac" -v b="$bc" 'BEGIN{printf "%.3f", b - a}')
  diffs+=("$d")
  rows+="| $i | $ac | $as | $bc | $bs | $be | $d |"$'\n'
done
echo "broker: kscope lab broker; load: 2 x ProducerPerformance 2000 records/s x 512 B, acks=all, linger.ms=2, ${duration} s; $(nproc) cores"
echo "off: kscope iotrace --min-latency 1ms --waits; on: the same plus --runq --runq-min $runq_min --conns; $trials trials, order alternating"
echo
echo "| trial | off tracing CPU % | off switches/s | on tracing CPU % | on switches/s | on events (run delays, wake-ups, connections) | on - off, % of the machine |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s' "$rows"
echo
printf '%s\n' "${diffs[@]}" | sort -g | awk '{v[NR]=$1} END{m = (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "the scheduling evidence costs %.3f%% of the machine (median of %d trials; range %.3f%% to %.3f%%)\n", m, NR, v[1], v[NR]}'

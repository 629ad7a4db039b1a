#!/usr/bin/env bash
# bench/iotrace.sh: what `kscope iotrace` costs a broker. One broker (kscope
# lab broker), ProducerPerformance at full speed (--throughput -1), TRIALS
# pairs of runs in the same broker: one without iotrace, one with
# `kscope iotrace --min-latency 10ms` (system calls, and with --journal, the
# default, jbd2/ext4/XFS/block tracepoints) attached for the whole run. The
# order alternates (off,on then on,off) so that drift (page cache, JIT,
# segment rolls) does not favour one side. Prints a Markdown table:
# throughput and ProducerPerformance's p99 per run, medians, and the median
# throughput change.
#
#   bench/iotrace.sh            # TRIALS=5 RECORDS=500000 SIZE=512 ACKS=all
#   JOURNAL=false bench/iotrace.sh   # system calls only
#
# Needs root (eBPF). bench/iotrace-results.md holds a run's output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-iotbench}"
port="${KSCOPE_BENCH_PORT:-19094}"
trials="${TRIALS:-5}"
records="${RECORDS:-500000}"
size="${SIZE:-512}"
acks="${ACKS:-all}"
journal="${JOURNAL:-true}"
mkdir -p "$work"
scripts/setup.sh >/dev/null
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
kscope="$root/bin/kscope"
libs="$(scripts/kafka-jars.sh)"

"$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
rm -rf "$work/broker"
"$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
iot_pid=""
cleanup() {
  if [[ -n "$iot_pid" ]]; then kill -INT "$iot_pid" 2>/dev/null || true; wait "$iot_pid" 2>/dev/null || true; fi
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  rm -rf "$work/broker"
}
trap cleanup EXIT
broker_pid=$("$kscope" lab broker status --dir "$work/broker" | awk '$1 == "pid" {print $2}')
[[ -n "$broker_pid" ]] || { echo "bench/iotrace.sh: no broker pid" >&2; exit 1; }

# perf TOPIC: ProducerPerformance's summary line -> "records/s MB/s p99_ms".
perf() {
  java -Xmx512m -cp "$libs/*" org.apache.kafka.tools.ProducerPerformance --topic "$1" --num-records "$records" \
    --record-size "$size" --throughput -1 --producer-props "bootstrap.servers=127.0.0.1:$port" "acks=$acks" linger.ms=5 \
    | tail -1 | sed -E 's/.* records sent, ([0-9.]+) records\/sec \(([0-9.]+) MB\/sec\).* ([0-9]+) ms 99th.*/\1 \2 \3/'
}

# traced TOPIC: perf with kscope iotrace attached from before the first
# record to after the last; prints "records/s MB/s p99_ms events".
traced() {
  "$kscope" iotrace --pid "$broker_pid" --min-latency 10ms --journal="$journal" --format json \
    >"$work/iotrace.out" 2>"$work/iotrace.err" &
  iot_pid=$!
  for _ in $(seq 100); do grep -q "tracing pid" "$work/iotrace.err" && break; sleep 0.1; done
  grep -q "tracing pid" "$work/iotrace.err" || { cat "$work/iotrace.err" >&2; exit 1; }
  local r
  r=$(perf "$1")
  kill -INT "$iot_pid"; wait "$iot_pid"; iot_pid=""
  if grep -q WARNING "$work/iotrace.err"; then cat "$work/iotrace.err" >&2; fi
  echo "$r $(wc -l <"$work/iotrace.out")"
}

perf warmup >/dev/null
declare -a off on
rows=""
for i in $(seq "$trials"); do
  if ((i % 2)); then a=$(perf "off-$i"); b=$(traced "on-$i"); else b=$(traced "on-$i"); a=$(perf "off-$i"); fi
  off+=("$a"); on+=("$b")
  read -r ar am ap <<<"$a"; read -r br bm bp be <<<"$b"
  rows+="| $i | $ar | $am | $ap | $br | $bm | $bp | $be |"$'\n'
done

median() { sort -g | awk '{v[NR]=$1} END{if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
off_r=$(printf '%s\n' "${off[@]}" | cut -d' ' -f1 | median)
on_r=$(printf '%s\n' "${on[@]}" | cut -d' ' -f1 | median)
off_p=$(printf '%s\n' "${off[@]}" | cut -d' ' -f3 | median)
on_p=$(printf '%s\n' "${on[@]}" | cut -d' ' -f3 | median)

echo "broker: kscope lab broker (log dir $work/broker/data on $(df --output=source,fstype "$work" | tail -1 | tr -s ' ')),"
echo "ProducerPerformance: $records x $size B records, acks=$acks, linger.ms=5, --throughput -1; $(nproc) cores;"
echo "kscope iotrace --min-latency 10ms --journal=$journal --format json; $trials trials, order alternating"
echo
echo "| trial | off records/s | off MB/s | off p99 ms | on records/s | on MB/s | on p99 ms | events |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s' "$rows"
echo
# Paired: each trial's on/off ratio, whose median resists a slow outlier
# on either side better than the ratio of medians.
pair_med=$(for i in "${!off[@]}"; do
  awk -v a="${off[$i]%% *}" -v b="${on[$i]%% *}" 'BEGIN{printf "%.4f\n", (b-a)/a*100}'
done | median)
pair_min=$(for i in "${!off[@]}"; do awk -v a="${off[$i]%% *}" -v b="${on[$i]%% *}" 'BEGIN{printf "%.4f\n", (b-a)/a*100}'; done | sort -g | head -1)
pair_max=$(for i in "${!off[@]}"; do awk -v a="${off[$i]%% *}" -v b="${on[$i]%% *}" 'BEGIN{printf "%.4f\n", (b-a)/a*100}'; done | sort -g | tail -1)
awk -v a="$off_r" -v b="$on_r" -v pa="$off_p" -v pb="$on_p" -v pm="$pair_med" -v lo="$pair_min" -v hi="$pair_max" \
  'BEGIN{printf "median: off %.0f records/s, p99 %s ms; on %.0f records/s, p99 %s ms; throughput change %+.1f%% (ratio of medians), %+.1f%% (median of paired trials; range %+.1f%% to %+.1f%%)\n", a, pa, b, pb, (b-a)/a*100, pm, lo, hi}'

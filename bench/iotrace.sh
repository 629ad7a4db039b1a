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
# The A/B difference is noisy on a small VM, so the traced runs also
# measure tracing's CPU directly: the run time of iotrace's BPF programs
# (kernel.bpf_stats_enabled, read from /proc/PID/fdinfo of iotrace's
# program descriptors) and iotrace's own CPU time (/proc/PID/stat), as a
# share of the CPU the machine had during the run (wall time x cores).
# That share leaves out one cost: while any syscalls tracepoint is attached,
# every system call of every thread takes the kernel's tracing entry path.
#
# FS=ram-ext4 (default) puts the broker's data on ext4 on a loop device
# backed by a file in /dev/shm: a real file system, journal and block
# layer, without the host disk's noise (the broker is then CPU-bound, the
# harshest case for a tracer's relative cost). FS=root uses the root disk.
#
#   bench/iotrace.sh            # TRIALS=10 RECORDS=500000 SIZE=512 ACKS=all
#   JOURNAL=false bench/iotrace.sh   # system calls only
#
# Needs root (eBPF). bench/iotrace-results.md holds a run's output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-iotbench}"
port="${KSCOPE_BENCH_PORT:-19094}"
trials="${TRIALS:-10}"
fs="${FS:-ram-ext4}"
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
if mountpoint -q "$work/broker"; then umount "$work/broker"; fi
rm -rf "$work/broker"
mkdir -p "$work/broker"
backing=/dev/shm/kscope-iotbench.img
if [[ "$fs" == ram-ext4 ]]; then
  rm -f "$backing"
  # Sparse: only what the broker writes takes memory (about RECORDS x SIZE
  # per run, 2 x TRIALS + 1 runs).
  truncate -s $(( (2 * trials + 2) * records * (size + 100) / 1048576 + 1024 ))M "$backing"
  mkfs.ext4 -q -F "$backing"
  mount -o loop "$backing" "$work/broker"
fi
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
"$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
iot_pid=""
cleanup() {
  if [[ -n "$iot_pid" ]]; then kill -INT "$iot_pid" 2>/dev/null || true; wait "$iot_pid" 2>/dev/null || true; fi
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  sysctl -q -w kernel.bpf_stats_enabled="$stats_before" || true
  # The broker's JVM may still be closing its files for a moment.
  for _ in $(seq 20); do
    if ! mountpoint -q "$work/broker" || umount "$work/broker" 2>/dev/null; then break; fi
    sleep 0.5
  done
  rm -rf "$work/broker" "$backing"
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
# record to after the last; prints "records/s MB/s p99_ms events cpu%",
# cpu% being iotrace's BPF run time plus its own CPU time over wall time x
# cores for the run.
ticks=$(getconf CLK_TCK)
traced() {
  sysctl -q -w kernel.bpf_stats_enabled=1
  "$kscope" iotrace --pid "$broker_pid" --min-latency 10ms --journal="$journal" --format json \
    >"$work/iotrace.out" 2>"$work/iotrace.err" &
  iot_pid=$!
  for _ in $(seq 100); do grep -q "tracing pid" "$work/iotrace.err" && break; sleep 0.1; done
  grep -q "tracing pid" "$work/iotrace.err" || { cat "$work/iotrace.err" >&2; exit 1; }
  local r t0 t1 cpu0 cpu1 bpf0 bpf1
  bpf0=$(bpf_ns "$iot_pid"); cpu0=$(proc_ticks "$iot_pid"); t0=$(date +%s%N)
  r=$(perf "$1")
  t1=$(date +%s%N); bpf1=$(bpf_ns "$iot_pid"); cpu1=$(proc_ticks "$iot_pid")
  kill -INT "$iot_pid"; wait "$iot_pid"; iot_pid=""
  sysctl -q -w kernel.bpf_stats_enabled=0
  if grep -q WARNING "$work/iotrace.err"; then cat "$work/iotrace.err" >&2; fi
  local share
  share=$(awk -v b=$((bpf1 - bpf0)) -v c=$((cpu1 - cpu0)) -v hz="$ticks" -v w=$((t1 - t0)) -v n="$(nproc)" \
    'BEGIN{printf "%.2f", (b + c * 1e9 / hz) / (w * n) * 100}')
  echo "$r $(wc -l <"$work/iotrace.out") $share"
}
# bpf_ns PID: total run time (ns) of the BPF programs PID holds open.
bpf_ns() {
  cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "run_time_ns:" {t += $2} END {printf "%d\n", t}'
}
# proc_ticks PID: user + system CPU time of PID, in clock ticks.
proc_ticks() {
  awk '{print $14 + $15}' /proc/"$1"/stat
}

perf warmup >/dev/null
declare -a off on
rows=""
for i in $(seq "$trials"); do
  if ((i % 2)); then a=$(perf "off-$i"); b=$(traced "on-$i"); else b=$(traced "on-$i"); a=$(perf "off-$i"); fi
  off+=("$a"); on+=("$b")
  read -r ar am ap <<<"$a"; read -r br bm bp be bc <<<"$b"
  rows+="| $i | $ar | $am | $ap | $br | $bm | $bp | $be | $bc |"$'\n'
done

median() { sort -g | awk '{v[NR]=$1} END{if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
off_r=$(printf '%s\n' "${off[@]}" | cut -d' ' -f1 | median)
on_r=$(printf '%s\n' "${on[@]}" | cut -d' ' -f1 | median)
off_p=$(printf '%s\n' "${off[@]}" | cut -d' ' -f3 | median)
on_p=$(printf '%s\n' "${on[@]}" | cut -d' ' -f3 | median)

where=$(df --output=source,fstype "$work/broker" | tail -1 | tr -s ' ')
[[ "$fs" == ram-ext4 ]] && where="$where: a loop device backed by $backing"
echo "broker: kscope lab broker (log dir $work/broker/data on $where),"
echo "ProducerPerformance: $records x $size B records, acks=$acks, linger.ms=5, --throughput -1; $(nproc) cores;"
echo "kscope iotrace --min-latency 10ms --journal=$journal --format json; $trials trials, order alternating"
echo
echo "| trial | off records/s | off MB/s | off p99 ms | on records/s | on MB/s | on p99 ms | events | tracing CPU % |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
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

# What an attached syscalls tracepoint costs every other process: dd
# copying 1 MB one byte at a time (2 million read and write calls) with and
# without iotrace attached to the broker, best of 3 each. While any
# syscalls tracepoint is attached, every system call of every thread takes
# the kernel's tracing entry and exit path, and write calls also run
# iotrace's programs (which return at the process check).
dd_best() {
  local best=""
  for _ in 1 2 3; do
    local s
    /usr/bin/time -f %e -o "$work/dd.time" dd if=/dev/zero of=/dev/null bs=1 count=1000000 2>/dev/null
    s=$(tail -1 "$work/dd.time")
    if [[ -z "$best" ]] || awk "BEGIN{exit !($s < $best)}"; then best=$s; fi
  done
  echo "$best"
}
dd_off=$(dd_best)
"$kscope" iotrace --pid "$broker_pid" --min-latency 10ms --journal="$journal" --format json >/dev/null 2>"$work/iotrace.err" &
iot_pid=$!
for _ in $(seq 100); do grep -q "tracing pid" "$work/iotrace.err" && break; sleep 0.1; done
dd_on=$(dd_best)
kill -INT "$iot_pid"; wait "$iot_pid"; iot_pid=""
awk -v a="$dd_off" -v b="$dd_on" 'BEGIN{printf "another process'"'"'s system calls (dd, 2 million read/write calls): %.3f s without, %.3f s with iotrace attached: %+.0f ns per call\n", a, b, (b-a)/2e6*1e9}'
# How many system calls the machine makes at the broker's maximum rate
# (perf counting raw_syscalls:sys_enter for 5 s of an untraced run), to
# turn the per-call cost into a share of the machine.
if [[ -n "$(type -P perf)" ]]; then  # the binary, not the perf function above
  records=$((records * 3)) perf "sysrate" >/dev/null &  # long enough for the 5 s window
  perf_pid=$!
  sleep 4
  calls=$(command perf stat -x, -e raw_syscalls:sys_enter -a -- sleep 5 2>&1 | awk -F, '/sys_enter/ {print $1}')
  wait "$perf_pid"
  med_cpu=$(printf '%s\n' "${on[@]}" | cut -d' ' -f5 | median)
  awk -v c="$calls" -v a="$dd_off" -v b="$dd_on" -v n="$(nproc)" -v t="$med_cpu" 'BEGIN{
    share = c / 5 * (b - a) / 2e6 / n * 100
    printf "system calls at the maximum rate: %.0f/s; at that cost per call: %.2f%% of the machine; with the tracing CPU above (median %.2f%%): about %.2f%% in all (an upper bound: dd'"'"'s cost per call includes program runs the tracing CPU counts too)\n", c / 5, share, t, share + t}'
else
  echo "perf not installed: no system call rate (apt-get install linux-perf)"
fi
cpu_med=$(printf '%s\n' "${on[@]}" | cut -d' ' -f5 | median)
cpu_max=$(printf '%s\n' "${on[@]}" | cut -d' ' -f5 | sort -g | tail -1)
echo "tracing CPU (BPF programs + iotrace process) over wall time x $(nproc) cores: median ${cpu_med}%, max ${cpu_max}%"

#!/usr/bin/env bash
# bench/bench.sh: `kscope bench run --rate max` against Kafka's own
# ProducerPerformance (org.apache.kafka.tools, the kafka-producer-perf-test
# tool): maximum produce throughput and client CPU per message. Same
# broker (one `kscope lab broker`, fresh), same settings for both clients
# (one producer, SIZE-byte values without keys, acks=all, idempotent,
# linger 5 ms, 64 KiB batches, no compression, 5 requests in flight), a
# fresh topic of PARTITIONS partitions for every run, TRIALS pairs of runs
# with the order alternating so drift (page cache, segment rolls) favours
# neither. Client CPU is the user+system time of the whole client process
# (bash's `time`: the JVM's start-up and JIT included, as a user pays
# them), divided by the messages it got acknowledged. kscope runs with
# --consumers 0 (ProducerPerformance does not consume) but still stamps its
# two headers (message id, send time) on every record, 33 bytes more per
# record than ProducerPerformance sends.
#
#   bench/bench.sh                  # TRIALS=4 RECORDS=2000000 DURATION=20 SIZE=1024 PARTITIONS=6
#   KSCOPE_BIN=/path/kscope bench/bench.sh   # a prebuilt kscope (default: go build ./cmd/kscope)
#
# Prints a Markdown table; bench/bench-results.md holds a run's output.
set -euo pipefail
shopt -s inherit_errexit
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-benchcmp}"
port="${KSCOPE_BENCH_PORT:-19095}"
trials="${TRIALS:-4}"
records="${RECORDS:-2000000}" # per ProducerPerformance run
duration="${DURATION:-20}"    # seconds per kscope run
size="${SIZE:-1024}"
partitions="${PARTITIONS:-6}"
acks=all linger_ms=5 batch=65536
mkdir -p "$work"
scripts/setup.sh >/dev/null
if [[ -z "${KSCOPE_BIN:-}" ]]; then
  CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
  kscope="$root/bin/kscope"
else
  kscope="$KSCOPE_BIN"
fi
"$kscope" bench run --help >/dev/null 2>&1 ||
  { echo "bench/bench.sh: $kscope has no 'bench run' command (set KSCOPE_BIN)" >&2; exit 1; }
libs="$(scripts/kafka-jars.sh)"
java=(java -Xmx512m -cp "$libs/*")

"$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
rm -rf "$work/broker" "$work/last-topic"
"$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
cleanup() {
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  rm -rf "$work/broker"
}
trap cleanup EXIT
bootstrap="127.0.0.1:$port"

# fresh_topic NAME: drop the previous run's topic (frees the disk) and
# create NAME. (Runs happen in subshells: the last topic is kept in a file.)
fresh_topic() {
  local last
  last="$(cat "$work/last-topic" 2>/dev/null || true)"
  if [[ -n "$last" ]]; then
    "${java[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --delete --topic "$last" >/dev/null
  fi
  "${java[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic "$1" \
    --partitions "$partitions" --replication-factor 1 >/dev/null
  echo "$1" >"$work/last-topic"
}

# timed OUT CMD...: runs CMD (stdout to OUT, stderr to OUT.err) and prints
# its user+system CPU seconds.
timed() {
  local out="$1" t
  shift
  t="$( { TIMEFORMAT='%U %S'; time "$@" >"$out" 2>"$out.err"; } 2>&1)" || { cat "$out.err" >&2; exit 1; }
  awk '{printf "%.2f", $1 + $2}' <<<"$t"
}

# pp TOPIC -> "msgs/s cpu_s messages"
pp() {
  fresh_topic "$1"
  local cpu line
  cpu=$(timed "$work/$1.txt" "${java[@]}" org.apache.kafka.tools.ProducerPerformance --topic "$1" \
    --num-records "$records" --record-size "$size" --throughput -1 --producer-props "bootstrap.servers=$bootstrap" \
    "acks=$acks" enable.idempotence=true "linger.ms=$linger_ms" "batch.size=$batch" compression.type=none \
    max.in.flight.requests.per.connection=5)
  line="$(tail -1 "$work/$1.txt")"
  # "2000000 records sent, 100487.4 records/sec (98.13 MB/sec), ..."
  sed -E 's/^([0-9]+) records sent, ([0-9.]+) records\/sec.*/\2 '"$cpu"' \1/' <<<"$line"
}

# ks TOPIC -> "msgs/s cpu_s messages"
ks() {
  fresh_topic "$1"
  local cpu rate acked
  cpu=$(timed "$work/$1.txt" "$kscope" bench run --bootstrap "$bootstrap" --topic "$1" --rate max \
    --producers 1 --consumers 0 --duration "${duration}s" --warmup 0s --message-size "$size" \
    --acks "$acks" --idempotent --linger "${linger_ms}ms" --batch-bytes "$batch" --compression none \
    --max-in-flight 5 --out "$work/$1.json" -q)
  # "PATH: 20.0 s measured, 138501 msg/s, 141.83 MB/s, client CPU 2.60 µs/msg"
  rate=$(sed -nE '1s/.* s measured, ([0-9.]+) msg\/s.*/\1/p' "$work/$1.txt")
  # "messages: sent 2820441, acked 2820441, failed 0"
  acked=$(sed -nE 's/^messages: sent [0-9]+, acked ([0-9]+).*/\1/p' "$work/$1.txt")
  echo "$rate $cpu $acked"
}

# Per message and per MB (10^6 bytes of values).
row() { awk -v s="$size" '{printf "%.0f | %.1f | %.2f | %d | %.2f", $1, $1 * s / 1e6, $2, $3, $2 / $3 * 1e6}' <<<"$1"; }

pp warmup-pp >/dev/null # the broker's first run (JIT, page cache) counts for neither
declare -a pps kss
rows=""
for i in $(seq "$trials"); do
  if ((i % 2)); then
    a=$(pp "pp-$i"); b=$(ks "ks-$i"); order="pp, kscope"
  else
    b=$(ks "ks-$i"); a=$(pp "pp-$i"); order="kscope, pp"
  fi
  pps+=("$a"); kss+=("$b")
  rows+="| $i | $order | $(row "$a") | $(row "$b") |"$'\n'
done

median() { sort -g | awk '{v[NR]=$1} END{if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
rates() { printf '%s\n' "$@" | awk '{print $1}'; }
permsg() { printf '%s\n' "$@" | awk '{print $2 / $3 * 1e6}'; }
pp_rate=$(rates "${pps[@]}" | median); ks_rate=$(rates "${kss[@]}" | median)
pp_cpu=$(permsg "${pps[@]}" | median); ks_cpu=$(permsg "${kss[@]}" | median)

fs="$(findmnt -n -o SOURCE,FSTYPE --target "$work/broker/data" | tr -s ' ')"
echo "broker: kscope lab broker (Kafka $(basename "$(dirname "$libs")" | sed 's/kafka-//'), log dir on $fs); $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), kernel $(uname -r); clients on the same machine"
echo "both: 1 producer, $size B values, no keys, acks=$acks, idempotent, linger ${linger_ms} ms, batches $batch B, no compression, 5 in flight; fresh $partitions-partition topic per run"
echo "ProducerPerformance: $records records, --throughput -1, java -Xmx512m; kscope bench run: --rate max, ${duration} s, --consumers 0"
echo "$trials trials, order alternating; CPU = user+system of the client process / messages acknowledged"
echo
echo "| trial | order | PP msg/s | PP MB/s | PP CPU s | PP msgs | PP CPU µs/msg | kscope msg/s | kscope MB/s | kscope CPU s | kscope msgs | kscope CPU µs/msg |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s' "$rows"
echo
awk -v pr="$pp_rate" -v kr="$ks_rate" -v pc="$pp_cpu" -v kc="$ks_cpu" 'BEGIN {
  printf "median: ProducerPerformance %.0f msg/s, %.2f µs CPU/msg; kscope %.0f msg/s, %.2f µs CPU/msg; throughput %+.1f%%, CPU per message %+.1f%%\n",
    pr, pc, kr, kc, 100 * (kr / pr - 1), 100 * (kc / pc - 1) }'

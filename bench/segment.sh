#!/usr/bin/env bash
# bench/segment.sh: read throughput and peak memory of `kscope segment dump`
# side by side with Kafka's own DumpLogSegments, on the same segment written
# by a real broker, whole process, page cache warm.
#
#   bench/segment.sh [SEGMENT.log]
#
# Without SEGMENT it writes one: a broker (kscope lab broker) and
# ProducerPerformance sending RECORDS x SIZE-byte records (default
# 1100000 x 512, CODEC none, acks=1, linger.ms=5: about 600 MB in one
# segment, below the default 1 GiB segment.bytes), then stops the broker so
# the segment is flushed. DumpLogSegments runs with the JVM options
# kafka-dump-log.sh gives it (kafka-run-class.sh's defaults). Every tool
# writes to /dev/null; best of RUNS (default 3) wall times. Prints a
# Markdown table; bench/segment-results.md holds its output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-segbench}"
port="${KSCOPE_BENCH_PORT:-19093}"
records="${RECORDS:-1100000}"
size="${SIZE:-512}"
codec="${CODEC:-none}"
runs="${RUNS:-3}"
mkdir -p "$work"
scripts/setup.sh
libs="$(scripts/kafka-jars.sh)"
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
kscope="$root/bin/kscope"

segment="${1:-}"
written="given on the command line"
if [[ -z "$segment" ]]; then
  written="written by ProducerPerformance: $records x $size B records, compression $codec, acks=1, linger.ms=5"
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null
  rm -rf "$work/broker"
  "$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
  trap '"$kscope" lab broker stop --dir "$work/broker" >/dev/null' EXIT
  java -Xmx512m -cp "$libs/*" org.apache.kafka.tools.ProducerPerformance --topic segbench --num-records "$records" \
    --record-size "$size" --throughput -1 --producer-props "bootstrap.servers=127.0.0.1:$port" acks=1 linger.ms=5 \
    compression.type="$codec" >/dev/null
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null
  trap - EXIT
  segment="$work/broker/data/segbench-0/00000000000000000000.log"
fi
bytes=$(stat -c %s "$segment")
cat "$segment" >/dev/null # into the page cache

# run LABEL CMD...: best wall seconds of RUNS, and that run's peak RSS (MiB).
run() {
  local label=$1; shift
  local best_s="" best_m=""
  for _ in $(seq "$runs"); do
    # This VM's kernel runs DAMON reclaim (kdamond), which evicts cold
    # page cache: read the input right before every timed run.
    cat "$segment" >/dev/null
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
    read -r s kb <"$work/time"
    if [[ -z "$best_s" ]] || awk "BEGIN{exit !($s < $best_s)}"; then best_s=$s; best_m=$((kb / 1024)); fi
  done
  echo "$label $best_s $best_m"
}

# kafka-dump-log.sh -> kafka-run-class.sh defaults.
jvm=(java -Xmx256M -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true -cp "$libs/*" kafka.tools.DumpLogSegments --files "$segment")

summary=$("$kscope" segment dump "$segment" 2>&1 >/dev/null | tail -1 | sed 's/.*: \([0-9]* batches\)/\1/')
k_batches=$(run kscope-batches "$kscope" segment dump -q "$segment")
k_records=$(run kscope-records "$kscope" segment dump -q --records "$segment")
k_json=$(run kscope-records-json "$kscope" segment dump -q --records --format json "$segment")
d_batches=$(run dls-batches "${jvm[@]}")
d_records=$(run dls-deep "${jvm[@]}" --deep-iteration)

mb=$(awk "BEGIN{printf \"%.1f\", $bytes/1e6}")
echo
echo "segment: $segment, $mb MB: $summary"
echo "($written); $(nproc) cores; page cache warm; best of $runs wall times; output to /dev/null"
echo
echo "| tool | wall s | MB/s | peak RSS MiB |"
echo "| --- | ---: | ---: | ---: |"
row() {
  read -r _ s m <<<"$1"
  awk -v name="$2" -v s="$s" -v m="$m" -v b="$bytes" 'BEGIN{printf "| %s | %.2f | %.0f | %d |\n", name, s, (s > 0 ? b/1e6/s : 0), m}'
}
row "$k_batches" "kscope segment dump (batches)"
row "$d_batches" "DumpLogSegments (batches)"
row "$k_records" "kscope segment dump --records"
row "$k_json" "kscope segment dump --records --format json"
row "$d_records" "DumpLogSegments --deep-iteration"
ratio() { awk -v a="$(echo "$1" | cut -d' ' -f2)" -v b="$(echo "$2" | cut -d' ' -f2)" 'BEGIN{printf "%.1f", a/b}'; }
echo
echo "batches: kscope is $(ratio "$d_batches" "$k_batches")x faster than DumpLogSegments; records: $(ratio "$d_records" "$k_records")x (table), $(ratio "$d_records" "$k_json")x (JSON)"

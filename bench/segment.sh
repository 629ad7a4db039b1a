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
# writes to /dev/null; best of RUNS (default 5) interleaved rounds. Prints a
# Markdown table; bench/segment-results.md holds its output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-segbench}"
port="${KSCOPE_BENCH_PORT:-19093}"
records="${RECORDS:-1100000}"
size="${SIZE:-512}"
codec="${CODEC:-none}"
runs="${RUNS:-5}"
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

# kafka-dump-log.sh -> kafka-run-class.sh defaults.
jvm=(java -Xmx256M -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true -cp "$libs/*" kafka.tools.DumpLogSegments --files "$segment")

# One round times every command once, in turn; RUNS rounds. Interleaving
# puts both tools under the same conditions (this VM's speed drifts by
# 10-30% over minutes). This VM's kernel runs DAMON reclaim (kdamond),
# which evicts cold page cache: the input is read right before every timed
# run. Each command's best round is reported, and the ratios of every round.
declare -A best_s best_m last
timed() { # LABEL CMD...
  local label=$1; shift
  cat "$segment" >/dev/null
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  local s kb
  read -r s kb <"$work/time"
  last[$label]=$s
  if [[ -z "${best_s[$label]:-}" ]] || awk "BEGIN{exit !($s < ${best_s[$label]})}"; then
    best_s[$label]=$s best_m[$label]=$((kb / 1024))
  fi
}
summary=$("$kscope" segment dump "$segment" 2>&1 >/dev/null | tail -1 | sed 's/.*: \([0-9]* batches\)/\1/')
ratios_b=() ratios_r=()
q() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", (b > 0 ? a/b : 0)}'; }
for _ in $(seq "$runs"); do
  timed kscope-batches "$kscope" segment dump -q "$segment"
  timed dls-batches "${jvm[@]}"
  timed kscope-records "$kscope" segment dump -q --records "$segment"
  timed kscope-records-json "$kscope" segment dump -q --records --format json "$segment"
  timed dls-deep "${jvm[@]}" --deep-iteration
  ratios_b+=("$(q "${last[dls-batches]}" "${last[kscope-batches]}")")
  ratios_r+=("$(q "${last[dls-deep]}" "${last[kscope-records]}")")
done

mb=$(awk "BEGIN{printf \"%.1f\", $bytes/1e6}")
echo
echo "segment: $segment, $mb MB: $summary"
echo "($written); $(nproc) cores; page cache warm; best of $runs interleaved rounds; output to /dev/null"
echo
echo "| tool | wall s | MB/s | peak RSS MiB |"
echo "| --- | ---: | ---: | ---: |"
row() { # LABEL NAME
  awk -v name="$2" -v s="${best_s[$1]}" -v m="${best_m[$1]}" -v b="$bytes" 'BEGIN{printf "| %s | %.2f | %.0f | %d |\n", name, s, (s > 0 ? b/1e6/s : 0), m}'
}
row kscope-batches "kscope segment dump (batches)"
row dls-batches "DumpLogSegments (batches)"
row kscope-records "kscope segment dump --records"
row kscope-records-json "kscope segment dump --records --format json"
row dls-deep "DumpLogSegments --deep-iteration"
echo
echo "best against best: batches $(q "${best_s[dls-batches]}" "${best_s[kscope-batches]}")x faster than DumpLogSegments;" \
  "records $(q "${best_s[dls-deep]}" "${best_s[kscope-records]}")x (table), $(q "${best_s[dls-deep]}" "${best_s[kscope-records-json]}")x (JSON)"
echo "per round: batches ${ratios_b[*]}; records (table) ${ratios_r[*]}"

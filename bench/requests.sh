#!/usr/bin/env bash
# bench/requests.sh: decode throughput and peak memory of `kscope requests`
# side by side with tshark's Kafka dissector, on the same produce-heavy
# capture of a real broker, one core each (taskset -c 0).
#
#   bench/requests.sh [CAPTURE]
#
# Without CAPTURE it records one: a broker (kscope lab broker), tcpdump on
# its port, and ProducerPerformance sending RECORDS x SIZE-byte records
# (default 250000 x 512, uncompressed: about 140 MB of capture). They run in
# a network namespace of their own whose loopback has a 1500-byte MTU and no
# segmentation offload, so the capture has the packet sizes of a capture
# taken on a real NIC (plain loopback would carry 64 KiB segments, which
# flatters every per-packet cost). MTU=65536 records a plain-loopback one.
# Prints a Markdown table; bench/requests-results.md has its figures.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-bench}"
port="${KSCOPE_BENCH_PORT:-19092}"
records="${RECORDS:-250000}"
size="${SIZE:-512}"
mkdir -p "$work"
scripts/setup.sh
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
kscope="$root/bin/kscope"

capture="${1:-}"
if [[ -z "$capture" ]]; then
  capture="$work/produce-mtu${MTU:-1500}.pcap"
  libs="$(scripts/kafka-jars.sh)"
  ns=kscope-bench
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  inns=(ip netns exec "$ns")
  "${inns[@]}" ip link set lo up mtu "${MTU:-1500}"
  "${inns[@]}" ethtool -K lo tso off gso off gro off >/dev/null 2>&1 || true
  rm -rf "$work/broker" "$capture"
  "${inns[@]}" "$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
  trap '"$kscope" lab broker stop --dir "$work/broker" >/dev/null; ip netns del "$ns" 2>/dev/null || true' EXIT
  "${inns[@]}" tcpdump -i lo -s 0 -B 262144 -U --immediate-mode -Z root -w "$capture" "tcp port $port" 2>"$work/tcpdump.err" &
  tcpdump_pid=$!
  for _ in $(seq 50); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.1; done
  "${inns[@]}" java -Xmx512m -cp "$libs/*" org.apache.kafka.tools.ProducerPerformance --topic bench --num-records "$records" \
    --record-size "$size" --throughput -1 --producer-props "bootstrap.servers=127.0.0.1:$port" acks=1 linger.ms=5 >/dev/null
  sleep 1
  kill -INT "$tcpdump_pid"; wait "$tcpdump_pid" || true
  grep -h "dropped by kernel" "$work/tcpdump.err" >&2 || true
fi

bytes=$(stat -c %s "$capture")
half="$work/half.pcap"
packets=$(capinfos -c -M "$capture" | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')
editcap -F pcap -r "$capture" "$half" "1-$((packets / 2))" 2>/dev/null

# One round times every command once, on core 0, in turn; ROUNDS rounds
# (default 5). Interleaving puts the tools under the same conditions: this
# VM's speed drifts by 10-20% over minutes, and its kernel runs DAMON
# reclaim (kdamond), which evicts cold page cache, so the inputs are read
# right before every timed run. Each tool's best round is reported, and the
# ratio tshark/kscope of every round.
rounds="${ROUNDS:-5}"
declare -A best_s best_m
ratios=()
timed() { # LABEL CMD...: sets last_s, last_m and keeps the label's best
  local label=$1; shift
  cat "$capture" "$half" >/dev/null
  /usr/bin/time -f "%e %M" -o "$work/time" taskset -c 0 "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  read -r last_s kb <"$work/time"
  last_m=$((kb / 1024))
  if [[ -z "${best_s[$label]:-}" ]] || awk "BEGIN{exit !($last_s < ${best_s[$label]})}"; then
    best_s[$label]=$last_s best_m[$label]=$last_m
  fi
}

requests=$("$kscope" requests --port "$port" --format json -q "$capture" | wc -l)
tshark_fields=(-d "tcp.port==$port,kafka" -T fields -e frame.time_epoch -e kafka.request_key -e kafka.correlation_id)
for _ in $(seq "$rounds"); do
  timed kscope-json "$kscope" requests --port "$port" --format json -q "$capture"; k=$last_s
  timed tshark tshark -n -r "$capture" "${tshark_fields[@]}"; ratios+=("$(awk "BEGIN{printf \"%.1f\", $last_s/$k}")")
  timed kscope-summary "$kscope" requests --port "$port" --summary -q "$capture"
  timed kscope-half "$kscope" requests --port "$port" --summary -q "$half"
  timed tshark-half tshark -n -r "$half" "${tshark_fields[@]}"
done

mb=$(awk "BEGIN{printf \"%.1f\", $bytes/1e6}")
echo
echo "capture: $capture, $mb MB, $packets packets, $requests requests; one core (taskset -c 0), best of $rounds interleaved rounds"
echo
echo "| tool | wall s | MB/s | requests/s | peak RSS MiB (full) | peak RSS MiB (first half) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
row() { # LABEL HALF-LABEL NAME
  awk -v name="$3" -v s="${best_s[$1]}" -v m="${best_m[$1]}" -v hm="${best_m[$2]}" -v b="$bytes" -v r="$requests" \
    'BEGIN{printf "| %s | %.2f | %.0f | %.0f | %d | %s |\n", name, s, b/1e6/s, r/s, m, hm}'
}
row kscope-summary kscope-half "kscope requests --summary"
row kscope-json kscope-half "kscope requests --format json"
row tshark tshark-half "tshark -d tcp.port==$port,kafka -T fields"
sorted=$(printf '%s\n' "${ratios[@]}" | sort -n | tr '\n' ' ')
awk -v a="${best_s[tshark]}" -v b="${best_s[kscope-json]}" -v all="$sorted" \
  'BEGIN{n=split(all, r, " "); printf "\nkscope (json) is %.1fx faster than tshark (best against best); per round: %s(median %s)\n", a/b, all, r[int((n+1)/2)]}'

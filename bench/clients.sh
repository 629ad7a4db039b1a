#!/usr/bin/env bash
# bench/clients.sh: time and peak memory of `kscope clients` against what
# a user would otherwise run for per-client figures, on the same capture,
# one core each (taskset -c 0), in interleaved rounds:
#
#   kscope clients -q CAPTURE                     the per-client view
#   kscope requests -q --summary CAPTURE          the same decode, per-API latencies
#   kscope requests -q --format json CAPTURE      every request as a JSON line
#   kscope requests ... --format json | jq -s ... that, grouped by client in jq
#
# Issue 35 asks that `clients` be no slower than `requests` on a capture.
#
#   bench/clients.sh [CAPTURE]
#
# Without CAPTURE it records one of several clients of three kinds: a
# broker (kscope lab broker) in a network namespace whose loopback has a
# 1500-byte MTU and no segmentation offload (the packet sizes of a real
# NIC's capture, as bench/requests.sh), tcpdump on its port, and at once
#   - kscope bench run (franz-go): 4 producers and a group of 2 consumers,
#     FRANZ_RATE (default 8000) messages/s of 100 bytes for 15 s, linger 0
#     (many small requests: the per-request cost);
#   - ProducerPerformance, client id perf-lz4: RECORDS/4 records, lz4,
#     acks=all, at most 20000 records/s;
# then ProducerPerformance, client id perf-producer: RECORDS x SIZE-byte
# records (default 200000 x 512), acks=1, linger.ms=5, uncompressed, as
# fast as it goes (large batches: the bytes); then ConsumerPerformance
# (client id perf-consumer, group perf-group) reads them back (large
# fetch responses).
# ROUNDS rounds (default 5); each tool's median is reported.
#
# BEFORE_BIN=PATH adds `PATH requests -q --summary CAPTURE` to every round:
# an earlier build's decode of the same capture, the cost of what the
# decoder has learnt to read since (issue 35: each request's client
# information). KSCOPE_BIN=PATH times that build instead of building one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-bench-clients}"
port="${KSCOPE_BENCH_PORT:-19092}"
records="${RECORDS:-200000}"
size="${SIZE:-512}"
mkdir -p "$work"
scripts/setup.sh >/dev/null
if [[ -z "${KSCOPE_BIN:-}" ]]; then
  CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
  kscope="$root/bin/kscope"
else
  kscope="$KSCOPE_BIN"
fi

# record CAPTURE: the capture described above.
record() {
  local capture=$1 libs ns=kscope-bench-clients
  libs="$(scripts/kafka-jars.sh)"
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  local inns=(ip netns exec "$ns")
  "${inns[@]}" ip link set lo up mtu 1500
  "${inns[@]}" ethtool -K lo tso off gso off gro off >/dev/null 2>&1 || true
  rm -rf "$work/broker" "$capture"
  "${inns[@]}" "$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
  trap '"$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1; ip netns del '"$ns"' 2>/dev/null || true' EXIT
  "${inns[@]}" tcpdump -i lo -s 0 -B 262144 -U --immediate-mode -Z root -w "$capture" "tcp port $port" 2>"$work/tcpdump.err" &
  local tcpdump_pid=$!
  for _ in $(seq 50); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.1; done
  local java=("${inns[@]}" java -Xmx512m -cp "$libs/*") bs="127.0.0.1:$port"
  "${java[@]}" org.apache.kafka.tools.ProducerPerformance --topic bench-lz4 --num-records "$((records / 4))" --record-size "$size" \
    --throughput 20000 --producer-props "bootstrap.servers=$bs" acks=all compression.type=lz4 client.id=perf-lz4 >"$work/perf-lz4.out" &
  local p2=$!
  "${inns[@]}" "$kscope" bench run --bootstrap "$bs" --producers 4 --consumers 2 --rate "${FRANZ_RATE:-8000}" --message-size 100 --linger 0 \
    --warmup 2s --duration 15s --topic bench-franz -q -o "$work/franz.json" >"$work/franz.out" 2>&1 &
  local p3=$!
  wait "$p2" "$p3"
  "${java[@]}" org.apache.kafka.tools.ProducerPerformance --topic bench --num-records "$records" --record-size "$size" \
    --throughput -1 --producer-props "bootstrap.servers=$bs" acks=1 linger.ms=5 client.id=perf-producer >"$work/perf-producer.out"
  echo client.id=perf-consumer >"$work/consumer.properties"
  "${java[@]}" org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$bs" --topic bench --group perf-group \
    --messages "$records" --timeout 60000 --consumer.config "$work/consumer.properties" >"$work/perf-consumer.out"
  sleep 1
  kill -INT "$tcpdump_pid"
  wait "$tcpdump_pid" || true
  grep -h "dropped by kernel" "$work/tcpdump.err" >&2 || true
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  ip netns del "$ns" 2>/dev/null || true
  trap - EXIT
}

capture="${1:-}"
if [[ -z "$capture" ]]; then
  capture="$work/clients-mtu1500.pcap"
  record "$capture"
fi

# What people do with requests' JSON to get per-client figures: group it
# by client id and count requests, bytes and API versions.
jq_group='group_by(.client_id) | map({client_id: .[0].client_id, requests: length,
  bytes: (map(.request_bytes + .response_bytes) | add),
  versions: (group_by([.api, .api_version]) | map({api: .[0].api, version: .[0].api_version, requests: length}))})'

# One round times every command once, on core 0, in turn (interleaved:
# this VM's speed drifts by 10-20% over minutes). The capture is read
# right before every timed run: the kernel's DAMON reclaim evicts cold
# page cache.
rounds="${ROUNDS:-5}"
declare -A times rss
timed() { # LABEL CMD...: appends the run's seconds and peak RSS (MiB) to the label's
  local label=$1 s kb
  shift
  cat "$capture" >/dev/null
  /usr/bin/time -f "%e %M" -o "$work/time" taskset -c 0 "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  read -r s kb <"$work/time"
  times[$label]+="$s " rss[$label]+="$((kb / 1024)) "
}
ports=(--port "$port")
jqpipe="$kscope requests ${ports[*]} -q --format json '$capture' | jq -s -c '$jq_group'"
for _ in $(seq "$rounds"); do
  timed clients "$kscope" clients "${ports[@]}" -q "$capture"
  timed summary "$kscope" requests "${ports[@]}" -q --summary "$capture"
  timed json "$kscope" requests "${ports[@]}" -q --format json "$capture"
  timed jq sh -c "$jqpipe"
  if [[ -n "${BEFORE_BIN:-}" ]]; then timed before "$BEFORE_BIN" requests "${ports[@]}" -q --summary "$capture"; fi
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
bytes=$(stat -c %s "$capture")
packets=$(capinfos -c -M "$capture" | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')
requests=$("$kscope" requests "${ports[@]}" --format json -q "$capture" | wc -l)
nclients=$("$kscope" clients "${ports[@]}" --format json -q "$capture" | jq '.clients | length')
echo
echo "capture: $capture, $(awk "BEGIN{printf \"%.1f\", $bytes/1e6}") MB, $packets packets, $requests requests, $nclients clients;" \
  "one core (taskset -c 0), median of $rounds interleaved rounds"
echo
echo "| tool | wall s | MB/s | requests/s | peak RSS MiB | all rounds (s) |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
row() { # LABEL NAME
  local s m
  s=$(median <<<"${times[$1]}") m=$(median <<<"${rss[$1]}")
  awk -v name="$2" -v s="$s" -v m="$m" -v b="$bytes" -v r="$requests" -v all="${times[$1]}" \
    'BEGIN{printf "| %s | %.2f | %.0f | %.0f | %d | %s|\n", name, s, b/1e6/s, r/s, m, all}'
}
row clients "kscope clients"
row summary "kscope requests --summary"
row json "kscope requests --format json"
row jq "kscope requests --format json \| jq -s group_by(.client_id)"
if [[ -n "${BEFORE_BIN:-}" ]]; then row before "kscope requests --summary, BEFORE_BIN ($BEFORE_BIN)"; fi
# clients/requests --summary per round: the drift cancels within a round.
ratios=$(paste <(tr ' ' '\n' <<<"${times[clients]}") <(tr ' ' '\n' <<<"${times[summary]}") | grep -v '^\s*$' |
  awk '{printf "%.2f ", $1 / $2}')
echo
echo "kscope clients / kscope requests --summary, per round: $ratios(median $(median <<<"$ratios"))"

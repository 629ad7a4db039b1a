#!/usr/bin/env bash
# demo.sh: the main job end to end on this machine. Installs what it needs
# (scripts/setup.sh), starts a real Kafka broker (kscope lab broker), captures
# its port with tcpdump and traces its writes with kscope iotrace while real
# clients produce and consume, then shows every request with its latency
# (kscope requests), the broker's writes and syncs per partition, and the
# segment the messages landed in (kscope segment). Safe to run again. Run as
# root.
#
#   KSCOPE_DEMO_DIR  where the broker, capture and outputs go (default ./demo)
#   KSCOPE_DEMO_PORT broker port on 127.0.0.1 (default 9092)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_DEMO_DIR:-$root/demo}"
port="${KSCOPE_DEMO_PORT:-9092}"
mkdir -p "$work"

scripts/setup.sh
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
libs="$(scripts/kafka-jars.sh)"
kscope="$root/bin/kscope"
java=(java -Xmx256m -XX:TieredStopAtLevel=1 -cp "$libs/*")

"$kscope" lab broker stop --dir "$work/broker" >/dev/null
rm -rf "$work/broker"
tcpdump_pid=""
iotrace_pid=""
cleanup() {
  [[ -n "$tcpdump_pid" ]] && kill -INT "$tcpdump_pid" 2>/dev/null && wait "$tcpdump_pid" 2>/dev/null || true
  [[ -n "$iotrace_pid" ]] && kill -TERM "$iotrace_pid" 2>/dev/null && wait "$iotrace_pid" 2>/dev/null || true
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null || true
}
trap cleanup EXIT

echo "== starting a Kafka broker on 127.0.0.1:$port"
"$kscope" lab broker start --dir "$work/broker" --port "$port"

echo "== capturing tcp port $port on lo into $work/demo.pcap"
rm -f "$work/demo.pcap"
tcpdump -i lo -s 0 -B 262144 -U --immediate-mode -Z root -w "$work/demo.pcap" "tcp port $port" 2>"$work/tcpdump.err" &
tcpdump_pid=$!
for _ in $(seq 50); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.1; done

echo "== tracing the broker's writes and syncs (kscope iotrace --summary) into $work/iotrace.txt"
"$kscope" iotrace --auto --summary >"$work/iotrace.txt" 2>"$work/iotrace.err" &
iotrace_pid=$!
for _ in $(seq 100); do grep -q "attached\|tracing" "$work/iotrace.err" 2>/dev/null && break; sleep 0.1; done

echo "== producing: 200 records with message-id headers (console producer), 50000 x 512 B lz4 (ProducerPerformance)"
seq 1 200 | awk '{printf "message-id:order-%d\tvalue %d\n", $1, $1}' |
  "${java[@]}" org.apache.kafka.tools.ConsoleProducer --bootstrap-server "127.0.0.1:$port" --topic orders \
    --property parse.headers=true --producer-property linger.ms=20 >/dev/null
"${java[@]}" org.apache.kafka.tools.ProducerPerformance --topic load --num-records 50000 --record-size 512 \
  --throughput 10000 --producer-props "bootstrap.servers=127.0.0.1:$port" linger.ms=5 compression.type=lz4 acks=all |
  tail -1
echo "== consuming with a group (console consumer)"
"${java[@]}" org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "127.0.0.1:$port" --topic load \
  --group demo-group --from-beginning --max-messages 50000 --timeout-ms 30000 >/dev/null 2>&1
sleep 1
kill -INT "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null || true; tcpdump_pid=""
kill -TERM "$iotrace_pid"; wait "$iotrace_pid" 2>/dev/null || true; iotrace_pid=""

echo
echo "== kscope requests --summary $work/demo.pcap"
"$kscope" requests --port "$port" --summary "$work/demo.pcap"
echo
echo "== produce requests to 'orders', with their message ids"
"$kscope" requests --port "$port" --api produce --topic orders "$work/demo.pcap" | head -15
"$kscope" requests --port "$port" --format json -q "$work/demo.pcap" >"$work/requests.jsonl"
echo
echo "== every request as JSON Lines: $work/requests.jsonl ($(wc -l <"$work/requests.jsonl") requests)"
echo
echo "== the broker's writes and syncs while it ran (kscope iotrace --summary)"
cat "$work/iotrace.txt"
echo
orders="$(ls "$work"/broker/data/orders-0/*.log | head -1)"
echo "== the segment those 200 messages went to (kscope segment dump --records $orders)"
"$kscope" segment dump --records -q "$orders" | head -8
echo "== kscope segment verify $work/broker/data"
"$kscope" segment verify "$work/broker/data" | tail -3

#!/usr/bin/env bash
# demo.sh: the main job end to end on this machine. Installs what it needs
# (scripts/setup.sh), starts a real Kafka broker (kscope lab broker) with its
# log directory on an ext4 file system on a loop device, runs `kscope
# record` (live capture of its port and eBPF tracing of its writes and
# journal) while two real producers send load, freezes the file system
# twice (fsfreeze, 300 and 500 ms: the injected stall), and then lets
# `kscope explain` name the cause of every slow produce request. Then it
# shows the same capture through `kscope requests` and the segment the
# messages went to through `kscope segment`. Safe to run again. Run as root.
#
#   KSCOPE_DEMO_DIR  where the broker, recording and outputs go (default ./demo)
#   KSCOPE_DEMO_PORT broker port on 127.0.0.1 (default 9092)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_DEMO_DIR:-$root/demo}"
port="${KSCOPE_DEMO_PORT:-9092}"
mkdir -p "$work"

scripts/setup.sh demo
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
libs="$(scripts/kafka-jars.sh)"
kscope="$root/bin/kscope"
java=(java -Xmx256m -XX:TieredStopAtLevel=1 -cp "$libs/*")
mnt="$work/mnt"
img="$work/ext4.img"

record_pid=""
load_pids=()
cleanup() {
  for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  fsfreeze -u "$mnt" 2>/dev/null || true
  [[ -n "$record_pid" ]] && kill -INT "$record_pid" 2>/dev/null && wait "$record_pid" 2>/dev/null || true
  "$kscope" lab broker stop --dir "$mnt/broker" >/dev/null 2>&1 || true
  # The broker's JVM may take a moment to let go of its files.
  for _ in $(seq 50); do mountpoint -q "$mnt" || break; umount "$mnt" 2>/dev/null || sleep 0.2; done
}
trap cleanup EXIT

# A fresh ext4 file system (data=ordered, the default) on a loop device.
cleanup
mkdir -p "$mnt"
rm -f "$img"
truncate -s 1G "$img"
mkfs.ext4 -q -F "$img"
mount -o loop "$img" "$mnt"
echo "== ext4 on $(findmnt -n -o SOURCE "$mnt") mounted at $mnt"

echo "== starting a Kafka broker on 127.0.0.1:$port, log dir on that file system"
"$kscope" lab broker start --dir "$mnt/broker" --port "$port"
# The topics exist before recording starts.
"${java[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" --create --if-not-exists \
  --topic orders --partitions 6 >/dev/null
"${java[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" --create --if-not-exists \
  --topic payments --partitions 6 >/dev/null

echo "== kscope record --port $port --iface lo --pcap --jfr start --out $work/rec (live capture + eBPF + JFR lock waits)"
rm -rf "$work/rec"
"$kscope" record --port "$port" --iface lo --pcap --jfr start --out "$work/rec" 2>"$work/record.err" &
record_pid=$!
for _ in $(seq 100); do grep -q "record: broker pid" "$work/record.err" && break; sleep 0.1; done
cat "$work/record.err"

echo "== load: two producers (ProducerPerformance, 2000 records/s each, acks=all) for 10 s,"
echo "   and 300 records with message-id headers (console producer)"
for topic in orders payments; do
  "${java[@]}" org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records 20000 --record-size 512 \
    --throughput 2000 --producer-props "bootstrap.servers=127.0.0.1:$port" linger.ms=2 acks=all \
    >"$work/load-$topic.txt" 2>&1 &
  load_pids+=($!)
done
seq 1 300 | awk '{printf "message-id:order-%d\tvalue %d\n", $1, $1; system("sleep 0.02")}' |
  "${java[@]}" org.apache.kafka.tools.ConsoleProducer --bootstrap-server "127.0.0.1:$port" --topic orders \
    --property parse.headers=true --producer-property linger.ms=0 >/dev/null &
load_pids+=($!)

sleep 3
echo "== injecting stalls: fsfreeze $mnt for 300 ms, then (2 s later) for 500 ms"
for ms in 300 500; do
  echo "   frozen at $(date +%H:%M:%S.%3N) for $ms ms"
  fsfreeze -f "$mnt"; sleep "0.$ms"; fsfreeze -u "$mnt"
  sleep 2
done
for p in "${load_pids[@]}"; do wait "$p" || true; done
load_pids=()
tail -1 "$work/load-orders.txt"
sleep 0.5
kill -INT "$record_pid"; wait "$record_pid" || true; record_pid=""
tail -2 "$work/record.err"

echo
echo "== kscope explain $work/rec"
"$kscope" explain "$work/rec" >"$work/explain.txt"
head -25 "$work/explain.txt"
echo "   ... (all rows: $work/explain.txt)"
sed -n '/^[0-9]* answered produce requests/,$p' "$work/explain.txt"
"$kscope" explain "$work/rec" --format json >"$work/explain.jsonl"
req="$(sed -n '1s/.*"client":"\([^"]*\)".*"correlation_id":\([0-9]*\).*/\1\/\2/p' "$work/explain.jsonl")"
if [[ -n "$req" ]]; then
  echo
  echo "== one slow request's timeline: kscope explain $work/rec --request $req"
  "$kscope" explain "$work/rec" --request "$req"
fi

echo
echo "== the same traffic from the recording's capture: kscope requests --summary $work/rec/capture.pcapng"
"$kscope" requests --port "$port" --summary "$work/rec/capture.pcapng"
echo
echo "== produce requests with message ids (kscope requests --topic orders --slow 100ms)"
"$kscope" requests --port "$port" --api produce --topic orders --slow 100ms -q "$work/rec/capture.pcapng" >"$work/slow-orders.txt"
head -8 "$work/slow-orders.txt"
echo
orders="$(ls "$mnt"/broker/data/orders-0/*.log | head -1)"
echo "== the segment of orders-0 (kscope segment dump $orders)"
"$kscope" segment dump -q "$orders" >"$work/segment.txt"
head -6 "$work/segment.txt"
echo "== kscope segment verify $mnt/broker/data"
"$kscope" segment verify "$mnt/broker/data" | tail -3

echo
echo "== kscope report $work/rec -o $work/report.html (open it in a browser)"
"$kscope" report "$work/rec" -o "$work/report.html"

#!/usr/bin/env bash
# demo.sh: the main job end to end on this machine. Installs what it needs
# (scripts/setup.sh demo), starts a real Kafka broker (kscope lab broker)
# with its log directory on an ext4 file system on a loop device, and runs
# `kscope doctor` on it for 30 s while two real producers send load; during
# it the file system is frozen twice (fsfreeze, 300 and 500 ms) and busy
# loops far above the broker's priority take the CPUs for 4 s: the injected
# faults. doctor prints its ranked findings; then `kscope explain` shows
# the same causes request by request on doctor's recording, one slow
# request's timeline, and `kscope segment` the partition the messages went
# to. Safe to run again. Run as root.
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

doctor_pid=""
load_pids=()
cleanup() {
  for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  fsfreeze -u "$mnt" 2>/dev/null || true
  [[ -n "$doctor_pid" ]] && kill -INT "$doctor_pid" 2>/dev/null && wait "$doctor_pid" 2>/dev/null || true
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

echo "== load: two producers (ProducerPerformance, 1000 records/s each, acks=all) for 40 s,"
echo "   and 300 records with message-id headers (console producer)"
for topic in orders payments; do
  "${java[@]}" org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records 40000 --record-size 512 \
    --throughput 1000 --producer-props "bootstrap.servers=127.0.0.1:$port" linger.ms=2 acks=all \
    >"$work/load-$topic.txt" 2>&1 &
  load_pids+=($!)
done
seq 1 300 | awk '{printf "message-id:order-%d\tvalue %d\n", $1, $1; system("sleep 0.05")}' |
  "${java[@]}" org.apache.kafka.tools.ConsoleProducer --bootstrap-server "127.0.0.1:$port" --topic orders \
    --property parse.headers=true --producer-property linger.ms=0 >/dev/null &
load_pids+=($!)
sleep 8 # the broker compiles its hot code under load first, as a broker in production has

echo "== kscope doctor --port $port --iface lo --duration 30s --out $work/doctor"
rm -rf "$work/doctor"
"$kscope" doctor --port "$port" --iface lo --duration 30s --profile 6s --out "$work/doctor" \
  >"$work/doctor.txt" 2>"$work/doctor.err" &
doctor_pid=$!
for _ in $(seq 300); do grep -q "doctor: record: broker pid" "$work/doctor.err" && break; sleep 0.1; done
sleep 4
echo "== injecting faults: fsfreeze $mnt for 300 ms, then for 500 ms; then two busy loops per CPU at nice -19 for 4 s"
for ms in 300 500; do
  echo "   frozen at $(date +%H:%M:%S.%3N) for $ms ms"
  fsfreeze -f "$mnt"; sleep "0.$ms"; fsfreeze -u "$mnt"
  sleep 2
done
echo "   CPU hogs from $(date +%H:%M:%S.%3N) for 4 s"
# In a session of their own (the broker's is its own too: with the
# kernel's autogroups, nice acts only within a session), whose scheduling
# group gets nice -19: a batch job far above the broker's priority.
setsid sh -c 'echo -19 >/proc/self/autogroup; for _ in $(seq $((2 * $(nproc)))); do timeout 4 sh -c "while :; do :; done" & done; wait' &
load_pids+=($!)
wait "$doctor_pid" && status=0 || status=$?
doctor_pid=""
for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null || true; done
load_pids=()
echo "== kscope doctor ended with exit status $status (1: it found an alarm); its findings:"
cat "$work/doctor.txt"
rec="$work/doctor/recording"

echo
echo "== the same causes, request by request: kscope explain $rec --slow 100ms"
"$kscope" explain "$rec" --slow 100ms >"$work/explain.txt"
head -12 "$work/explain.txt"
echo "   ... (all rows: $work/explain.txt)"
sed -n '/^[0-9]* answered produce requests/,$p' "$work/explain.txt" | head -20
"$kscope" explain "$rec" --slow 100ms --format json >"$work/explain.jsonl"
req="$(sed -n '1s/.*"client":"\([^"]*\)".*"correlation_id":\([0-9]*\).*/\1\/\2/p' "$work/explain.jsonl")"
if [[ -n "$req" ]]; then
  echo
  echo "== one slow request's timeline: kscope explain $rec --slow 100ms --request $req"
  "$kscope" explain "$rec" --slow 100ms --request "$req"
fi

echo
orders="$(ls "$mnt"/broker/data/orders-0/*.log | head -1)"
echo "== the segment of orders-0 (kscope segment dump $orders)"
"$kscope" segment dump -q "$orders" >"$work/segment.txt"
head -6 "$work/segment.txt"
echo "== kscope segment verify $mnt/broker/data"
"$kscope" segment verify "$mnt/broker/data" | tail -3

echo
echo "== the page: $work/doctor/report.html (open it in a browser; kscope report $rec -o FILE draws it again)"

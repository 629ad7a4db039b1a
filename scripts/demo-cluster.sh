#!/usr/bin/env bash
# demo-cluster.sh: the main job across a cluster. Installs what it needs
# (scripts/setup.sh), starts a 3-broker KRaft cluster (kscope lab broker
# --brokers 3 --netns --fs ext4: each broker in its own network namespace
# on a bridge, its log dir on its own ext4 loop device), a topic with
# replication factor 3 and min.insync.replicas 2, runs `kscope record` on
# every broker (each on its own veth) while two producers send acks=all
# load, freezes broker 2's file system twice for 500 ms, and then lets
# `kscope explain` read the three recordings together: the clocks aligned
# from the replica fetches, and every leader's wait for its followers
# followed onto the follower that caused it. Safe to run again. Run as
# root.
#
#   KSCOPE_DEMO_DIR  where the cluster, recordings and outputs go (default ./demo-cluster)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_DEMO_DIR:-$root/demo-cluster}"
mkdir -p "$work"

scripts/setup.sh
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
libs="$(scripts/kafka-jars.sh)"
kscope="$root/bin/kscope"
java=(java -Xmx256m -XX:TieredStopAtLevel=1 -cp "$libs/*")
cluster="$work/cluster"

record_pids=()
load_pids=()
cleanup() {
  for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for n in 1 2 3; do
    mnt="$(node_field "$n" mountPoint 2>/dev/null)" && [[ -n "$mnt" ]] && fsfreeze -u "$mnt" 2>/dev/null || true
  done
  for p in "${record_pids[@]}"; do kill -INT "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  "$kscope" lab broker stop --dir "$cluster" >/dev/null 2>&1 || true
}
# node_field N KEY: a field of node N's broker.json (pid, addr, hostIf,
# mountPoint, logDirs).
node_field() {
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(v[0] if isinstance(v, list) else v)' \
    "$cluster/node-$1/broker.json" "$2"
}
trap cleanup EXIT
cleanup
rm -rf "$cluster" # afresh: every run starts from the same state

echo "== a 3-broker cluster, each broker in its own network namespace with its log dir on its own ext4 loop device"
"$kscope" lab broker start --dir "$cluster" --brokers 3 --netns --fs ext4 --fs-size 1024
bootstrap="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bootstrap"])' "$cluster/cluster.json")"
# Each partition led by one broker, the other two its followers; each
# broker leads two.
"${java[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --if-not-exists --topic orders \
  --replica-assignment 1:2:3,2:3:1,3:1:2,1:3:2,2:1:3,3:2:1 --config min.insync.replicas=2 >/dev/null
# A broker still registering when the topic is made leaves its partitions
# led by another: move leadership to the first replicas once all are in
# sync.
for _ in $(seq 30); do
  sleep 1
  "${java[@]}" org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$bootstrap" --election-type PREFERRED \
    --all-topic-partitions >/dev/null 2>&1 || true
  leaders="$("${java[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic orders |
    awk '/Partition: /{for (i = 1; i < NF; i++) if ($i == "Leader:") printf "%s", $(i+1)}')"
  [[ "$leaders" == 123123 ]] && break
done
echo "== topic orders: 6 partitions led by brokers $leaders (replication factor 3, min.insync.replicas 2)"

rm -rf "$work"/rec-*
for n in 1 2 3; do
  echo "== kscope record on broker $n: pid $(node_field "$n" pid), its veth $(node_field "$n" hostIf)"
  "$kscope" record --pid "$(node_field "$n" pid)" --log-dirs "$(node_field "$n" logDirs)" --iface "$(node_field "$n" hostIf)" \
    --port 9092 --out "$work/rec-$n" 2>"$work/record-$n.err" &
  record_pids+=($!)
done
for n in 1 2 3; do
  for _ in $(seq 150); do grep -q "record: broker pid" "$work/record-$n.err" && break; sleep 0.1; done
done

# Light load: three brokers, three recorders and the producers share two
# cores here.
echo "== load: two producers (kscope bench run: franz-go, 400 messages/s of 1 KiB in all, acks=all) for 20 s"
"$kscope" bench run --bootstrap "$bootstrap" --topic orders --producers 2 --rate 400 --keys round-robin \
  --duration 18s --warmup 2s --consumers 0 --acks all -o "$work/bench.json" >"$work/load.txt" 2>&1 &
load_pids+=($!)
sleep 8
mnt2="$(node_field 2 mountPoint)"
echo "== injecting: broker 2's file system ($mnt2) frozen twice for 500 ms"
for _ in 1 2; do
  echo "   frozen at $(date +%H:%M:%S.%3N)"
  fsfreeze -f "$mnt2"; sleep 0.5; fsfreeze -u "$mnt2"
  sleep 3
done
for p in "${load_pids[@]}"; do wait "$p" || true; done
load_pids=()
grep -iE "produce|latency|p99" "$work/load.txt" | head -4 || true
sleep 0.5
for p in "${record_pids[@]}"; do kill -INT "$p"; wait "$p" || true; done
record_pids=()

echo
echo "== kscope explain $work/rec-1 $work/rec-2 $work/rec-3 --slow 100ms"
"$kscope" explain "$work/rec-1" "$work/rec-2" "$work/rec-3" --slow 100ms >"$work/explain.txt"
sed -n '1,/^$/p' "$work/explain.txt"
grep -E '^== broker|answered produce requests|^CAUSE|^[a-z-]+ +[0-9]+ +[0-9.]+%|^REPLICATION BY FOLLOWER|^FOLLOWER|^broker [0-9]' "$work/explain.txt"
echo "   (all rows: $work/explain.txt)"
"$kscope" explain "$work/rec-1" "$work/rec-2" "$work/rec-3" --slow 100ms --format json >"$work/explain.jsonl"
echo
echo "== a leader's slow request during a freeze, followed onto broker 2:"
python3 - "$work/explain.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    f = json.loads(line)
    if f.get("follower") == 2 and f.get("follower_cause") == "slow-write":
        print(f'{f["broker"]} {f["client"]}/{f["correlation_id"]} {f["latency_ms"]:.1f} ms: {f["cause"]} (follower {f["follower"]}: {f["follower_cause"]})')
        print("  " + f["detail"])
        break
EOF

#!/usr/bin/env bash
# bench/agent-replay.sh: how many requests a second `kscope agent` decodes
# live, beyond what one broker on this machine can serve. A capture of a
# real broker at its maximum request rate (tcpdump on loopback while
# `kscope bench run --rate max` drives it, CAPTURE seconds) is replayed by
# tcpreplay into one end of a veth pair in a network namespace, as fast
# as it goes (--topspeed) and at fixed packet rates (PPS, a list); the
# agent captures the other end (--no-trace: there is no broker to trace
# for replayed traffic). For each replay: the requests the agent decoded
# (kscope_requests_total), over tcpreplay's own elapsed time; the packets
# the kernel dropped before the agent read them
# (kscope_agent_capture_drops_total); the agent's CPU.
#
#   bench/agent-replay.sh            # CAPTURE=20 PPS="100000 200000 400000"
#   KSCOPE_BIN=/path/kscope bench/agent-replay.sh
#   AGENT_ARGS="--views none" bench/agent-replay.sh   # extra agent flags
#
# Prints a Markdown table; bench/agent-results.md holds a run's output.
# The capture (about 2 GB for CAPTURE=20) stays in KSCOPE_BENCH_DIR for
# the next run; delete it to take a new one. The broker's data goes at exit.
set -euo pipefail
shopt -s inherit_errexit
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-agentreplay}"
port="${KSCOPE_BENCH_PORT:-19097}"
mport="${KSCOPE_METRICS_PORT:-19465}"
capture_s="${CAPTURE:-20}"
read -r -a rates <<<"${PPS:-100000 200000 400000}"
read -r -a agent_args <<<"${AGENT_ARGS:-}"
mkdir -p "$work"
scripts/setup.sh >/dev/null
if [[ -z "${KSCOPE_BIN:-}" ]]; then
  CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
  kscope="$root/bin/kscope"
else
  kscope="$KSCOPE_BIN"
fi
hz="$(getconf CLK_TCK)"
ns="kscope-replay-$$"
a="ksrA$$" b="ksrB$$"
agent_pid=""
cleanup() {
  [[ -n "$agent_pid" ]] && kill "$agent_pid" 2>/dev/null || true
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  rm -rf "$work/broker"
  ip link del "$a" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

# 1. The capture: a real broker at its maximum request rate.
pcap="$work/max-rate.pcap"
if [[ ! -s "$pcap" ]]; then
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null 2>&1 || true
  rm -rf "$work/broker"
  "$kscope" lab broker start --dir "$work/broker" --port "$port" >/dev/null
  tcpdump -i lo -s 0 -B 65536 -w "$pcap.tmp" "tcp port $port" 2>"$work/tcpdump.err" &
  tcpdump_pid=$!
  sleep 1
  "$kscope" bench run --bootstrap "127.0.0.1:$port" --rate max --producers 4 --linger 0 --batch-bytes 1024 \
    --message-size 100 --consumers 1 --warmup 2s --duration "${capture_s}s" --topic replay --partitions 4 \
    -o "$work/capture-load.json" >"$work/capture-load.out" 2>&1
  sleep 1
  kill -INT "$tcpdump_pid"
  wait "$tcpdump_pid" || true
  "$kscope" lab broker stop --dir "$work/broker" >/dev/null
  mv "$pcap.tmp" "$pcap"
fi
in_file="$("$kscope" requests --port "$port" --format json --quiet "$pcap" 2>/dev/null | wc -l)"
packets="$(tcpdump -r "$pcap" -n 2>/dev/null | wc -l)"

# 2. The veth: tcpreplay sends into $b (in the namespace); the agent
# captures $a.
ip netns add "$ns"
ip link add "$a" type veth peer name "$b" netns "$ns"
# Loopback's packets are up to 64 KiB: the veth takes its largest MTU.
ip link set "$a" mtu 65535 up
ip -n "$ns" link set "$b" mtu 65535 up
# Offloads off: a replayed packet is one frame, as captured.
ip netns exec "$ns" ethtool -K "$b" tso off gso off gro off >/dev/null 2>&1 || true
ethtool -K "$a" gro off >/dev/null 2>&1 || true

metric() {
  curl -s "http://127.0.0.1:$mport/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $NF} END {printf "%.0f\n", s}'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# A fresh agent for every replay: a replay repeats the capture's TCP
# sequence numbers, which an agent that saw them already takes for
# retransmissions.
start_agent() {
  "$kscope" agent --iface "$a" --port "$port" --no-trace --listen "127.0.0.1:$mport" -q "${agent_args[@]}" >"$work/agent.out" 2>&1 &
  agent_pid=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$mport/healthz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$mport/healthz" >/dev/null || { cat "$work/agent.out"; exit 1; }
}
stop_agent() { kill "$agent_pid"; wait "$agent_pid" || true; agent_pid=""; }

echo "# kscope agent: live decoding of a replayed capture"
echo
echo "Capture: $(basename "$pcap"), $packets packets, $in_file requests (kscope requests on the file), a real broker at its maximum rate driven by kscope bench run (4 producers, 100-byte messages, 1 KiB batches, one consumer)."
echo
echo "| replay | seconds | packets/s sent | requests decoded | requests/s | kernel drops | agent CPU s | agent CPU µs/request |"
echo "|---|---|---|---|---|---|---|---|"
for rate in topspeed "${rates[@]}"; do
  start_agent
  r0="$(metric kscope_requests_total)" d0="$(metric kscope_agent_capture_drops_total)" c0="$(cpu_ticks "$agent_pid")"
  if [[ "$rate" == topspeed ]]; then
    opt=(--topspeed)
  else
    opt=(--pps="$rate")
  fi
  out="$(ip netns exec "$ns" tcpreplay -i "$b" "${opt[@]}" "$pcap" 2>&1)"
  sleep 2 # the ring drains; connections the capture ended stay in flight
  r1="$(metric kscope_requests_total)" d1="$(metric kscope_agent_capture_drops_total)" c1="$(cpu_ticks "$agent_pid")"
  stop_agent
  secs="$(sed -n 's/.*Actual: [0-9]* packets ([0-9]* bytes) sent in \([0-9.]*\) seconds.*/\1/p' <<<"$out")"
  sent="$(sed -n 's/.*Rated: [0-9.]* Bps, [0-9.]* Mbps, \([0-9.]*\) pps.*/\1/p' <<<"$out")"
  python3 - "$rate" "$secs" "$sent" "$r0" "$r1" "$d0" "$d1" "$c0" "$c1" "$hz" <<'EOF'
import sys
rate, secs, sent, r0, r1, d0, d1, c0, c1, hz = sys.argv[1:]
secs = float(secs or 'nan')
reqs = float(r1) - float(r0)
cpu = (float(c1) - float(c0)) / float(hz)
print(f"| {rate} | {secs:.2f} | {float(sent or 'nan'):.0f} | {reqs:.0f} | {reqs/secs:.0f} | {float(d1)-float(d0):.0f} | {cpu:.2f} | {cpu/max(reqs,1)*1e6:.2f} |")
EOF
done

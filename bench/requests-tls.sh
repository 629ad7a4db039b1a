#!/usr/bin/env bash
# bench/requests-tls.sh: what decrypting costs `kscope requests` (issue 18:
# an encrypted capture decoded within 2x of the same traffic in plaintext),
# and tshark's Kafka dissector on the same two captures with the same key
# log, one core each (taskset -c 0).
#
#   bench/requests-tls.sh                      record both captures, then time
#   bench/requests-tls.sh PLAIN.pcap TLS.pcap KEYLOG SSLPORT   time given ones
#
# Recording: a lab broker with --tls (PLAINTEXT on PORT, SSL on SSL_PORT) in
# a network namespace whose loopback has a 1500-byte MTU and no
# segmentation offload (the packet sizes of a real NIC, as in
# bench/requests.sh), and the same workload twice, each with its own
# tcpdump: ProducerPerformance sending RECORDS x SIZE-byte records (default
# 150000 x 512, uncompressed, acks=1, linger.ms=5) over PLAINTEXT into
# plaintext.pcap, then over SSL (DIR/tls/client-ssl.properties: TLS 1.3 is
# negotiated, AES-GCM) into tls.pcap, that producer's JVM running the
# extract-tls-secrets agent (-javaagent:JAR=KEYLOG) so the key log covers
# every SSL connection of the capture.
#
# Checks before timing: both captures carry RECORDS records in answered
# Produce requests, kscope's footer says every TLS connection was
# decrypted, and the handshakes were TLS 1.3 with an AES-GCM suite; tshark's
# Kafka request count on each capture is printed next to kscope's.
#
# Then ROUNDS (default 5) interleaved rounds, each timing once, on core 0:
# kscope on plaintext.pcap, kscope on tls.pcap (--tls-keylog), tshark on
# each (TLS: -o tls.keylog_file, TCP port -> tls, TLS port -> kafka).
# Prints a Markdown table (best round of each) and the per-round ratios
# kscope TLS / kscope plaintext (target <= 2) and tshark TLS / kscope TLS.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${KSCOPE_BENCH_DIR:-/tmp/kscope-bench-tls}"
port="${KSCOPE_BENCH_PORT:-19092}"
sslport="${KSCOPE_BENCH_SSL_PORT:-19094}"
records="${RECORDS:-150000}"
size="${SIZE:-512}"
rounds="${ROUNDS:-5}"
mkdir -p "$work"
scripts/setup.sh
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
kscope="$root/bin/kscope"
die() { echo "requests-tls.sh: $*" >&2; exit 1; }

if [[ $# -eq 0 ]]; then
  plain="$work/plaintext.pcap"
  tls="$work/tls.pcap"
  keylog="$work/keylog.txt"
  libs="$(scripts/kafka-jars.sh)"
  jar="$(scripts/keylog-agent-jar.sh)"
  ns=kscope-bench-tls
  broker="$work/broker"
  "$kscope" lab broker stop --dir "$broker" >/dev/null 2>&1 || true
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  inns=(ip netns exec "$ns")
  "${inns[@]}" ip link set lo up mtu "${MTU:-1500}"
  "${inns[@]}" ethtool -K lo tso off gso off gro off >/dev/null 2>&1 || true
  rm -rf "$broker" "$plain" "$tls" "$keylog"
  "${inns[@]}" "$kscope" lab broker start --dir "$broker" --port "$port" --tls --ssl-port "$sslport" --sasl-ssl-port $((sslport + 1)) >/dev/null
  trap '"$kscope" lab broker stop --dir "$broker" >/dev/null; ip netns del "$ns" 2>/dev/null || true' EXIT
  props="$broker/tls/client-ssl.properties"
  [[ -f "$props" ]] || props="$broker/client-ssl.properties"
  [[ -f "$props" ]] || die "no client-ssl.properties in $broker"

  # produce CAPTURE FILTER-PORT JAVA-OPTS... -- PRODUCER-ARGS...
  produce() {
    local capture=$1 p=$2; shift 2
    local jvm=()
    while [[ $1 != -- ]]; do jvm+=("$1"); shift; done
    shift
    : >"$work/tcpdump.err"
    "${inns[@]}" tcpdump -i lo -s 0 -B 262144 -U --immediate-mode -Z root -w "$capture" "tcp port $p" 2>"$work/tcpdump.err" &
    local tcpdump_pid=$!
    for _ in $(seq 50); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.1; done
    "${inns[@]}" java -Xmx512m "${jvm[@]}" -cp "$libs/*" org.apache.kafka.tools.ProducerPerformance --topic bench \
      --num-records "$records" --record-size "$size" --throughput -1 "$@" >"$work/producer.out"
    tail -n 1 "$work/producer.out" >&2
    sleep 1
    kill -INT "$tcpdump_pid"; wait "$tcpdump_pid" || true
    grep -h "dropped by kernel" "$work/tcpdump.err" >&2 || true
  }
  produce "$plain" "$port" -- --producer-props "bootstrap.servers=127.0.0.1:$port" acks=1 linger.ms=5
  # The agent writes the key log as the producer's handshakes derive the
  # secrets; create it 0600 first (it holds session keys).
  (umask 077; : >"$keylog")
  produce "$tls" "$sslport" "-javaagent:$jar=$keylog" -- --producer.config "$props" --producer-props acks=1 linger.ms=5
  "$kscope" lab broker stop --dir "$broker" >/dev/null
  ip netns del "$ns" 2>/dev/null || true
  trap - EXIT
else
  [[ $# -eq 4 ]] || die "usage: $0 [PLAIN.pcap TLS.pcap KEYLOG SSLPORT]"
  plain=$1 tls=$2 keylog=$3 sslport=$4
fi

# What was negotiated: every ServerHello's version and suite.
echo >&2
echo "ServerHellos in $tls (version, suite):" >&2
tshark -n -r "$tls" -d "tcp.port==$sslport,tls" -Y "tls.handshake.type==2" -T fields \
  -e tls.handshake.extensions.supported_version -e tls.handshake.ciphersuite | sort | uniq -c >&2
if tshark -n -r "$tls" -d "tcp.port==$sslport,tls" -Y "tls.handshake.type==2" -T fields \
  -e tls.handshake.extensions.supported_version -e tls.handshake.ciphersuite | grep -qv '^0x0304[[:space:]]0x130[12]$'; then
  die "a handshake in $tls is not TLS 1.3 with AES-GCM"
fi

# Correctness: the same records in both captures, every request answered,
# every TLS connection decrypted.
kplain=(requests --port "$port" --format json -q "$plain")
ktls=(requests --port "$sslport" --format json -q --tls-keylog "$keylog" "$tls")
"$kscope" "${kplain[@]}" >"$work/plain.jsonl"
"$kscope" requests --port "$sslport" --format json --tls-keylog "$keylog" "$tls" >"$work/tls.jsonl" 2>"$work/tls.footer"
summary() { # JSONL: requests, unanswered, produce requests, records produced
  jq -rs '[length, (map(select(.answered|not))|length), (map(select(.api=="Produce"))|length),
    ([.[]|select(.api=="Produce")|.partitions[]?.records]|add // 0)]|@tsv' "$1"
}
read -r req_plain unans_plain prod_plain rec_plain < <(summary "$work/plain.jsonl")
read -r req_tls unans_tls prod_tls rec_tls < <(summary "$work/tls.jsonl")
tls_line=$(sed -nE 's/^(kscope: )?([0-9]+ TLS connections:)/\2/p' "$work/tls.footer")
echo "kscope, plaintext: $req_plain requests ($prod_plain Produce, $rec_plain records), $unans_plain unanswered" >&2
echo "kscope, TLS:       $req_tls requests ($prod_tls Produce, $rec_tls records), $unans_tls unanswered" >&2
echo "kscope, TLS footer: $tls_line" >&2
[[ -n "$tls_line" ]] || die "no TLS connections line in kscope's footer (see $work/tls.footer)"
read -r tls_conns tls_dec < <(sed -E 's/^([0-9]+) TLS connections: ([0-9]+) decrypted.*/\1 \2/' <<<"$tls_line")
[[ "$tls_conns" -gt 0 && "$tls_conns" == "$tls_dec" ]] || die "not every TLS connection decrypted: $tls_line"
if [[ $# -eq 0 ]]; then
  [[ "$rec_plain" == "$records" && "$rec_tls" == "$records" ]] || die "records produced: plaintext $rec_plain, TLS $rec_tls, sent $records"
else
  [[ "$rec_plain" == "$rec_tls" ]] || die "records produced: plaintext $rec_plain, TLS $rec_tls"
fi
[[ "$unans_plain" == 0 && "$unans_tls" == 0 ]] || die "unanswered requests: plaintext $unans_plain, TLS $unans_tls"

tshark_fields=(-T fields -e frame.time_epoch -e kafka.request_key -e kafka.correlation_id)
tplain=(-n -r "$plain" -d "tcp.port==$port,kafka")
ttls=(-n -r "$tls" -o "tls.keylog_file:$keylog" -d "tcp.port==$sslport,tls" -d "tls.port==$sslport,kafka")
# tshark's requests: kafka.request_key values in frames towards the broker
# (a frame may end several requests: comma-separated values).
tshark_requests() { # PORT TSHARK-ARGS...
  local p=$1; shift
  tshark "$@" -T fields -e tcp.dstport -e kafka.request_key |
    awk -F'\t' -v p="$p" '$1 == p && $2 != "" {n += split($2, a, ",")} END {print n + 0}'
}
ts_req_plain=$(tshark_requests "$port" "${tplain[@]}")
ts_req_tls=$(tshark_requests "$sslport" "${ttls[@]}")
echo "tshark requests: plaintext $ts_req_plain, TLS $ts_req_tls" >&2

# One round times every command once, on core 0, in turn: wall time from
# bash's EPOCHREALTIME around /usr/bin/time (whose %e has 10 ms steps, too
# coarse for kscope on a capture this size; the fork of time and taskset is
# in it, about a millisecond), peak RSS from its %M. (This VM's speed
# drifts over minutes; its kernel's DAMON reclaim evicts cold page cache,
# so the inputs are read right before every timed run).
declare -A best_s best_m all_s
timed() { # LABEL CMD...: sets last_s, last_m and keeps the label's best
  local label=$1; shift
  cat "$plain" "$tls" "$keylog" >/dev/null
  local t0=$EPOCHREALTIME
  /usr/bin/time -f "%M" -o "$work/time" taskset -c 0 "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  local t1=$EPOCHREALTIME
  last_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
  read -r kb <"$work/time"
  last_m=$((kb / 1024))
  all_s[$label]+="$last_s "
  if [[ -z "${best_s[$label]:-}" ]] || awk "BEGIN{exit !($last_s < ${best_s[$label]})}"; then
    best_s[$label]=$last_s best_m[$label]=$last_m
  fi
}
ratio() { awk "BEGIN{printf \"%.2f\", $1/$2}"; }
r_tls_plain=() r_tshark_tls=() r_tshark_plain=()
for _ in $(seq "$rounds"); do
  timed kscope-plain "$kscope" "${kplain[@]}"; kp=$last_s
  timed kscope-tls "$kscope" "${ktls[@]}"; kt=$last_s
  timed tshark-plain tshark "${tplain[@]}" "${tshark_fields[@]}"; tp=$last_s
  timed tshark-tls tshark "${ttls[@]}" "${tshark_fields[@]}"; tt=$last_s
  r_tls_plain+=("$(ratio "$kt" "$kp")")
  r_tshark_tls+=("$(ratio "$tt" "$kt")")
  r_tshark_plain+=("$(ratio "$tp" "$kp")")
done

bytes_plain=$(stat -c %s "$plain") bytes_tls=$(stat -c %s "$tls")
pk() { capinfos -c -M "$1" | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}'; }
echo
echo "plaintext: $plain, $(awk "BEGIN{printf \"%.1f\", $bytes_plain/1e6}") MB, $(pk "$plain") packets, $req_plain requests (tshark: $ts_req_plain)"
echo "TLS: $tls, $(awk "BEGIN{printf \"%.1f\", $bytes_tls/1e6}") MB, $(pk "$tls") packets, $req_tls requests (tshark: $ts_req_tls), $tls_line"
echo "one core (taskset -c 0), best of $rounds interleaved rounds"
echo
echo "| tool | capture | wall s | MB/s | requests/s | peak RSS MiB | wall s, every round |"
echo "| --- | --- | ---: | ---: | ---: | ---: | --- |"
row() { # LABEL NAME CAPTURE BYTES REQUESTS
  awk -v name="$2" -v cap="$3" -v s="${best_s[$1]}" -v m="${best_m[$1]}" -v b="$4" -v r="$5" -v all="${all_s[$1]}" \
    'BEGIN{sub(/ $/, "", all); printf "| %s | %s | %.3f | %.0f | %.0f | %d | %s |\n", name, cap, s, b/1e6/s, r/s, m, all}'
}
row kscope-plain "kscope requests --format json" plaintext "$bytes_plain" "$req_plain"
row kscope-tls "kscope requests --format json --tls-keylog" TLS "$bytes_tls" "$req_tls"
row tshark-plain "tshark -d tcp.port==$port,kafka -T fields" plaintext "$bytes_plain" "$req_plain"
row tshark-tls "tshark -o tls.keylog_file -d tcp.port==$sslport,tls -d tls.port==$sslport,kafka -T fields" TLS "$bytes_tls" "$req_tls"
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo
echo "kscope TLS / kscope plaintext (wall; target <= 2): per round ${r_tls_plain[*]} (median $(med "${r_tls_plain[@]}"); best against best $(ratio "${best_s[kscope-tls]}" "${best_s[kscope-plain]}"); per MB $(awk -v t="${best_s[kscope-tls]}" -v p="${best_s[kscope-plain]}" -v bt="$bytes_tls" -v bp="$bytes_plain" 'BEGIN{printf "%.2f", (t/bt)/(p/bp)}'))"
echo "tshark TLS / kscope TLS: per round ${r_tshark_tls[*]} (median $(med "${r_tshark_tls[@]}"); best against best $(ratio "${best_s[tshark-tls]}" "${best_s[kscope-tls]}"))"
echo "tshark plaintext / kscope plaintext: per round ${r_tshark_plain[*]} (median $(med "${r_tshark_plain[@]}"))"

#!/usr/bin/env bash
# setup.sh: install what kscope's demo or tests need on a Debian 12 machine
# (run as root). Idempotent and quiet when everything is already there.
#
#   scripts/setup.sh demo   only what scripts/demo.sh needs: a newcomer's
#                           first run installs little (Go modules, the
#                           Kafka jars, e2fsprogs/util-linux/maven)
#   scripts/setup.sh        everything the tests need (scripts/test.sh):
#
#   - checks Go and Java (not installed here: they come with the machine)
#   - apt: tcpdump, tshark, iproute2, xfsprogs, e2fsprogs, util-linux, maven,
#     ethtool, chromium, tcpreplay, openssl, stress-ng, jq
#   - go mod download
#   - Kafka broker/tools jars via scripts/kafka-jars.sh
#   - the kafka-clients jar of every release internal/releases knows, via
#     scripts/kafka-clients-jars.sh (TestTableMatchesJars reads them)
#   - the extract-tls-secrets Java agent (TLS keys from a running broker)
#     via scripts/keylog-agent-jar.sh
#   - the client zoo (internal/testkit/clientzoo): an old Java client
#     (kafka-clients 2.0.1, scripts/kafka-clients-old.sh), a Python venv
#     with confluent-kafka and kafka-python (scripts/python-venv.sh; apt:
#     python3-venv), the Sarama client (scripts/zoo-sarama.sh)
#   - a real Prometheus (Debian's release package, unpacked, not installed)
#     and OpenTelemetry Collector (built with its official builder) for the
#     fleet test, via scripts/observability-tools.sh (cached)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scope="${1:-all}"
case "$scope" in
demo | all) ;;
*) echo "setup.sh: unknown scope \"$scope\" (want demo, or nothing for all)" >&2; exit 2 ;;
esac

die() { echo "setup.sh: $*" >&2; exit 1; }

command -v go >/dev/null || die "go not found on PATH (install Go 1.26 first)"
command -v java >/dev/null || die "java not found on PATH (install a JDK 17+ first)"
# The e2e tests read the broker's thread ids with jcmd: a JDK, not a JRE.
command -v jcmd >/dev/null || die "jcmd not found on PATH (install a full JDK 17+, not a JRE)"

# Debian package -> a command it provides (to decide what is missing
# without asking dpkg about packages that might be named differently).
declare -A pkgs=(
  [e2fsprogs]=mkfs.ext4
  [util-linux]=flock # and fsfreeze, which the demo's injected stalls use
  [maven]=mvn        # scripts/kafka-jars.sh resolves the Kafka jars with it
)
# The tests' tools, beyond the demo's.
[[ "$scope" == demo ]] || pkgs+=(
  [tcpdump]=tcpdump
  [tshark]=tshark
  [iproute2]=ip
  [xfsprogs]=mkfs.xfs
  [ethtool]=ethtool # bench/requests.sh turns off loopback offloads in its namespace
  [chromium]=chromium # the report screenshot test (headless)
  [tcpreplay]=tcpreplay # bench/agent-replay.sh replays a capture at top speed
  [openssl]=openssl # a TLS 1.3 client that sends KeyUpdate (internal/tlsdecrypt)
  [stress-ng]=stress-ng # bench/agent.sh's control: a process that only takes CPU
  [jq]=jq # bench/clients.sh: requests' JSON grouped by client, what a user would otherwise run
)
missing=()
for p in "${!pkgs[@]}"; do
  # sbin dirs may be off PATH for non-login shells.
  PATH="$PATH:/usr/sbin:/sbin" command -v "${pkgs[$p]}" >/dev/null || missing+=("$p")
done

# The client zoo's venv (scripts/python-venv.sh) needs python3's venv and
# ensurepip modules, which Debian ships apart.
if [[ "$scope" != demo ]] && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  command -v python3 >/dev/null || missing+=(python3)
  missing+=(python3-venv)
fi

if ((${#missing[@]})); then
  [[ "$(id -u)" == 0 ]] || die "need root to apt-get install: ${missing[*]}"
  echo "setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # tshark's postinst asks whether non-root users may capture; answer no.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# kscope iotrace attaches to tracepoints, which need tracefs (it mounts it
# itself when run as root; the tests expect it mounted).
if [[ "$(id -u)" == 0 ]] && ! mountpoint -q /sys/kernel/tracing; then
  mount -t tracefs nodev /sys/kernel/tracing
fi

(cd "$root" && go mod download)
"$root/scripts/kafka-jars.sh" >/dev/null
[[ "$scope" == demo ]] && exit 0

# The older release the lab tests start (lab broker --version 3.9.1).
"$root/scripts/kafka-jars.sh" 3.9.1 >/dev/null
# Each release's protocol definitions, which internal/releases' table is
# generated from and checked against.
"$root/scripts/kafka-clients-jars.sh" >/dev/null
# The Java agent internal/keylogagent loads into a running JVM for its TLS keys.
"$root/scripts/keylog-agent-jar.sh" >/dev/null
# librdkafka through confluent-kafka for Python: a client kscope did not
# write, for the TLS/SASL acceptance test (internal/e2e/tls_test.go);
# kafka-python, pinned to Kafka 0.10.0 in that test, authenticates with
# SaslHandshake v0 and raw SASL tokens.
python3 -c "import confluent_kafka, kafka" 2>/dev/null || python3 -m pip install -q confluent-kafka kafka-python
# The client zoo of the tests (internal/testkit/clientzoo): clients of
# several kinds and ages that kscope did not write. Each script is a no-op
# when its cache is current.
"$root/scripts/kafka-clients-old.sh" >/dev/null
"$root/scripts/python-venv.sh" >/dev/null
"$root/scripts/zoo-sarama.sh" >/dev/null
# qemu and a Debian cloud kernel for the tests of BPF features this host's
# kernel lacks (fentry): internal/testkit/vm, docs/vmtest.md.
if [[ "$(id -u)" == 0 ]]; then
  "$root/scripts/vm-kernel.sh" >/dev/null
fi
# The fleet test's real Prometheus and OpenTelemetry Collector (the first
# collector build takes a few minutes; cached after).
"$root/scripts/observability-tools.sh" prometheus otelcol >/dev/null

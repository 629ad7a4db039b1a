#!/usr/bin/env bash
# kafka-jars.sh: resolve the Apache Kafka broker + tools jars (lab/kafka/pom.xml)
# from Maven Central into a cache dir and print that dir.
#
#   scripts/kafka-jars.sh            -> $HOME/.cache/kscope/kafka-<version>/libs
#   KSCOPE_KAFKA_LIBS=/x scripts/kafka-jars.sh -> /x
#
# The dir is usable as a classpath: java -cp "$(scripts/kafka-jars.sh)/*" kafka.Kafka ...
# Idempotent: a marker file records the sha256 of the pom the dir was built
# from, so a second run is a no-op (no mvn) and a changed pom rebuilds.
# Concurrent runs (parallel `go test` packages) are serialized with flock.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/lab/kafka/pom.xml"
[[ -f "$pom" ]] || { echo "kafka-jars.sh: $pom not found" >&2; exit 1; }

# The version lives in the pom only; the cache dir is named after it.
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -n1)"
[[ -n "$version" ]] || { echo "kafka-jars.sh: no <kafka.version> in $pom" >&2; exit 1; }

libs="${KSCOPE_KAFKA_LIBS:-${HOME:-/root}/.cache/kscope/kafka-$version/libs}"
marker="$libs/.kscope-complete"
want="$(sha256sum "$pom" | cut -d' ' -f1)"

complete() { [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; }

if complete; then
  echo "$libs"
  exit 0
fi

command -v mvn >/dev/null || { echo "kafka-jars.sh: mvn not found (run scripts/setup.sh)" >&2; exit 1; }

mkdir -p "$(dirname "$libs")"
exec 9>"$libs.lock"
flock 9
# Another run may have finished while we waited for the lock.
if complete; then
  echo "$libs"
  exit 0
fi

# Build into a temp dir and swap it in, so a killed run never leaves a
# half-filled dir that looks complete.
tmp="$(mktemp -d "$libs.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# mvn's output (even with -q it emits stray ANSI codes) is shown only on failure.
if ! out="$(mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$tmp" 2>&1)"; then
  echo "$out" >&2
  echo "kafka-jars.sh: mvn dependency:copy-dependencies failed" >&2
  exit 1
fi
ls "$tmp"/kafka_2.13-"$version".jar >/dev/null
chmod 755 "$tmp"
echo "$want" >"$tmp/.kscope-complete"
rm -rf "$libs"
mv "$tmp" "$libs"
trap - EXIT
echo "$libs"

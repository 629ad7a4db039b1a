#!/usr/bin/env bash
# kafka-clients-old.sh: resolve an old Apache Kafka Java client
# (kafka-clients VERSION and its runtime dependencies, lab/kafka-clients-old/
# pom.xml) from Maven Central into a cache dir and print that dir, for the
# client zoo of the tests (internal/testkit/clientzoo).
#
#   scripts/kafka-clients-old.sh          -> $HOME/.cache/kscope/kafka-clients-old/2.0.1
#   scripts/kafka-clients-old.sh 2.8.2    -> $HOME/.cache/kscope/kafka-clients-old/2.8.2
#
# The dir is usable as a classpath: java -cp "$(scripts/kafka-clients-old.sh)/*" ...
# Idempotent (a marker holds the sha256 of the pom and the version; a
# second run is a no-op without mvn) and serialized with flock, as
# scripts/kafka-jars.sh.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/lab/kafka-clients-old/pom.xml"
[[ -f "$pom" ]] || { echo "kafka-clients-old.sh: $pom not found" >&2; exit 1; }

version="${1:-2.0.1}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "kafka-clients-old.sh: bad kafka-clients version \"$version\" (want e.g. 2.0.1)" >&2
  exit 1
fi

dir="${HOME:-/root}/.cache/kscope/kafka-clients-old/$version"
marker="$dir/.kscope-complete"
want="$(sha256sum "$pom" | cut -d' ' -f1) $version"
complete() { [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; }

if complete; then
  echo "$dir"
  exit 0
fi
command -v mvn >/dev/null || { echo "kafka-clients-old.sh: mvn not found (run scripts/setup.sh)" >&2; exit 1; }

mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if complete; then
  echo "$dir"
  exit 0
fi

# Build into a temp dir and swap it in: a killed run never leaves a
# half-filled dir that looks complete.
tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
old="$dir.old.$$"
trap 'rm -rf "$tmp" "$old"' EXIT
if ! out="$(mvn -q -B -Dstyle.color=never -f "$pom" -Dkafka.clients.version="$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1)"; then
  echo "$out" >&2
  echo "kafka-clients-old.sh: mvn dependency:copy-dependencies failed (is org.apache.kafka:kafka-clients:$version on Maven Central?)" >&2
  exit 1
fi
[[ -f "$tmp/kafka-clients-$version.jar" ]] || { echo "kafka-clients-old.sh: kafka-clients-$version.jar missing after mvn" >&2; exit 1; }
chmod 755 "$tmp"
echo "$want" >"$tmp/.kscope-complete"
if [[ -e "$dir" ]]; then
  mv "$dir" "$old"
fi
mv "$tmp" "$dir"
rm -rf "$old"
trap - EXIT
echo "$dir"

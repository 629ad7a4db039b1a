#!/usr/bin/env bash
# kafka-jars.sh: resolve the Apache Kafka broker + tools jars (lab/kafka/pom.xml)
# from Maven Central into a cache dir and print that dir.
#
#   scripts/kafka-jars.sh                 -> $HOME/.cache/kscope/kafka-<pom version>/libs
#   scripts/kafka-jars.sh 3.9.1           -> $HOME/.cache/kscope/kafka-3.9.1/libs
#   KSCOPE_KAFKA_VERSION=3.9.1 scripts/kafka-jars.sh   (same; the argument wins)
#   KSCOPE_KAFKA_LIBS=/x scripts/kafka-jars.sh         -> /x
#
# The version defaults to <kafka.version> in the pom (the pinned one); any
# other release is resolved from the same pom with -Dkafka.version=V, and
# Kafka 3.x with the pom's kafka3 profile (reload4j instead of log4j2).
# KSCOPE_KAFKA_LIBS applies to the pinned version only, so a dir named for
# one version never holds another.
#
# The dir is usable as a classpath: java -cp "$(scripts/kafka-jars.sh)/*" kafka.Kafka ...
# Idempotent: a marker file records the sha256 of the pom and the version the
# dir was built from, so a second run is a no-op (no mvn) and a changed pom
# rebuilds. Concurrent runs (parallel `go test` packages) are serialized
# with flock.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/lab/kafka/pom.xml"
[[ -f "$pom" ]] || { echo "kafka-jars.sh: $pom not found" >&2; exit 1; }

pinned="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -n1)"
[[ -n "$pinned" ]] || { echo "kafka-jars.sh: no <kafka.version> in $pom" >&2; exit 1; }
version="${1:-${KSCOPE_KAFKA_VERSION:-$pinned}}"
if ! [[ "$version" =~ ^([0-9]+)\.([0-9]+)\.[0-9]+([.-][A-Za-z0-9]+)*$ ]]; then
  echo "kafka-jars.sh: bad Kafka version \"$version\" (want e.g. 3.9.1 or 4.1.2)" >&2
  exit 1
fi
major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
if (( major < 3 || (major == 3 && minor < 3) )); then
  echo "kafka-jars.sh: Kafka $version is too old: the lab runs KRaft, which needs 3.3 or later" >&2
  exit 1
fi
profile=kafka4
(( major >= 4 )) || profile=kafka3

if [[ "$version" == "$pinned" ]]; then
  libs="${KSCOPE_KAFKA_LIBS:-${HOME:-/root}/.cache/kscope/kafka-$version/libs}"
else
  libs="${HOME:-/root}/.cache/kscope/kafka-$version/libs"
fi
marker="$libs/.kscope-complete"
want="$(sha256sum "$pom" | cut -d' ' -f1) $version"

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
old="$libs.old.$$"
trap 'rm -rf "$tmp" "$old"' EXIT
# mvn's output (even with -q it emits stray ANSI codes) is shown only on failure.
if ! out="$(mvn -q -B -Dstyle.color=never -f "$pom" -P "$profile" -Dkafka.version="$version" \
    dependency:copy-dependencies -DoutputDirectory="$tmp" 2>&1)"; then
  echo "$out" >&2
  if grep -q "org.apache.kafka:kafka" <<<"$out"; then
    echo "kafka-jars.sh: Apache Kafka $version is not on Maven Central (org.apache.kafka:kafka_2.13 and kafka-tools $version are needed)" >&2
  fi
  echo "kafka-jars.sh: mvn dependency:copy-dependencies failed" >&2
  exit 1
fi
for jar in kafka_2.13 kafka-tools kafka-clients; do
  [[ -f "$tmp/$jar-$version.jar" ]] || { echo "kafka-jars.sh: $jar-$version.jar missing after mvn" >&2; exit 1; }
done
chmod 755 "$tmp"
echo "$want" >"$tmp/.kscope-complete"
# Two renames rather than rm + mv: a JVM started from the old dir meanwhile
# finds jars at every moment but between the renames.
if [[ -e "$libs" ]]; then
  mv "$libs" "$old"
fi
mv "$tmp" "$libs"
rm -rf "$old"
trap - EXIT
echo "$libs"

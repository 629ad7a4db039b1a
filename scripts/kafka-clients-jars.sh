#!/usr/bin/env bash
# kafka-clients-jars.sh: fetch the org.apache.kafka:kafka-clients jar of each
# Kafka release internal/releases covers from Maven Central into a cache dir
# and print that dir. The jars hold each release's protocol definitions
# (common/message/*Request.json), from which `go generate ./internal/releases`
# writes the table of accepted versions and TestTableMatchesJars checks it.
#
#   scripts/kafka-clients-jars.sh               -> every release in internal/releases/releases.txt
#   scripts/kafka-clients-jars.sh 4.0.2 4.1.2   -> those releases only
#
# The dir is $HOME/.cache/kscope/kafka-clients; each jar is
# kafka-clients-VERSION.jar in it.
# Idempotent: a jar already there is not fetched again (a second run runs no
# mvn). A jar is copied into a temp dir and renamed into place, so a killed
# run never leaves half a jar under the final name. Concurrent runs (parallel
# `go test` packages, setup.sh) are serialized with flock.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
list="$root/internal/releases/releases.txt"
dir="${HOME:-/root}/.cache/kscope/kafka-clients"

if (($#)); then
  versions=("$@")
else
  [[ -f "$list" ]] || { echo "kafka-clients-jars.sh: $list not found" >&2; exit 1; }
  mapfile -t versions < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
fi
for v in "${versions[@]}"; do
  [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "kafka-clients-jars.sh: bad Kafka version \"$v\" (want e.g. 4.0.2)" >&2; exit 1; }
done

missing() {
  local v
  for v in "${versions[@]}"; do
    [[ -f "$dir/kafka-clients-$v.jar" ]] || echo "$v"
  done
}

todo="$(missing)"
if [[ -z "$todo" ]]; then
  echo "$dir"
  exit 0
fi

command -v mvn >/dev/null || { echo "kafka-clients-jars.sh: mvn not found (run scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
# Another run may have fetched some of them while we waited for the lock.
todo="$(missing)"

tmp="$(mktemp -d "$dir/.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
for v in $todo; do
  # mvn's output (even with -q it emits stray ANSI codes) is shown only on failure.
  if ! out="$(mvn -q -B -Dstyle.color=never dependency:copy \
      -Dartifact="org.apache.kafka:kafka-clients:$v" -DoutputDirectory="$tmp" 2>&1)"; then
    echo "$out" >&2
    echo "kafka-clients-jars.sh: mvn dependency:copy of org.apache.kafka:kafka-clients:$v failed" >&2
    exit 1
  fi
  jar="kafka-clients-$v.jar"
  [[ -f "$tmp/$jar" ]] || { echo "kafka-clients-jars.sh: $jar missing after mvn" >&2; exit 1; }
  mv "$tmp/$jar" "$dir/$jar"
done
echo "$dir"

#!/usr/bin/env bash
# keylog-agent-jar.sh: fetch the extract-tls-secrets Java agent
# (name.neykov:extract-tls-secrets:4.0.0, Maven Central) that
# internal/keylogagent loads into a running broker to get its TLS session
# keys, and print the jar's path.
#
#   scripts/keylog-agent-jar.sh   -> $HOME/.cache/kscope/extract-tls-secrets-4.0.0.jar
#   KSCOPE_KEYLOG_AGENT_JAR=/x.jar scripts/keylog-agent-jar.sh   -> /x.jar
#
# The jar is fetched with mvn (dependency:copy resolves it through the local
# repository ~/.m2, so it is downloaded once) and its sha1 checked against
# the one Maven Central publishes (pinned below, and in
# internal/keylogagent: a test keeps them equal). Idempotent: a jar already
# there with that sha1 is a no-op without mvn. A jar at KSCOPE_KEYLOG_AGENT_JAR
# is used as it is (it may be another build on purpose); only a missing one
# is fetched there. Concurrent runs are serialized with flock.
set -euo pipefail

artifact=name.neykov:extract-tls-secrets:4.0.0
sha1=15937ed5f69590881255a19534be9d3edcdd3ed5
name=extract-tls-secrets-4.0.0.jar
# Pinned so that a fresh machine resolves the same plugin every time.
plugin=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

die() { echo "keylog-agent-jar.sh: $*" >&2; exit 1; }

jar="${KSCOPE_KEYLOG_AGENT_JAR:-${HOME:-/root}/.cache/kscope/$name}"
[[ "$jar" == /* ]] || die "KSCOPE_KEYLOG_AGENT_JAR must be an absolute path (got \"$jar\")"

good() {
  [[ -f "$jar" ]] || return 1
  [[ -n "${KSCOPE_KEYLOG_AGENT_JAR:-}" ]] && return 0
  [[ "$(sha1sum "$jar" | cut -d' ' -f1)" == "$sha1" ]]
}

if good; then
  echo "$jar"
  exit 0
fi

command -v mvn >/dev/null || die "mvn not found (run scripts/setup.sh)"
mkdir -p "$(dirname "$jar")"
exec 9>"$jar.lock"
flock 9
# Another run may have fetched it while we waited for the lock.
if good; then
  echo "$jar"
  exit 0
fi

tmp="$(mktemp -d "$jar.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# mvn's output (even with -q it emits stray ANSI codes) is shown only on failure.
if ! out="$(cd "$tmp" && mvn -q -B -Dstyle.color=never "$plugin:copy" \
    -Dartifact="$artifact" -DoutputDirectory="$tmp/out" 2>&1)"; then
  echo "$out" >&2
  die "mvn $plugin:copy -Dartifact=$artifact failed"
fi
[[ -f "$tmp/out/$name" ]] || die "$name missing after mvn"
got="$(sha1sum "$tmp/out/$name" | cut -d' ' -f1)"
[[ "$got" == "$sha1" ]] || die "$name has sha1 $got, Maven Central publishes $sha1: not using it"
chmod 644 "$tmp/out/$name"
mv -f "$tmp/out/$name" "$jar"
echo "$jar"

#!/usr/bin/env bash
# zoo-sarama.sh: build the Sarama client of the client zoo of the tests
# (internal/testkit/clientzoo/sarama, a Go module of its own so that Sarama
# never enters kscope's go.mod) and print the binary's path.
#
#   scripts/zoo-sarama.sh   -> $HOME/.cache/kscope/zoo-sarama/zoo-sarama
#
# Idempotent: a marker holds the sha256 of the module's go.mod, go.sum and
# sources and of `go version`, so a second run is a no-op; concurrent runs
# are serialized with flock. The modules come through the Go module proxy.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/internal/testkit/clientzoo/sarama"
[[ -f "$src/go.mod" ]] || { echo "zoo-sarama.sh: $src/go.mod not found" >&2; exit 1; }
command -v go >/dev/null || { echo "zoo-sarama.sh: go not found on PATH" >&2; exit 1; }

dir="${HOME:-/root}/.cache/kscope/zoo-sarama"
bin="$dir/zoo-sarama"
marker="$dir/.kscope-complete"
want="$( (cd "$src" && cat go.mod go.sum ./*.go; go version) | sha256sum | cut -d' ' -f1)"
complete() { [[ -f "$marker" && "$(cat "$marker")" == "$want" && -x "$bin" ]]; }

if complete; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if complete; then
  echo "$bin"
  exit 0
fi

tmp="$(mktemp "$bin.tmp.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
if ! out="$(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$tmp" . 2>&1)"; then
  echo "$out" >&2
  echo "zoo-sarama.sh: go build in $src failed" >&2
  exit 1
fi
mv "$tmp" "$bin"
trap - EXIT
echo "$want" >"$marker"
echo "$bin"

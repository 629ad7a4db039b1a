#!/usr/bin/env bash
# python-venv.sh: make the Python venv of the client zoo of the tests
# (internal/testkit/clientzoo) with the clients pinned in
# lab/python/requirements.txt (confluent-kafka, kafka-python), and print
# its python.
#
#   scripts/python-venv.sh   -> $HOME/.cache/kscope/venv/bin/python
#
# Idempotent: a marker holds the sha256 of the requirements and the base
# python's version, so a second run is a no-op without pip, and a changed
# pin rebuilds. Concurrent runs are serialized with flock. Needs python3
# with the venv module (Debian: python3-venv, which scripts/setup.sh
# installs).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
reqs="$root/lab/python/requirements.txt"
[[ -f "$reqs" ]] || { echo "python-venv.sh: $reqs not found" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python-venv.sh: python3 not found on PATH" >&2; exit 1; }

venv="${HOME:-/root}/.cache/kscope/venv"
marker="$venv/.kscope-complete"
want="$(sha256sum "$reqs" | cut -d' ' -f1) $(python3 -c 'import sys; print(sys.version.split()[0])')"
complete() { [[ -f "$marker" && "$(cat "$marker")" == "$want" && -x "$venv/bin/python" ]]; }

if complete; then
  echo "$venv/bin/python"
  exit 0
fi

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if complete; then
  echo "$venv/bin/python"
  exit 0
fi

# A venv is not relocatable, so it is built in place; the marker, written
# last, is what says it is whole.
rm -rf "$venv"
if ! out="$(python3 -m venv "$venv" 2>&1)"; then
  echo "$out" >&2
  echo "python-venv.sh: python3 -m venv failed (Debian: apt-get install python3-venv, or run scripts/setup.sh)" >&2
  exit 1
fi
if ! out="$("$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$reqs" 2>&1)"; then
  echo "$out" >&2
  echo "python-venv.sh: pip install -r $reqs failed" >&2
  exit 1
fi
echo "$want" >"$marker"
echo "$venv/bin/python"

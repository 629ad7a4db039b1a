#!/usr/bin/env bash
# test.sh: run every kscope test on this machine, installing what the tests
# need first (scripts/setup.sh). Safe to run again. Real brokers, real
# captures: run as root. With CI=true a missing prerequisite fails the run
# instead of skipping the tests that need it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh
unformatted="$(gofmt -l cmd internal)"
if [[ -n "$unformatted" ]]; then
  echo "test.sh: not gofmt'ed:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
CGO_ENABLED=0 go build -o bin/kscope ./cmd/kscope
# -p 1: the end-to-end packages each start real brokers and JVM clients;
# on 2 cores they measure latency better one at a time.
go test -count=1 -p 1 -timeout 40m ./...

#!/usr/bin/env bash
# observability-tools.sh: build the real observability servers that the
# integration tests run on loopback, into a cache dir, from the Go module
# proxy only (pinned versions). Idempotent: what is already built is kept.
#
#   scripts/observability-tools.sh [prometheus] [otelcol] [jaeger] [grafana]
#
# No argument = prometheus otelcol jaeger. Prints one `name=/path` line per
# tool on stdout (build logs go to $dir/logs/); exits non-zero with a one-line
# reason on stderr if a tool could not be installed.
#
#   prometheus  Debian 12's prometheus 2.42.0, the release package
#               (apt-get download + dpkg -x, ~2 s, needs `apt-get update`
#               once; nothing installed system-wide, no service started).
#               KSCOPE_OBS_PROMETHEUS=go builds Prometheus 3.16.0 (module
#               github.com/prometheus/prometheus v0.316.0) instead, API only:
#               the web UI's assets are not in the module (/query etc. answer
#               500; /api/v1/* and /-/ready work); ~6 min on 2 cores.
#   otelcol     an OpenTelemetry Collector 0.161.0 made with the official
#               builder (ocb): otlp receiver, debug + file exporters, batch
#               processor. ~1-3 min.
#   jaeger      Jaeger v2 (cmd/jaeger, module v1.76.0): OTLP in, query API
#               /api/traces; no UI assets (placeholder page). ~3 min.
#               Set `enable_tracing: false` under extensions.jaeger_query in its
#               config: otherwise it sends its own spans to localhost:4317 and,
#               if nothing listens there, hangs on SIGTERM retrying them.
#   grafana     not installable here (see below): asking for it fails.
#
# Environment: KSCOPE_CACHE (default ~/.cache/kscope); the dir is
# $KSCOPE_CACHE/observability unless KSCOPE_OBS_DIR is set.
set -euo pipefail

PROM_MOD=v0.316.0 PROM_VERSION=3.16.0
OTELCOL_VERSION=0.161.0 OTELCOL_STABLE=1.67.0 # core v0.x and v1.x of one release
JAEGER_MOD=v1.76.0

dir="${KSCOPE_OBS_DIR:-${KSCOPE_CACHE:-$HOME/.cache/kscope}/observability}"
mkdir -p "$dir/bin" "$dir/logs" "$dir/src"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

die() { echo "observability-tools.sh: $*" >&2; exit 1; }
command -v go >/dev/null || die "go not found on PATH (Go 1.26 is needed to build the servers)"

# run LOG CMD...: run a build step, its output into LOG; on failure die with
# the log's last line.
run() {
  local log="$1"; shift
  if ! "$@" >>"$log" 2>&1; then
    die "$(basename "$log" .log): build failed: $(tail -n 1 "$log") (full log: $log)"
  fi
}

install_prometheus() {
  if [[ "${KSCOPE_OBS_PROMETHEUS:-deb}" == deb ]]; then
    local out="$dir/bin/prometheus-deb"
    if [[ ! -x "$out" ]]; then
      local tmp log="$dir/logs/prometheus-deb.log"
      tmp="$(mktemp -d "$dir/src/prom-deb.XXXXXX")"
      if ! (cd "$tmp" && apt-get download prometheus) >"$log" 2>&1; then
        apt-get update -qq >>"$log" 2>&1 || true
        (cd "$tmp" && apt-get download prometheus) >>"$log" 2>&1 ||
          die "prometheus: apt-get download failed: $(tail -n 1 "$log")"
      fi
      run "$log" dpkg -x "$tmp"/prometheus_*.deb "$tmp/root"
      mv "$tmp/root/usr/bin/prometheus" "$out"
      rm -rf "$tmp"
    fi
    echo "prometheus=$out"
    return
  fi
  local out="$dir/bin/prometheus-$PROM_VERSION"
  if [[ ! -x "$out" ]]; then
    local tmp log="$dir/logs/prometheus.log" v=github.com/prometheus/common/version
    tmp="$(mktemp -d "$dir/src/prom.XXXXXX")"
    : >"$log"
    run "$log" env GOBIN="$tmp" go install -trimpath \
      -ldflags "-X $v.Version=$PROM_VERSION -X $v.Branch=module-$PROM_MOD -X $v.BuildUser=kscope" \
      "github.com/prometheus/prometheus/cmd/prometheus@$PROM_MOD"
    mv "$tmp/prometheus" "$out"
    rm -rf "$tmp"
  fi
  echo "prometheus=$out"
}

install_otelcol() {
  local out="$dir/bin/otelcol-$OTELCOL_VERSION"
  if [[ ! -x "$out" ]]; then
    local log="$dir/logs/otelcol.log" src="$dir/src/otelcol-$OTELCOL_VERSION"
    : >"$log"
    rm -rf "$src" && mkdir -p "$src"
    run "$log" env GOBIN="$src" go install "go.opentelemetry.io/collector/cmd/builder@v$OTELCOL_VERSION"
    cat >"$src/builder.yaml" <<EOF
dist:
  name: otelcol-kscope
  description: kscope test collector (OTLP in; debug and file out)
  output_path: $src/build
  version: $OTELCOL_VERSION
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$OTELCOL_VERSION
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v$OTELCOL_VERSION
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v$OTELCOL_VERSION
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor v$OTELCOL_VERSION
providers:
  - gomod: go.opentelemetry.io/collector/confmap/provider/fileprovider v$OTELCOL_STABLE
  - gomod: go.opentelemetry.io/collector/confmap/provider/envprovider v$OTELCOL_STABLE
  - gomod: go.opentelemetry.io/collector/confmap/provider/yamlprovider v$OTELCOL_STABLE
EOF
    run "$log" "$src/builder" --config "$src/builder.yaml"
    mv "$src/build/otelcol-kscope" "$out"
    rm -rf "$src"
  fi
  echo "otelcol=$out"
}

install_jaeger() {
  local out="$dir/bin/jaeger-$JAEGER_MOD"
  if [[ ! -x "$out" ]]; then
    local log="$dir/logs/jaeger.log" src="$dir/src/jaeger-$JAEGER_MOD"
    : >"$log"
    rm -rf "$src" && mkdir -p "$src"
    # cmd/jaeger's module has a replace directive, so `go install pkg@v`
    # refuses it: build it as a tool dependency of a throwaway module.
    (
      cd "$src"
      run "$log" go mod init kscope.local/jaeger-tool
      run "$log" go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_MOD"
      run "$log" go build -trimpath -o jaeger \
        -ldflags "-X github.com/jaegertracing/jaeger/internal/version.latestVersion=$JAEGER_MOD" \
        github.com/jaegertracing/jaeger/cmd/jaeger
    )
    mv "$src/jaeger" "$out"
    rm -rf "$src"
  fi
  echo "jaeger=$out"
}

install_grafana() {
  die "grafana: not installable here: it is AGPL-licensed, the Go module proxy refuses github.com/grafana/grafana (403) and this workplace marks it not-to-use; no package with a Grafana server or its built frontend was found on the reachable registries"
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(prometheus otelcol jaeger)
for t in "${tools[@]}"; do
  case "$t" in
    prometheus | otelcol | jaeger | grafana) "install_$t" ;;
    *) die "unknown tool '$t' (known: prometheus otelcol jaeger grafana)" ;;
  esac
done

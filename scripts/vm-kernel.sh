#!/usr/bin/env bash
# vm-kernel.sh: fetch the Debian bookworm cloud kernel that internal/testkit/vm
# boots under qemu (docs/vmtest.md), and print the dir it is unpacked in.
#
#   scripts/vm-kernel.sh   -> $HOME/.cache/kscope/vm/linux-image-6.1.0-NN-cloud-amd64_VERSION
#   KSCOPE_CACHE=/x scripts/vm-kernel.sh   -> /x/vm/...
#
# Run as root (it installs what is missing):
#   - apt: qemu-system-x86, cpio, xz-utils, e2fsprogs, xfsprogs, and kmod
#     (depmod writes the modules.dep that the .deb does not ship)
#   - the concrete package the meta package linux-image-cloud-amd64 depends
#     on (its current candidate), fetched with `apt-get download` and
#     unpacked with `dpkg-deb -x`: never `apt-get install`ed, which would run
#     this host's initramfs and grub hooks. ~27 MB download, ~110 MB unpacked.
#
# The dir holds boot/{vmlinuz,config,System.map}-KVER and lib/modules/KVER
# (with modules.dep). Only that dir goes to stdout; progress to stderr.
# Idempotent: a marker file records the package and version the dir was
# built from, so a second run needs no network; concurrent runs are
# serialized with flock. When the current candidate cannot be fetched, an
# earlier kernel in the cache is used with a warning, except with CI=true,
# where any failure is fatal.
set -euo pipefail

export PATH="$PATH:/usr/sbin:/sbin"
export DEBIAN_FRONTEND=noninteractive

meta=linux-image-cloud-amd64
cache="${KSCOPE_CACHE:-${HOME:-/root}/.cache/kscope}/vm"
ci=false
[[ "${CI:-}" == true ]] && ci=true

say() { echo "vm-kernel.sh: $*" >&2; }
die() {
  say "$*"
  if $ci; then
    say "FAILED (CI=true: the VM kernel is mandatory)"
  fi
  exit 1
}

# --- tools -----------------------------------------------------------------

# Debian package -> a command it provides.
declare -A pkgs=(
  [qemu-system-x86]=qemu-system-x86_64
  [cpio]=cpio
  [xz-utils]=xz
  [e2fsprogs]=mkfs.ext4
  [xfsprogs]=mkfs.xfs
  [kmod]=depmod
)
missing=()
for p in "${!pkgs[@]}"; do
  command -v "${pkgs[$p]}" >/dev/null || missing+=("$p")
done

# Runs a command quietly, showing its output only when it fails.
quiet() {
  local out
  if ! out="$("$@" 2>&1)"; then
    echo "$out" >&2
    return 1
  fi
}

updated=false
apt_update() {
  $updated && return 0
  [[ "$(id -u)" == 0 ]] || { say "need root to apt-get update"; return 1; }
  say "apt-get update"
  quiet apt-get update -qq || { say "apt-get update failed"; return 1; }
  updated=true
}

if ((${#missing[@]})); then
  [[ "$(id -u)" == 0 ]] || die "need root to apt-get install: ${missing[*]}"
  say "installing ${missing[*]}"
  if ! quiet apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    apt_update || die "cannot install ${missing[*]}"
    quiet apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
      die "apt-get install ${missing[*]} failed"
  fi
fi

# --- which kernel ----------------------------------------------------------

# Sets pkg (linux-image-6.1.0-NN-cloud-amd64), ver and dir from apt's lists:
# the meta package's candidate depends on "linux-image-... (= VERSION)".
resolve() {
  local dep
  dep="$(apt-cache show --no-all-versions "$meta" 2>/dev/null | sed -n 's/^Depends: //p' | head -n1 |
    tr ',|' '\n\n' | grep -o 'linux-image-[0-9][^ ]*-cloud-amd64\( *(= *[^)]*)\)\?' | head -n1)" || true
  pkg="${dep%% *}"
  [[ -n "$pkg" ]] || return 1
  ver="$(sed -n 's/.*(= *\([^)]*\)).*/\1/p' <<<"$dep")"
  if [[ -z "$ver" ]]; then
    ver="$(apt-cache policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }')"
    [[ -n "$ver" && "$ver" != "(none)" ]] || return 1
  fi
  dir="$cache/${pkg}_${ver}"
}

complete() { [[ -f "$dir/.kscope-complete" && "$(cat "$dir/.kscope-complete")" == "$pkg $ver" ]]; }

# An earlier kernel already in the cache (the newest), for when the current
# candidate cannot be had. Not under CI.
fallback() {
  $ci && return 1
  local best
  best="$(find "$cache" -mindepth 2 -maxdepth 2 -name .kscope-complete -printf '%h\n' 2>/dev/null | sort -V | tail -n1)"
  [[ -n "$best" ]] || return 1
  say "WARNING: using the cached $best instead"
  echo "$best"
}

if ! resolve; then
  # No (or stale) apt lists: the meta package is unknown.
  if ! apt_update || ! resolve; then
    say "apt knows no $meta (is bookworm main in the apt sources?)"
    fallback || die "no kernel"
    exit 0
  fi
fi

if complete; then
  echo "$dir"
  exit 0
fi

# --- fetch and unpack ------------------------------------------------------

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

# Downloads "$pkg=$ver" into $tmp.
fetch() {
  (cd "$tmp" && quiet apt-get -qq -o APT::Sandbox::User=root download "$pkg=$ver")
}

tmp=""
trap 'if [[ -n "$tmp" ]]; then rm -rf "$tmp"; fi' EXIT
for attempt in 1 2; do
  # Another run may have finished while we waited for the lock.
  if complete; then
    echo "$dir"
    exit 0
  fi
  tmp="$(mktemp -d "$cache/.tmp.XXXXXX")"
  say "downloading $pkg $ver"
  if fetch; then
    break
  fi
  rm -rf "$tmp"
  tmp=""
  # The lists may name a version the mirror no longer has (security
  # updates replace kernels): refresh them once and resolve again.
  if ((attempt == 1)) && ! $updated && apt_update; then
    resolve || die "apt knows no $meta after apt-get update"
    continue
  fi
  say "apt-get download $pkg=$ver failed"
  fallback || die "no kernel"
  exit 0
done

debs=("$tmp"/*.deb)
[[ -f "${debs[0]}" ]] || die "apt-get download left no .deb"
dpkg-deb -x "${debs[0]}" "$tmp/x" || die "dpkg-deb -x ${debs[0]} failed"
rm -f "${debs[@]}"

kver="${pkg#linux-image-}"
moddir="$tmp/x/lib/modules/$kver"
[[ -d "$moddir" ]] || die "$pkg has no lib/modules/$kver"
for f in vmlinuz config; do
  [[ -f "$tmp/x/boot/$f-$kver" ]] || die "$pkg has no boot/$f-$kver"
done
# The .deb has no modules.dep (its postinst runs depmod): make it here.
depmod -b "$tmp/x" "$kver" || die "depmod failed"
[[ -s "$moddir/modules.dep" ]] || die "depmod wrote no modules.dep"

echo "$pkg $ver" >"$tmp/x/.kscope-complete"
rm -rf "$dir"
mv "$tmp/x" "$dir"
say "unpacked $pkg $ver"
echo "$dir"

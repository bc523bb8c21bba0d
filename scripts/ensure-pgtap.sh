#!/usr/bin/env bash
# Installs pgTAP's extension files (pgtap.control, pgtap--*.sql) into a
# PostgreSQL extension directory that lacks them.
#
#   scripts/ensure-pgtap.sh <target extension dir>
#
# pgTAP is plain SQL, so the files of Debian's postgresql-15-pgtap package
# load on any PostgreSQL 15-18 server. Sources, in order:
#   1. an installed /usr/share/postgresql/*/extension/pgtap.control;
#   2. `apt-get download postgresql-15-pgtap` (after `apt-get update` when the
#      first download fails), unpacked with dpkg-deb into a temp dir.
# When pgTAP cannot be had: prints how to get it by hand, then exits 1 if
# REQUIRE_PGTAP=1 (CI), else prints a SKIPPED line and exits 0 (the caller
# re-checks availability).
set -euo pipefail

target="${1:-}"
if [[ -z "$target" ]]; then
  echo "usage: $0 <postgresql extension dir>" >&2
  exit 2
fi

# How to get pgTAP by hand (README.md, "Set up", says the same).
how_to() {
  cat >&2 <<EOF
ensure-pgtap: to get pgTAP, install it for some local PostgreSQL, then run the tests again:
ensure-pgtap:   - Debian, Ubuntu, the postgres Docker image: apt-get install postgresql-NN-pgtap
ensure-pgtap:     (NN: that server's major version; this script then copies it from
ensure-pgtap:     /usr/share/postgresql/NN/extension);
ensure-pgtap:   - PGXN client: pgxn install pgtap;
ensure-pgtap:   - from source (pgTAP's release tarball): make && make install.
ensure-pgtap: Installed anywhere but /usr/share/postgresql/*/extension, copy pgtap.control and
ensure-pgtap: pgtap--*.sql from that extension directory (pg_config --sharedir, then extension/)
ensure-pgtap: into $target
EOF
}

give_up() {
  local why="$1"
  if [[ "${REQUIRE_PGTAP:-}" == "1" ]]; then
    echo "ensure-pgtap: ERROR: pgTAP is required (REQUIRE_PGTAP=1) but could not be installed into $target: $why" >&2
    how_to
    exit 1
  fi
  echo "ensure-pgtap: SKIPPED: pgTAP could not be installed into $target ($why); the database tests will NOT run." >&2
  how_to
  exit 0
}

if [[ -f "$target/pgtap.control" ]]; then
  echo "ensure-pgtap: pgTAP already present in $target"
  exit 0
fi

mkdir -p "$target" 2>/dev/null || true
if [[ ! -d "$target" || ! -w "$target" ]]; then
  give_up "target directory is missing or not writable"
fi

copy_from() {
  local src="$1"
  # pgtap.control, pgtap--*.sql and the pgtap-core/pgtap-schema variants.
  cp -f "$src"/pgtap* "$target"/
  echo "ensure-pgtap: installed pgTAP from $src into $target"
}

# 1. Already installed for some local PostgreSQL.
for control in /usr/share/postgresql/*/extension/pgtap.control; do
  [[ -f "$control" ]] || continue
  src="$(dirname "$control")"
  [[ "$(cd "$src" && pwd -P)" == "$(cd "$target" && pwd -P)" ]] && continue
  copy_from "$src"
  exit 0
done

# 2. Debian's package, unpacked without installing.
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  give_up "no apt-get/dpkg-deb on this machine to fetch postgresql-15-pgtap"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; _apt must be able to write there.
chmod 0777 "$tmp"

download() {
  (cd "$tmp" && apt-get download -q postgresql-15-pgtap) >"$tmp/apt.log" 2>&1
}

if ! download; then
  echo "ensure-pgtap: apt-get download failed; running apt-get update and retrying" >&2
  apt-get update -q >"$tmp/apt-update.log" 2>&1 || true
  if ! download; then
    cat "$tmp/apt.log" >&2 || true
    give_up "apt-get download postgresql-15-pgtap failed"
  fi
fi

deb="$(ls "$tmp"/postgresql-15-pgtap_*.deb 2>/dev/null | head -n 1 || true)"
[[ -n "$deb" ]] || give_up "apt-get download produced no .deb"
mkdir -p "$tmp/x"
dpkg-deb -x "$deb" "$tmp/x" || give_up "dpkg-deb -x failed on $(basename "$deb")"
src="$tmp/x/usr/share/postgresql/15/extension"
[[ -f "$src/pgtap.control" ]] || give_up "the package holds no usr/share/postgresql/15/extension/pgtap.control"
copy_from "$src"

#!/usr/bin/env bash
# Builds and installs Citus 13.2.2 for the machine's PostgreSQL 15, once.
#
#   scripts/citus/build.sh            (as root; about 5 minutes on 2 cores)
#
# Sources: ${CITUS_VENDOR_DIR:-<repo>/../shared/vendor}, which holds
# citus-13.2.2.tar.gz and citus-13.2.2-pg15.20.patch (its README.md says why
# the patch is needed). PostgreSQL 15 is found through PG_CONFIG, default
# /usr/lib/postgresql/15/bin/pg_config.
#
# Idempotent: when citus.so is installed and says it is Citus 13.2.2 (the
# stamp file citus.pressroom-version next to citus.control, written by this
# script, or the version string compiled into citus.so), it prints
# "citus 13.2.2 already installed" and exits 0. (citus.control's
# default_version is the SQL version, 13.2-1, which 13.2.0-13.2.x share.)
# Build packages missing from the machine are installed with apt-get when
# running as root; otherwise the script names them and exits 1.
set -euo pipefail

VERSION=13.2.2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd "$here/../.." && pwd -P)"
vendor="${CITUS_VENDOR_DIR:-$repo/../shared/vendor}"
pg_config="${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}"

die() { echo "citus build: $*" >&2; exit 1; }

# 1. Already installed?
if [[ -x "$pg_config" ]]; then
  libdir="$("$pg_config" --pkglibdir)"
  sharedir="$("$pg_config" --sharedir)"
  stamp="$sharedir/extension/citus.pressroom-version"
  if [[ -f "$libdir/citus.so" && -f "$sharedir/extension/citus.control" ]] &&
     { grep -qx "$VERSION" "$stamp" 2>/dev/null || grep -aq "Citus $VERSION " "$libdir/citus.so"; }; then
    echo "citus $VERSION already installed"
    exit 0
  fi
fi

# 2. Sources.
tarball="$vendor/citus-$VERSION.tar.gz"
patchfile="$vendor/citus-$VERSION-pg15.20.patch"
[[ -d "$vendor" ]] || die "vendor directory $vendor is missing (set CITUS_VENDOR_DIR to the directory holding citus-$VERSION.tar.gz)"
[[ -f "$tarball" ]] || die "$tarball is missing"
[[ -f "$patchfile" ]] || die "$patchfile is missing"

# 3. Build packages (the list of ../shared/vendor/README.md).
packages=(postgresql-server-dev-15 flex bison autoconf make gcc patch libcurl4-openssl-dev
  liblz4-dev libzstd-dev libkrb5-dev libssl-dev libpam0g-dev libxslt1-dev libselinux1-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ "$(id -u)" -ne 0 ]]; then
    die "missing build packages: ${missing[*]} (run as root, or: apt-get install -y ${missing[*]})"
  fi
  echo "citus build: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
[[ -x "$pg_config" ]] || die "$pg_config not found (postgresql-server-dev-15)"
if [[ ! -w "$("$pg_config" --pkglibdir)" ]]; then
  die "$("$pg_config" --pkglibdir) is not writable: run as root"
fi

# 4. Unpack, patch, build, install.
tmp="$(mktemp -d /tmp/citus-build.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
tar xzf "$tarball" -C "$tmp"
src="$tmp/citus-$VERSION"
[[ -d "$src" ]] || die "$tarball did not unpack into citus-$VERSION/"
cd "$src"
patch -p1 <"$patchfile"
echo "citus build: configure"
PG_CONFIG="$pg_config" ./configure --quiet
echo "citus build: make -j${CITUS_MAKE_JOBS:-2} (a few minutes)"
make -s -j"${CITUS_MAKE_JOBS:-2}"
make -s install
grep -aq "Citus $VERSION " "$("$pg_config" --pkglibdir)/citus.so" ||
  die "the installed citus.so does not name itself Citus $VERSION"
echo "$VERSION" >"$("$pg_config" --sharedir)/extension/citus.pressroom-version"
echo "citus $VERSION installed into $("$pg_config" --pkglibdir)"

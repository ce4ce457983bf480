#!/bin/sh
# Installs the cachet binary that suits this machine from a release directory
# or base URL holding the files of `npm run build` (dist/) and their SHA256SUMS.
#
#   sh install.sh [--from DIR|URL] [--prefix DIR]
#
#   --from    a directory or an http(s) base URL with cachet-* binaries and
#             SHA256SUMS; default: the directory this script is in, when it
#             holds a SHA256SUMS file.
#   --prefix  where to put `cachet`; default /usr/local/bin for root,
#             otherwise $HOME/.local/bin.
#
# It picks cachet-<os>-<arch>[-musl][-baseline][.exe] (build/targets.ts) from
# uname, the C library and the CPU: x86-64 CPUs without AVX2 get the baseline
# build. The file must match its SHA256SUMS line or nothing is installed.
# The binary replaces any previous one atomically (rename in the prefix).
#
# Overrides, for tests and unusual machines:
#   CACHET_INSTALL_UNAME_S, CACHET_INSTALL_UNAME_M   instead of `uname -s` / `uname -m`
#   CACHET_INSTALL_LIBC=glibc|musl                   instead of detecting the C library
#   CACHET_INSTALL_CPUINFO=FILE                      read CPU flags from FILE, not /proc/cpuinfo
#   CACHET_INSTALL_AVX2=1|0                          skip CPU detection altogether
#
# Exit status: 0 installed, 1 failed (download, checksum, unsupported
# platform), 2 bad arguments.
set -eu

say() { printf '%s\n' "install.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { say "$*"; say "usage: sh install.sh [--from DIR|URL] [--prefix DIR]"; exit 2; }

from=""
prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ $# -ge 2 ] || usage "--from needs a directory or URL"; from=$2; shift 2 ;;
    --from=*) from=${1#--from=}; shift ;;
    --prefix) [ $# -ge 2 ] || usage "--prefix needs a directory"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage "unknown argument: $1" ;;
  esac
done

if [ -z "$from" ]; then
  here=$(cd "$(dirname "$0")" && pwd)
  [ -f "$here/SHA256SUMS" ] || usage "--from is required (no SHA256SUMS next to this script)"
  from=$here
fi
if [ -z "$prefix" ]; then
  if [ "$(id -u)" = 0 ]; then prefix=/usr/local/bin; else prefix="${HOME:?HOME is not set; pass --prefix}/.local/bin"; fi
fi

# --- which binary ------------------------------------------------------------

uname_s=${CACHET_INSTALL_UNAME_S:-$(uname -s)}
uname_m=${CACHET_INSTALL_UNAME_M:-$(uname -m)}

case "$uname_s" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  MINGW*|MSYS*|CYGWIN*|Windows_NT) os=windows ;;
  *) die "unsupported operating system \"$uname_s\": cachet is built for Linux, macOS and Windows; build from source (see README.md)" ;;
esac

case "$uname_m" in
  x86_64|amd64|x64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) die "unsupported CPU architecture \"$uname_m\" on $uname_s: cachet is built for x86-64 and arm64; build from source (see README.md)" ;;
esac

# An x64 shell under Rosetta 2 on Apple silicon: the native arm64 build is faster.
if [ "$os" = darwin ] && [ "$arch" = x64 ] && [ -z "${CACHET_INSTALL_UNAME_M:-}" ] \
  && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
  arch=arm64
fi

[ "$os" = windows ] && [ "$arch" = arm64 ] && die "unsupported platform windows-arm64: cachet is built for windows-x64 only"

libc=glibc
if [ "$os" = linux ]; then
  if [ -n "${CACHET_INSTALL_LIBC:-}" ]; then
    libc=$CACHET_INSTALL_LIBC
  elif ls /lib/ld-musl-* >/dev/null 2>&1 || (ldd --version 2>&1 || true) | grep -qi musl; then
    libc=musl
  fi
  case "$libc" in glibc|musl) ;; *) usage "CACHET_INSTALL_LIBC must be glibc or musl, not \"$libc\"" ;; esac
  [ "$libc" = musl ] && [ "$arch" = arm64 ] && die "unsupported platform linux-arm64 with musl: cachet's musl build is x86-64 only"
fi

has_avx2() {
  if [ -n "${CACHET_INSTALL_AVX2:-}" ]; then
    [ "$CACHET_INSTALL_AVX2" = 1 ]
    return
  fi
  if [ "$os" = darwin ]; then
    [ "$(sysctl -n hw.optional.avx2_0 2>/dev/null || true)" = 1 ] && return 0
    sysctl -n machdep.cpu.leaf7_features 2>/dev/null | grep -qw AVX2
    return
  fi
  # Linux, and Cygwin/MSYS on Windows, which provide /proc/cpuinfo too. An
  # unreadable file means we cannot tell, and the baseline build runs anywhere.
  cpuinfo=${CACHET_INSTALL_CPUINFO:-/proc/cpuinfo}
  [ -r "$cpuinfo" ] || return 1
  grep '^flags' "$cpuinfo" | head -n 1 | grep -qw avx2
}

suffix=""
if [ "$arch" = x64 ] && ! has_avx2; then
  if [ "$libc" = musl ]; then
    say "warning: this CPU lacks AVX2 and there is no musl baseline build; installing the musl build, which may stop with \"Illegal instruction\""
  else
    suffix=-baseline
  fi
fi
ext=""
[ "$os" = windows ] && ext=.exe
musl=""
[ "$libc" = musl ] && musl=-musl
file="cachet-$os-$arch$musl$suffix$ext"

# --- fetch and verify ----------------------------------------------------------

work=$(mktemp -d "${TMPDIR:-/tmp}/cachet-install.XXXXXX")
staged=""
cleanup() {
  rm -rf "$work"
  if [ -n "$staged" ]; then rm -f "$staged"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

download() { # URL DEST
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1" || die "cannot download $1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || die "cannot download $1"
  else
    die "neither curl nor wget is installed; download $1 yourself and pass --from DIR"
  fi
}

case "$from" in
  http://*|https://*)
    base=${from%/}
    download "$base/SHA256SUMS" "$work/SHA256SUMS"
    download "$base/$file" "$work/$file"
    sums="$work/SHA256SUMS"
    binary="$work/$file"
    ;;
  *)
    [ -d "$from" ] || die "--from $from is neither a directory nor an http(s) URL"
    sums="$from/SHA256SUMS"
    binary="$from/$file"
    [ -f "$sums" ] || die "no SHA256SUMS in $from: refusing to install an unverified binary"
    [ -f "$binary" ] || die "no $file in $from (this machine: $uname_s $uname_m, $libc); run \`npm run build\` for the full matrix"
    ;;
esac

expected=$(awk -v f="$file" '{ n = $2; sub(/^\*/, "", n); if (n == f) { print $1; exit } }' "$sums")
[ -n "$expected" ] || die "SHA256SUMS has no line for $file: refusing to install an unverified binary"

if command -v sha256sum >/dev/null 2>&1; then
  actual=$(sha256sum "$binary" | awk '{ print $1 }')
elif command -v shasum >/dev/null 2>&1; then
  actual=$(shasum -a 256 "$binary" | awk '{ print $1 }')
elif command -v openssl >/dev/null 2>&1; then
  actual=$(openssl dgst -sha256 -r "$binary" | awk '{ print $1 }')
else
  die "no sha256sum, shasum or openssl found: cannot verify $file"
fi
if [ "$actual" != "$expected" ]; then
  die "checksum mismatch for $file: SHA256SUMS says $expected, the file is $actual; the download is corrupt or was tampered with; nothing was installed"
fi

# --- install -------------------------------------------------------------------

mkdir -p "$prefix" || die "cannot create $prefix; pass --prefix DIR"
# Absolute from here on: the PATH it suggests must work from any directory (--prefix bin would say "bin:$PATH").
prefix=$(cd "$prefix" && pwd) || die "cannot enter $prefix; pass --prefix DIR"
target="$prefix/cachet$ext"
staged="$prefix/.cachet-install.$$"
cp "$binary" "$staged" || die "cannot write to $prefix; pass --prefix DIR or run as a user who can"
chmod 755 "$staged"
mv -f "$staged" "$target" || die "cannot replace $target"
staged=""

version=$("$target" --version 2>/dev/null) || version=""
if [ -n "$version" ]; then
  say "installed cachet $version ($file, sha256 $actual) as $target"
else
  say "installed $file (sha256 $actual) as $target, but \`$target --version\` did not run: this build may not suit this machine"
fi
case ":${PATH:-}:" in
  *":$prefix:"*) ;;
  *) say "note: $prefix is not on PATH; add it, e.g. export PATH=\"$prefix:\$PATH\"" ;;
esac

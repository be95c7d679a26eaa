#!/bin/sh
# Compiles h3load into DIRECTORY (created if needed) and prints the executable's path.
# Needs Debian bookworm's libngtcp2-dev, libngtcp2-crypto-gnutls-dev, libnghttp3-dev and libgnutls28-dev
# (scripts/test.sh installs them). Usage: benchmarks/h3load/build.sh DIRECTORY
set -eu
if [ $# -ne 1 ]; then
    echo "usage: $0 DIRECTORY" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)/h3load
packages="libngtcp2 libngtcp2_crypto_gnutls libnghttp3 gnutls"
# shellcheck disable=SC2046,SC2086
cc -O2 -std=gnu11 -Wall -Wextra -o "$out" "$here"/main.c "$here"/conn.c "$here"/io.c "$here"/h3.c "$here"/../histogram/histogram.c \
    $(pkg-config --cflags $packages) $(pkg-config --libs $packages)
echo "$out"

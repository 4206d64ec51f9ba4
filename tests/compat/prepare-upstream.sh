#!/usr/bin/env bash
# Builds the conformance suite's reference for one generation of CRIU's amdgpu plugin: takes
# the plugin's schema (criu-amdgpu.proto) from Debian's criu source of SUITE
# (scripts/get-criu-source.sh), or from a criu source tree or git repository (SUITE "dev",
# with CRIU_AMDGPU_CRIU_DEV naming it, at its criu-dev branch), generates protobuf-c code from
# it and compiles upstream_images.c against that code into OUT/upstream-images.
# Fails, saying why, when the schema cannot be obtained: the compat tests then fail too.
#
# Usage: prepare-upstream.sh SUITE OUT SRC_CACHE
set -euo pipefail
suite=$1 out=$2 cache=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out/gen"

if [ "$suite" = dev ]; then
  src=${CRIU_AMDGPU_CRIU_DEV:?CRIU_AMDGPU_CRIU_DEV names no criu source or git repository}
  if [ -f "$src/plugins/amdgpu/criu-amdgpu.proto" ]; then
    cp "$src/plugins/amdgpu/criu-amdgpu.proto" "$out/criu-amdgpu.proto"
    echo "source tree $src" > "$out/VERSION"
  else
    git -C "$src" show criu-dev:plugins/amdgpu/criu-amdgpu.proto > "$out/criu-amdgpu.proto"
    echo "criu-dev $(git -C "$src" rev-parse --short criu-dev)" > "$out/VERSION"
  fi
else
  dir=$("$here/../../scripts/get-criu-source.sh" "$cache" "$suite")
  cp "$dir/$suite/criu-amdgpu.proto" "$dir/$suite/img-streamer.proto" "$out/"
  echo "Debian $suite criu $(cat "$dir/$suite/VERSION")" > "$out/VERSION"
fi

protoc-c --c_out="$out/gen" --proto_path="$out" "$out/criu-amdgpu.proto"
cc=${CC:-cc}
pc=$(pkg-config --cflags --libs libprotobuf-c)
$cc -std=gnu11 -O1 -Wall -Wextra -Werror -c "$here/upstream_images.c" -o "$out/upstream_images.o" $pc
$cc -std=gnu11 -O1 -w -I"$out/gen" -c "$out/gen/criu-amdgpu.pb-c.c" -o "$out/criu-amdgpu.pb-c.o" $pc
$cc "$out/upstream_images.o" "$out/criu-amdgpu.pb-c.o" -o "$out/upstream-images" $pc
echo "reference: $(cat "$out/VERSION"); $("$out/upstream-images" schema)"

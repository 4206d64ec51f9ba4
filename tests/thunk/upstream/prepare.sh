#!/usr/bin/env bash
# Builds CRIU's own amdgpu plugin, unmodified, from Debian's criu source (SUITE, default trixie:
# criu 4.1.1; scripts/get-criu-source.sh --tree) into OUT/amdgpu_plugin.so, with criu_shims.c
# (criu's symbols the plugin calls) linked in. criu's headers are used as they are; what criu's
# own build generates is made here: protobuf-c code of images/*.proto and of the plugin's
# criu-amdgpu.proto, an empty common/config.h (no optional feature of criu is used by the
# plugin) and the common/asm link to the x86 headers. Fails, saying why, when the source cannot
# be obtained or does not build.
#
# Usage: prepare.sh OUT SRC_CACHE [SUITE]
set -euo pipefail
out=$1 cache=$2 suite=${3:-trixie}
here=$(cd "$(dirname "$0")" && pwd)
dir=$("$here/../../../scripts/get-criu-source.sh" --tree "$cache" "$suite")
tree="$dir/$suite/tree"
plugin="$tree/plugins/amdgpu"
rm -rf "$out"
mkdir -p "$out/gen/images/google/protobuf" "$out/include/common"
protoc-c --proto_path="$plugin" --c_out="$out/gen" "$plugin/criu-amdgpu.proto"
(cd "$tree/images" && protoc-c --proto_path=. --c_out="$out/gen/images" ./*.proto google/protobuf/descriptor.proto)
ln -s "$tree/include/common/arch/x86/asm" "$out/include/common/asm"
: > "$out/include/common/config.h"

cc=${CC:-cc}
incs=(-I"$out/include" -iquote "$tree/include" -iquote "$tree/criu/include"
      -iquote "$tree/criu/arch/x86/include" -iquote "$tree" -I"$tree/compel/include/uapi"
      -I"$out/gen" -I"$out/gen/images" -iquote "$plugin" $(pkg-config --cflags libdrm libprotobuf-c))
# The plugin's own flags (plugins/amdgpu/Makefile), less -Werror: newer compilers warn where
# criu's build did not, and this build is of code that is not ours to change.
$cc -g -O1 -Wall -D_GNU_SOURCE -shared -fPIC -o "$out/amdgpu_plugin.so" \
    "$plugin"/amdgpu_plugin.c "$plugin"/amdgpu_plugin_drm.c "$plugin"/amdgpu_plugin_topology.c \
    "$plugin"/amdgpu_plugin_util.c "$out/gen/criu-amdgpu.pb-c.c" "$here/criu_shims.c" \
    "${incs[@]}" -lpthread -lrt -ldrm -ldrm_amdgpu $(pkg-config --libs libprotobuf-c) 2> "$out/build.log" ||
  { cat "$out/build.log" >&2; echo "prepare.sh: CRIU's amdgpu plugin ($suite) did not build" >&2; exit 1; }
echo "Debian $suite criu $(cat "$dir/$suite/VERSION")" > "$out/VERSION"
echo "upstream plugin: $(cat "$out/VERSION"): $out/amdgpu_plugin.so"

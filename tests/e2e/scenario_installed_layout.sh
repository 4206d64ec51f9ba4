#!/usr/bin/env bash
# The installed layout is relocatable: `cmake --install` into a fresh prefix, then criu loads the
# plugin from PREFIX/lib/criu, the plugin finds its backends in PREFIX/lib/criu/amdgpu, and the
# tool and workload in PREFIX/bin do the rest; the build tree is not used.
source "$(dirname "$0")/lib.sh"
PREFIX="$WORK/prefix"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >/dev/null || fail "cmake --install failed"
[ -f "$PREFIX/lib/criu/amdgpu_plugin.so" ] || fail "no plugin at PREFIX/lib/criu"
[ -f "$PREFIX/lib/criu/amdgpu/mock.so" ] || fail "no mock backend at PREFIX/lib/criu/amdgpu"
[ -f "$PREFIX/lib/criu/amdgpu/core/amdgpu_plugin_core.so" ] ||
    fail "no plugin core at PREFIX/lib/criu/amdgpu/core"
[ -f "$PREFIX/lib/criu/amdgpu/core/amdgpu_yaml.so" ] ||
    fail "no YAML module beside the plugin core (config/README.md)"
# The HAL's one shared library, which the core finds beside itself and the backends share.
[ -f "$PREFIX/lib/criu/amdgpu/core/libcriu-amdgpu-hal.so" ] ||
    fail "no HAL library beside the plugin core (hal/CMakeLists.txt)"
readelf -d "$PREFIX/lib/criu/amdgpu/core/amdgpu_plugin_core.so" | grep -q 'RUNPATH.*\[\$ORIGIN\]' ||
    fail "the installed core does not find the HAL library beside itself (RUNPATH \$ORIGIN)"
[ -z "$(find "$PREFIX/lib/criu" -maxdepth 1 -name '*.so' ! -name amdgpu_plugin.so)" ] ||
    fail "a backend sits directly in PREFIX/lib/criu, where criu would load it as a plugin"
TOOL="$PREFIX/bin/criu-amdgpu"
WORKLOAD="$PREFIX/bin/mockgpu-workload"
PLUGIN_DIR="$PREFIX/lib/criu"

ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
"$TOOL" probe | grep -q "^chosen: mock$" || fail "the installed tool does not find the installed backends"
# criu's runs take the mock root from a YAML file: the installed core reads it through the
# installed amdgpu_yaml.so, which it loads only for such a file.
printf 'mock_root: %s\n' "$ROOT" >"$WORK/amdgpu.yaml"
unset CRIU_AMDGPU_MOCK_ROOT
export CRIU_AMDGPU_CONFIG="$WORK/amdgpu.yaml"
ARGS=(--gpus 1 --buffers 2 --size 65536)
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 3/"
criu_dump "$WORK/img" "$WPID" || fail "criu dump with the installed plugin failed"
grep -q "backend mock ($PREFIX/lib/criu/amdgpu/mock.so)" "$WORK/img/dump.log" ||
    fail "the plugin did not load the installed backend"
wait_gone "$WPID" 10
"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum $GOT, expected $EXPECTED"
note "installed layout under $PREFIX: dump and restore work, checksum $GOT"

#!/usr/bin/env bash
# Configures and builds the project into BUILD_DIR (default ./build). Extra arguments go to cmake.
# BUILD_TARGETS (space-separated) builds only those targets; CC/CXX choose the compiler of a new
# build directory.
# Uses ccache when it is installed (scripts/install-deps.sh installs it); the cache is keyed on
# paths relative to the source tree, so several checkouts of the project share it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-$PWD/build}
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  # ccache caches the files built with the tests' precompiled header (tests/CMakeLists.txt) only
  # with these (else "could not use precompiled header"): the header's macros and __TIME__ are
  # not hashed, and the header is newer than the compile's start.
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# mold where installed (scripts/install-deps.sh installs it): links in a fraction of GNU ld's time.
# CRIU_AMDGPU_LINKER chooses another (empty: the compiler's default linker).
linker=()
if [ -n "${CRIU_AMDGPU_LINKER+set}" ]; then
  linker=(-DCRIU_AMDGPU_LINKER="$CRIU_AMDGPU_LINKER")
elif command -v mold >/dev/null; then
  linker=(-DCRIU_AMDGPU_LINKER=mold)
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "${launcher[@]}" "${linker[@]}" "$@" >/dev/null
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j"$(nproc)" "${targets[@]}"

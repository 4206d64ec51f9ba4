#!/usr/bin/env bash
# Builds the Debian packages criu-amdgpu and criu-amdgpu-mock from debian/ as a Debian builder
# would (dpkg-buildpackage -us -uc, Debian's flags, no tests), in a copy of the checked-out files
# under DEB_DIR (default $BUILD_DIR/deb, BUILD_DIR default ./build) so the tree stays clean, then
# lints them: any lintian error or warning fails. Prints the paths of the .deb files (the
# -dbgsym ones with the debug symbols are built beside them).
# --werror makes compiler warnings fatal (DEB_BUILD_OPTIONS=werror; CI uses it).
# --no-lint leaves lintian to the caller (scripts/test-release.sh runs it beside the installed
# scenarios): `lintian --fail-on error,warning DEB_DIR/*.changes`, as this script would.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=""
lint=1
for arg in "$@"; do
    case "$arg" in
    --werror) werror=werror ;;
    --no-lint) lint=0 ;;
    *) echo "usage: scripts/build-deb.sh [--werror] [--no-lint]" >&2; exit 2 ;;
    esac
done
BUILD_DIR=${BUILD_DIR:-$PWD/build}
DEB_DIR=${DEB_DIR:-$BUILD_DIR/deb}
version=$(dpkg-parsechangelog -S Version)
# The version is written once, in CMakeLists.txt's project(); the changelog must name it.
project_version=$(sed -nE 's/^project\(criu-amdgpu VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
if [ "${version%%-*}" != "$project_version" ]; then
    echo "build-deb.sh: debian/changelog says $version, CMakeLists.txt's project() $project_version:" \
         "add a changelog entry (dch -v $project_version) or correct the version" >&2
    exit 1
fi
src="$DEB_DIR/criu-amdgpu-$version"
rm -rf "$DEB_DIR"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$src"

if command -v ccache >/dev/null; then
    # CMake takes its compiler launcher from these. Paths are hashed relative to the copy, and not
    # the build directory's, so the objects scripts/test.sh's normal build compiled with the same
    # flags (scripts/debian-flags.sh) are hits, as is an earlier package build's.
    export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$src" \
        CCACHE_NOHASHDIR=1
fi
(cd "$src" && DEB_BUILD_OPTIONS="nocheck $werror" dpkg-buildpackage -us -uc -j"$(nproc)" \
    >"$DEB_DIR/build.log" 2>&1) || {
    tail -40 "$DEB_DIR/build.log" >&2
    echo "build-deb: dpkg-buildpackage failed; the whole log is $DEB_DIR/build.log" >&2
    exit 1
}
grep -E "^[^ ]+:[0-9]+:[0-9]+: warning:" "$DEB_DIR/build.log" >&2 &&
    echo "build-deb: the package build has compiler warnings (above)" >&2
if [ "$lint" = 1 ]; then
    lintian --fail-on error,warning \
        "$DEB_DIR"/criu-amdgpu_"$version"_*.changes >&2 || {
        echo "build-deb: lintian reports errors or warnings (above)" >&2
        exit 1
    }
fi
ls "$DEB_DIR"/*.deb | grep -v -- '-dbgsym_'

#!/usr/bin/env bash
# Fails, naming each file, when a C or C++ file tracked by git is not laid out as .clang-format
# says (clang-format 14, bookworm's). scripts/test.sh runs it before anything is built, so an
# unformatted change fails CI in its first minute.
#
#   scripts/check-format.sh           checks every C and C++ file git tracks
#   scripts/check-format.sh --fix F…  formats the files F
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null ||
    { echo "check-format.sh: clang-format is not installed (scripts/install-deps.sh)" >&2; exit 1; }
if [ "${1:-}" = --fix ]; then
    shift
    [ "$#" -gt 0 ] || { echo "usage: scripts/check-format.sh [--fix FILE...]" >&2; exit 2; }
    exec clang-format -i "$@"
fi
[ "$#" = 0 ] || { echo "usage: scripts/check-format.sh [--fix FILE...]" >&2; exit 2; }
mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.inc')
[ "${#files[@]}" -gt 0 ] || { echo "check-format.sh: git lists no C or C++ file here" >&2; exit 1; }
# Two checkers at a time, 32 files each; each batch names the files that differ, its names written
# at once (sed's one buffer at exit), so the two never interleave within a line.
mapfile -t unformatted < <(printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 32 sh -c \
    'clang-format --dry-run --Werror "$@" 2>&1 |
        sed -nE "s/^([^: ]+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p" | sort -u' sh |
    sort -u)
status=0
for f in "${unformatted[@]}"; do
    echo "check-format.sh: $f is not formatted as .clang-format says (scripts/check-format.sh --fix $f)" >&2
    status=1
done
[ "$status" = 0 ] || exit 1
echo "check-format.sh: ${#files[@]} files formatted as .clang-format says"

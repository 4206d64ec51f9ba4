#!/usr/bin/env bash
# Fails, naming each file, when a C or C++ file tracked by git is not laid out as .clang-format
# says (clang-format 14, bookworm's). scripts/test.sh runs it before anything is built, so an
# unformatted change fails CI in its first minute.
#
#   scripts/check-format.sh           checks every file but those scripts/format-pending.txt lists
#   scripts/check-format.sh --fix F…  formats the files F (and takes them off the pending list)
#
# scripts/format-pending.txt lists the files written before formatting was enforced
# (2026-12-06) and not formatted since: formatting them all at once would rebuild every build of
# every branch in flight. The list only shrinks: a file on it that is formatted fails the check
# until it is taken off (so it cannot drift back), and a new file is never added to it.
set -euo pipefail
cd "$(dirname "$0")/.."
pending_list=scripts/format-pending.txt
command -v clang-format >/dev/null ||
    { echo "check-format.sh: clang-format is not installed (scripts/install-deps.sh)" >&2; exit 1; }
if [ "${1:-}" = --fix ]; then
    shift
    [ "$#" -gt 0 ] || { echo "usage: scripts/check-format.sh [--fix FILE...]" >&2; exit 2; }
    clang-format -i "$@"
    for f in "$@"; do sed -i "\\|^$f\$|d" "$pending_list"; done
    exit 0
fi
[ "$#" = 0 ] || { echo "usage: scripts/check-format.sh [--fix FILE...]" >&2; exit 2; }
mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.inc')
[ "${#files[@]}" -gt 0 ] || { echo "check-format.sh: git lists no C or C++ file here" >&2; exit 1; }
declare -A pending=()
while read -r f; do [ -n "$f" ] && pending[$f]=1; done < "$pending_list"
# Two checkers at a time, 32 files each; each batch names the files that differ, its names written
# at once (sed's one buffer at exit), so the two never interleave within a line.
mapfile -t unformatted < <(printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 32 sh -c \
    'clang-format --dry-run --Werror "$@" 2>&1 |
        sed -nE "s/^([^: ]+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p" | sort -u' sh |
    sort -u)
declare -A bad=()
for f in "${unformatted[@]}"; do bad[$f]=1; done
status=0
for f in "${unformatted[@]}"; do
    [ -n "${pending[$f]:-}" ] && continue
    echo "check-format.sh: $f is not formatted as .clang-format says (scripts/check-format.sh --fix $f)" >&2
    status=1
done
for f in "${!pending[@]}"; do
    if [ ! -e "$f" ]; then
        echo "check-format.sh: $pending_list lists $f, which is gone: take it off" >&2
        status=1
    elif [ -z "${bad[$f]:-}" ]; then
        echo "check-format.sh: $f is formatted now: take it off $pending_list" >&2
        status=1
    fi
done
[ "$status" = 0 ] || exit 1
echo "check-format.sh: $((${#files[@]} - ${#pending[@]})) files formatted as .clang-format says, ${#pending[@]} pending"

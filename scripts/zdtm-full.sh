#!/usr/bin/env bash
# The release check with criu's own test suite (outside CI): the whole static set of zdtm, in
# each flavour named (default: h ns uns, every flavour that runs here), three ways one after the
# other as CI's subset runs (tests/zdtm/run.sh): criu's plugin directory empty, the build's
# plugin in it, the plugin and a mock GPU machine configured. Prints, per flavour, how many tests
# passed every way, and names every test that passed without the plugin and failed with it; exits
# non-zero when there is one. Long: about an hour on 2 cores for the three flavours.
#
#   scripts/zdtm-full.sh [FLAVOUR...]
# Env: BUILD_DIR (./build: a build with the tests), CRIU (the build's CRIU_AMDGPU_CRIU),
#      OUT (BUILD_DIR/zdtm-full: the runs' results and logs), ZDTM_PARALLEL (2).
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
export BUILD_DIR=${BUILD_DIR:-$top/build}
cache="$BUILD_DIR/CMakeCache.txt"
[ -f "$cache" ] || { echo "zdtm-full.sh: $BUILD_DIR is not a build tree (scripts/build.sh)" >&2; exit 1; }
export CRIU=${CRIU:-$(sed -n 's/^CRIU_AMDGPU_CRIU:[A-Z]*=//p' "$cache")}
src_cache=$(sed -n 's/^CRIU_AMDGPU_CRIU_SRC_DIR:[A-Z]*=//p' "$cache")
out=${OUT:-$BUILD_DIR/zdtm-full}
flavours=("$@")
[ "${#flavours[@]}" -gt 0 ] || flavours=(h ns uns)

bash tests/zdtm/prepare.sh "$out/src" "${src_cache:-$BUILD_DIR/criu-src}" all
export ZDTM="$out/src/criu/test" ZDTM_BASELINE_MAY_FAIL=1
export LIST="$out/static.txt"
(cd "$ZDTM" && PATH=/usr/bin:/bin python3 zdtm.py list) | sed -n 's|^zdtm/static/||p' > "$LIST"
echo "== zdtm-full: $(wc -l < "$LIST") static tests, flavours ${flavours[*]}, criu $CRIU"

harmed=0
summary="$out/summary.txt"
: > "$summary"
t0=$SECONDS
for f in "${flavours[@]}"; do
    export RESULTS="$out/$f" ZDTM_FLAVOR=$f
    for mode in empty plugin mock; do
        BASELINE="$RESULTS/empty/passed.txt"
        [ "$mode" != empty ] || BASELINE=
        BASELINE=$BASELINE bash tests/zdtm/run.sh "$mode" > "$out/$f-$mode.log" 2>&1 || true
        grep -E '^== zdtm' "$out/$f-$mode.log"
    done
    both=$(comm -12 "$RESULTS/empty/passed.txt" "$RESULTS/plugin/passed.txt" | comm -12 - "$RESULTS/mock/passed.txt" | wc -l)
    worse=$(cat "$RESULTS/plugin/not-passed.txt" "$RESULTS/mock/not-passed.txt" | sort -u |
            comm -12 - "$RESULTS/empty/passed.txt")
    line="flavour $f: $(wc -l < "$RESULTS/empty/passed.txt") of $(wc -l < "$LIST") passed without any plugin, $both passed every way"
    if [ -n "$worse" ]; then
        line+="; passed without the plugin and failed with it: $(echo $worse)"
        harmed=1
    fi
    echo "$line" | tee -a "$summary"
done
echo "== zdtm-full: done in $((SECONDS - t0)) s; $summary; the logs: $out/FLAVOUR-WAY.log"
exit "$harmed"

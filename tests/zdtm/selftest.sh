#!/usr/bin/env bash
# zdtm.selftest: run.sh must fail an entry when the plugin harms a test. A few tests of the
# subset run with harmful_plugin.so (an amdgpu_plugin.so that fails every restore) as the plugin:
# run.sh must run each again without any plugin (where they pass), fail, and name each test as
# passing without the plugin and failing with it.
# Env: as run.sh, and HARMFUL_DIR (the folder that holds the harmful amdgpu_plugin.so).
set -euo pipefail
: "${HARMFUL_DIR:?}" "${RESULTS:?}"
here=$(cd "$(dirname "$0")" && pwd)
tests=(pipe00 maps00 sockets00)
export RESULTS="$RESULTS/selftest" LIST="$RESULTS/selftest/list.txt"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
printf '%s\n' "${tests[@]}" > "$LIST"
rc=0
PLUGIN_DIR="$HARMFUL_DIR" bash "$here/run.sh" plugin > "$RESULTS/harmful.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || { cat "$RESULTS/harmful.log"; echo "FAIL: run.sh passed with a plugin that fails every restore"; exit 1; }
for t in "${tests[@]}"; do
    grep -q "FAIL: zdtm/static/$t passes without the plugin and fails with it" "$RESULTS/harmful.log" ||
        { cat "$RESULTS/harmful.log"; echo "FAIL: run.sh did not name $t as harmed"; exit 1; }
done
echo "run.sh named every harmed test:"
grep -E "^FAIL: zdtm/static/" "$RESULTS/harmful.log"

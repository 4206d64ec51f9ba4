#!/usr/bin/env bash
# Runs a list of criu's zdtm static tests (tests/zdtm/prepare.sh made them ready) through real
# criu in one of three set-ups, each in the zdtm flavour LIST gives it (h, the host's namespaces,
# by default), and records which passed:
#   empty   criu's plugin directory is empty: the baseline. Every test of the list must pass: a
#           test this sandbox cannot run belongs in unsupported.txt, with its reason;
#   plugin  the plugin of the build tree (BUILD_DIR/lib/criu) is criu's plugin directory, no
#           GPU configured: criu loads it and it must say that it stays inert (its core is
#           not loaded);
#   mock    the same, and a mock GPU machine configured (CRIU_AMDGPU_MOCK_ROOT): at dump the
#           plugin's core is loaded and must choose the mock backend; at restore it may stay
#           inert, saying that the checkpoint used no AMD GPU. The tests' processes use no GPU.
# In plugin and mock, a test that does not pass here is run again without any plugin (a baseline
# of only the tests that failed, in RESULTS/MODE/recheck, unless BASELINE names the passed.txt of
# a whole baseline run): one that passes there fails the run, with the amdgpu lines of its criu
# logs; one that fails there too fails it as a test this sandbox cannot run (a note only with
# ZDTM_BASELINE_MAY_FAIL=1). So does any test whose criu logs hold an amdgpu error or warning, or
# whose dump wrote amdgpu images. A baseline of every test first (the mode empty) would cost a
# third run of the list for what only a failure needs.
# The plugin's own settings files are not read (CRIU_AMDGPU_CONFIG and CRIU_AMDGPU_OPTIONS_FILE
# empty), and no other CRIU_AMDGPU_* or KFD_* variable reaches criu.
#
# Env: BUILD_DIR, CRIU (a criu that runs here), ZDTM (the prepared criu source's test/ folder),
#      RESULTS (a folder of the runs' results), LIST (a file of lines "NAME [FLAVOUR]", '#'
#      comments).
#      Optional: UNSUPPORTED (tests/zdtm/unsupported.txt: no test of LIST may be in it for
#      the flavour it runs in),
#      ZDTM_FLAVOR (h: zdtm's flavour), ZDTM_PARALLEL (2: tests run at once),
#      ZDTM_SAMPLE_EVERY (1: every test of LIST; N: the first and every N-th after it),
#      ZDTM_BASELINE_MAY_FAIL=1 (the baseline records its failures without failing: the full
#      runs of scripts/zdtm-full.sh), BASELINE (the passed.txt of a run of mode empty over the
#      same list, instead of the recheck: scripts/zdtm-full.sh), PLUGIN_DIR (BUILD_DIR/lib/criu:
#      the plugin directory of plugin and mock; selftest.sh names one with a harmful plugin).
#      Usage: run.sh empty|plugin|mock
set -euo pipefail
self=$(readlink -f "${BASH_SOURCE[0]}") # for the recheck, once the run is in ZDTM
mode=${1:?usage: run.sh empty|plugin|mock}
case "$mode" in empty | plugin | mock) ;; *) echo "run.sh: unknown set-up '$mode': empty, plugin or mock" >&2; exit 2 ;; esac
: "${BUILD_DIR:?}" "${CRIU:?}" "${ZDTM:?}" "${RESULTS:?}" "${LIST:?}"
flavor=${ZDTM_FLAVOR:-h} # the default flavour of LIST's tests
export PATH=/usr/sbin:/usr/bin:/sbin:/bin # Debian's python3, with python3-yaml and -protobuf
[ -f "$ZDTM/zdtm.py" ] || { echo "FAIL: $ZDTM/zdtm.py is missing: zdtm.prepare has not run" >&2; exit 1; }
[ -x "$CRIU" ] || { echo "FAIL: no criu at $CRIU (scripts/get-criu.sh makes it)" >&2; exit 1; }
# LIST lines: NAME [FLAVOUR] (FLAVOUR: h unless ZDTM_FLAVOR says otherwise).
declare -A flavour_of=()
tests=()
while read -r name fl _; do
    [ -n "$name" ] || continue
    [ -z "${flavour_of[$name]:-}" ] || { echo "FAIL: $name is twice in $LIST" >&2; exit 1; }
    tests+=("$name")
    flavour_of[$name]=${fl:-$flavor}
done < <(sed -e 's/#.*//' "$LIST")
[ "${#tests[@]}" -gt 0 ] || { echo "FAIL: $LIST names no test" >&2; exit 1; }
# ZDTM_SAMPLE_EVERY=N: only the first test of LIST and every N-th after it (LIST is grouped by
# what a test does, so each group keeps some).
every=${ZDTM_SAMPLE_EVERY:-1}
[[ "$every" =~ ^[1-9][0-9]*$ ]] || { echo "FAIL: ZDTM_SAMPLE_EVERY=$every: not a count" >&2; exit 2; }
if [ "$every" -gt 1 ]; then
    sampled=()
    for i in "${!tests[@]}"; do [ $((i % every)) != 0 ] || sampled+=("${tests[$i]}"); done
    tests=("${sampled[@]}")
fi
if [ -n "${UNSUPPORTED:-}" ]; then # lines: NAME FLAVOURS REASON
    for t in "${tests[@]}"; do
        awk -v t="$t" -v f="${flavour_of[$t]}" '!/^#/ && $1 == t && index("," $2 ",", "," f ",") {bad = 1}
            END {exit !bad}' "$UNSUPPORTED" || continue
        echo "FAIL: $t (flavour ${flavour_of[$t]}) is in $LIST and in $UNSUPPORTED: this sandbox cannot run it" >&2
        exit 1
    done
fi

[ -z "${BASELINE:-}" ] || [ -f "$BASELINE" ] || { echo "FAIL: no baseline $BASELINE" >&2; exit 1; }
work="$RESULTS/$mode"
rm -rf "$work"
mkdir -p "$work"
for v in $(env | grep -oE '^(CRIU_AMDGPU_[A-Z_]+|KFD_[A-Z_]+)=' | tr -d =); do unset "$v"; done
case "$mode" in
empty) plugins="$work/plugins"; mkdir -p "$plugins" ;;
plugin) plugins=${PLUGIN_DIR:-$BUILD_DIR/lib/criu} ;;
mock)
    plugins=${PLUGIN_DIR:-$BUILD_DIR/lib/criu}
    "$BUILD_DIR/bin/criu-amdgpu" topology generate --out "$work/topology" --gpus 2 >/dev/null
    "$BUILD_DIR/bin/criu-amdgpu" mock init --root "$work/machine" --topology "$work/topology" >/dev/null
    ;;
esac
[ "$mode" = empty ] || [ -f "$plugins/amdgpu_plugin.so" ] ||
    { echo "FAIL: no plugin at $plugins/amdgpu_plugin.so: build the tree first" >&2; exit 1; }

# zdtm sets CRIU_LIBS_DIR to its own, emptied, test/plugins: the wrapper sets it again.
{
    echo '#!/bin/sh'
    echo "export CRIU_LIBS_DIR='$plugins' CRIU_AMDGPU_CONFIG= CRIU_AMDGPU_OPTIONS_FILE="
    [ "$mode" != mock ] || echo "export CRIU_AMDGPU_MOCK_ROOT='$work/machine'"
    echo "exec '$CRIU' \"\$@\""
} > "$work/criu"
chmod +x "$work/criu"

cd "$ZDTM"
rm -rf dump
mkdir -p "$work/dump"
: > "$work/passed.txt.unsorted"
t0=$SECONDS
for fl in $(for t in "${tests[@]}"; do echo "${flavour_of[$t]}"; done | sort -u); do
    names=()
    for t in "${tests[@]}"; do [ "${flavour_of[$t]}" != "$fl" ] || names+=("$t"); done
    regex="^zdtm/static/($(IFS='|'; echo "${names[*]}"))\$"
    rc=0
    python3 zdtm.py run -T "$regex" -f "$fl" -p "${ZDTM_PARALLEL:-2}" --criu-bin "$work/criu" \
        --ignore-taint --keep-going -k always --report "$work/report-$fl" > "$work/zdtm-$fl.log" 2>&1 || rc=$?
    echo "== zdtm ($mode, flavour $fl): ${#names[@]} tests, zdtm.py exit $rc"
    [ ! -d dump ] || { cp -a dump/. "$work/dump/"; rm -rf dump; }
    tap="$work/report-$fl/criu-testreport.tap"
    [ -f "$tap" ] || { tail -20 "$work/zdtm-$fl.log" >&2; echo "FAIL: zdtm.py wrote no report ($work/zdtm-$fl.log)" >&2; exit 1; }
    { grep -E '^ok [0-9]+ - zdtm/static/[^ ]+$' "$tap" || true; } | awk '{print $4}' |
        sed 's|^zdtm/static/||' >> "$work/passed.txt.unsorted"
done
echo "== zdtm ($mode): ${#tests[@]} tests in $((SECONDS - t0)) s"
sort -u "$work/passed.txt.unsorted" > "$work/passed.txt"
rm "$work/passed.txt.unsorted"
: > "$work/not-passed.txt"
for t in "${tests[@]}"; do grep -qxF "$t" "$work/passed.txt" || echo "$t" >> "$work/not-passed.txt"; done

# tap_entry TEST: its entry in zdtm's report (why it failed or was skipped), shortened.
tap_entry() {
    awk -v t="zdtm/static/$1" '
        /^(ok|not ok) / { on = ($4 == t || $5 == t) } on' "$work/report-${flavour_of[$1]}/criu-testreport.tap" |
        grep -a -E '^(ok|not ok)|FAIL|Error' | head -8 || true
}
logs_of() { find "$work/dump/zdtm/static/$1" \( -name dump.log -o -name restore.log \) 2>/dev/null | sort; }
amdgpu_lines() { # TEST: the amdgpu lines of its criu logs
    local f
    for f in $(logs_of "$1"); do
        echo "--- $f"
        grep -a -i amdgpu "$f" | tail -40 || true
    done
}

problems=0
problem() { echo "FAIL: $*"; problems=$((problems + 1)); }
if [ "$mode" = empty ]; then
    while read -r t; do
        [ "${ZDTM_BASELINE_MAY_FAIL:-0}" = 0 ] || continue
        problem "zdtm/static/$t does not pass without any plugin: this sandbox cannot run it (move it to tests/zdtm/unsupported.txt with the reason)"
        tap_entry "$t"
    done < "$work/not-passed.txt"
    # The baseline loads no plugin at all.
    for t in $(cat "$work/passed.txt"); do
        for f in $(logs_of "$t"); do
            ! grep -aq 'Plugin "' "$f" || problem "$t: criu loaded a plugin from the empty directory ($f)"
        done
    done
else
    base=${BASELINE:-$work/recheck/empty/passed.txt}
    if [ -z "${BASELINE:-}" ] && [ -s "$work/not-passed.txt" ]; then
        echo "== zdtm ($mode): $(wc -l < "$work/not-passed.txt") test(s) did not pass: each again without any plugin"
        while read -r t; do echo "$t ${flavour_of[$t]}"; done < "$work/not-passed.txt" > "$work/recheck.txt"
        LIST="$work/recheck.txt" RESULTS="$work/recheck" ZDTM_BASELINE_MAY_FAIL=1 \
            bash "$self" empty > "$work/recheck.log" 2>&1 ||
            { tail -20 "$work/recheck.log"; problem "the run without any plugin failed ($work/recheck.log)"; }
        [ -f "$base" ] || : > "$base"
    fi
    while read -r t; do
        if grep -qxF "$t" "$base"; then
            problem "zdtm/static/$t passes without the plugin and fails with it ($mode); its amdgpu log lines:"
            amdgpu_lines "$t"
            tap_entry "$t"
        elif [ "${ZDTM_BASELINE_MAY_FAIL:-0}" = 1 ]; then
            echo "note: zdtm/static/$t fails here and without any plugin too: not counted"
        else
            problem "zdtm/static/$t fails here and without any plugin too: this sandbox cannot run it (move it to tests/zdtm/unsupported.txt with the reason)"
            tap_entry "$t"
        fi
    done < "$work/not-passed.txt"
    for t in $(cat "$work/passed.txt"); do
        logs=$(logs_of "$t")
        [ -n "$logs" ] || { problem "$t: no criu log kept in $work/dump"; continue; }
        for f in $logs; do
            if ! grep -aqE 'Plugin "amdgpu_plugin" \(version [0-9]+ hooks [0-9]+\)' "$f"; then
                problem "$t: criu did not load amdgpu_plugin ($f)"
            elif [ "$mode" = plugin ] && ! grep -aq 'amdgpu_plugin: inert' "$f"; then
                problem "$t: with no GPU configured the plugin did not say it stays inert ($f)"
            elif [ "$mode" = mock ] && [ "$(basename "$f")" = dump.log ] &&
                 ! grep -aq 'amdgpu_plugin: using backend mock' "$f"; then
                problem "$t: with a mock GPU configured the plugin's core did not choose the mock ($f)"
            elif [ "$mode" = mock ] && [ "$(basename "$f")" = restore.log ] &&
                 ! grep -aqE 'amdgpu_plugin: (using backend mock|inert: the checkpoint did not use AMD GPUs)' "$f"; then
                problem "$t: with a mock GPU configured the plugin neither chose the mock nor found the checkpoint without GPU ($f)"
            fi
            if grep -aE '^\([ 0-9.]+\) +(Error|Warn).*amdgpu' "$f"; then
                problem "$t: amdgpu error or warning in $f"
            fi
        done
        if find "$work/dump/zdtm/static/$t" -name 'amdgpu-*' | grep -q .; then
            problem "$t: amdgpu images written for a process that uses no GPU"
        fi
    done
fi
echo "== zdtm ($mode): $(wc -l < "$work/passed.txt") of ${#tests[@]} passed; $problems problem(s)"
[ "$problems" = 0 ]
# Passed: the kept images are not needed any more.
rm -rf "$work/dump"

#!/usr/bin/env bash
# criu started the way criu's own test suite starts it (zdtm runs ../criu/criu): through a
# relative path, from another directory, and moved elsewhere again with -W. The plugin still
# declares exactly the running criu's hooks (a wrong guess loses POST_FORKING on 4.2, DUMP_FINISH
# on 4.3: criu's log shows each hook it calls), and the mock GPU workload dumps and restores.
# The workload steps until the scenario is done with it (--stop-file: a fixed number of steps could
# end before criu froze it under load); the restored one stops when the scenario says so.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 1 --buffers 2 --size 65536)

RUNDIR="$WORK/run/from/here"
mkdir -p "$RUNDIR" "$WORK/criu-wd" "$WORK/img"
relative() { realpath -m --relative-to="$RUNDIR" "$1"; }
PRIV="$(dirname "$CRIU")/root"
if [ -x "$PRIV/usr/sbin/criu" ]; then
    # scripts/get-criu.sh's layout: criu's own loader and libraries, all named relatively.
    REL=("$(relative "$PRIV/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")" --library-path
         "$(relative "$PRIV/usr/lib/x86_64-linux-gnu"):$(relative "$PRIV/lib/x86_64-linux-gnu")"
         "$(relative "$PRIV/usr/sbin/criu")")
else
    REL=("$(relative "$(readlink -f "$(command -v "$CRIU")")")")
fi
note "criu started as: (cd $RUNDIR && ${REL[*]} ...)"
rel_criu() { (cd "$RUNDIR" && CRIU_FAULT="${CRIU_FAULT-130}" "${REL[@]}" "$@"); }

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 3/"
rel_criu dump -t "$WPID" -D "$WORK/img" -L "$PLUGIN_DIR" -W "$WORK/criu-wd" -v4 -o dump.log ||
    fail "criu dump through a relative path failed"
check_abi "$WORK/criu-wd/dump.log"
require_core "$WORK/criu-wd/dump.log"
wait_gone "$WPID" 10
"$TOOL" mock reset --root "$ROOT" >/dev/null
rel_criu restore -D "$WORK/img" -L "$PLUGIN_DIR" -W "$WORK/criu-wd" -v4 -o restore.log -d \
    --pidfile "$WORK/img/restored.pid" || fail "criu restore through a relative path failed"
check_abi "$WORK/criu-wd/restore.log"
RPID=$(cat "$WORK/img/restored.pid")
STARTED_PIDS+=("$RPID")
hooks=$(expected_hooks)
if [ -n "$hooks" ] && [ "$hooks" -ge 13 ]; then
    grep -q "plugin: \`amdgpu_plugin' hook 12 " "$WORK/criu-wd/restore.log" ||
        fail "criu never called the plugin's POST_FORKING (hook 12)"
fi
if [ -n "$hooks" ] && [ "$hooks" -ge 17 ]; then
    grep -q "plugin: \`amdgpu_plugin' hook 16 " "$WORK/criu-wd/dump.log" ||
        fail "criu never called the plugin's DUMP_FINISH (hook 16)"
fi
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum $GOT, expected $EXPECTED"
note "criu $CRIU_VERSION through a relative path: $(grep -oE 'criu ABI [^)]*\)' "$WORK/criu-wd/dump.log" | head -1), checksum $GOT"

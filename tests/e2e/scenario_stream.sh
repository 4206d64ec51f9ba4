#!/usr/bin/env bash
# Scenario: criu --stream. Every image, criu's own and the plugin's, goes through an image
# streamer (the fake of tests/support, speaking criu's protocol) instead of the images
# directory: the plugin must open its images through criu's img_streamer_open() with criu's own
# modes (any other aborts criu), and read each one once. After a reset of the mock machine the
# workload is restored from the streamed images and finishes with the checksum of an
# uninterrupted run.
# The workload steps until the scenario is done with it (--stop-file: a fixed number of steps could
# end before criu froze it under load); the restored one stops when the scenario says so.
source "$(dirname "$0")/lib.sh"
STREAMER="$BUILD_DIR/tests/e2e/e2e-image-streamer"
ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 2 --size 131072)

# start_streamer MODE: the streamer on $WORK/img, storing in $WORK/store; waits until it listens.
start_streamer() {
    "$STREAMER" "$1" "$WORK/img" "$WORK/store" >"$WORK/streamer-$1.out" 2>"$WORK/streamer-$1.log" &
    STREAMER_PID=$!
    STARTED_PIDS+=("$STREAMER_PID")
    wait_for_line "$WORK/streamer-$1.out" "^ready" 10
}

mkdir -p "$WORK/img" "$WORK/store"
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 5/"
start_streamer capture
"$CRIU" dump -t "$WPID" -D "$WORK/img" --stream -L "$PLUGIN_DIR" -v4 -o dump.log ||
    fail "criu dump --stream failed"
wait "$STREAMER_PID" || fail "the streamer saw a broken protocol: $(cat "$WORK/streamer-capture.log")"
wait_gone "$WPID" 10
ls "$WORK/img" | grep -q '^amdgpu-' && fail "an amdgpu image went to the directory, not the streamer"
for pattern in '^amdgpu-renderD-' '^amdgpu-drm-pages-' '^amdgpu-topology.img$' '^inventory.img$'; do
    ls "$WORK/store" | grep -q "$pattern" || fail "the streamer captured no $pattern"
done
note "dump: $(ls "$WORK/store" | grep -c '^amdgpu-') amdgpu images streamed"

"$TOOL" mock reset --root "$ROOT" >/dev/null
echo "another plugin's file" > "$WORK/store/other-plugin-7.img"
start_streamer serve
rm -f "$WORK/restored.pid"
"$CRIU" restore -D "$WORK/img" --stream -L "$PLUGIN_DIR" -v4 -o restore.log -d \
    --pidfile "$WORK/restored.pid" || fail "criu restore --stream failed"
RPID=$(cat "$WORK/restored.pid")
STARTED_PIDS+=("$RPID")
wait "$STREAMER_PID" || fail "the streamer saw a broken protocol: $(cat "$WORK/streamer-serve.log")"
grep -q "never asked for: amdgpu-" "$WORK/streamer-serve.log" &&
    fail "amdgpu images were never read: $(grep 'never asked' "$WORK/streamer-serve.log")"
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, uninterrupted run $EXPECTED"
note "stream: checksum $GOT matches the uninterrupted run"

#!/usr/bin/env bash
# Another plugin loaded beside amdgpu_plugin (as the CUDA plugin would be): a process holding a
# device only the other plugin owns (/dev/cpu_dma_latency, the very numbers the mock GPU's nodes
# carry) is dumped and restored through it, with the amdgpu plugin inert and with it active.
source "$(dirname "$0")/lib.sh"
CPU="$BUILD_DIR/tests/e2e/e2e-cpu-workload"
EXPECTED=$("$CPU" --steps 15 --step-ms 0 | awk '/^checksum/{print $2}')
ROOT=$(make_machine machine --gpus 1)
BOTH="$WORK/plugins"
mkdir -p "$BOTH"
ln -s "$PLUGIN_DIR/amdgpu_plugin.so" "$BOTH/amdgpu_plugin.so"
ln -s "$PLUGIN_DIR/amdgpu" "$BOTH/amdgpu"
ln -s "$BUILD_DIR/tests/e2e/other-plugin/other_plugin.so" "$BOTH/other_plugin.so"

run_case() { # NAME [env...]
    local name=$1; shift
    rm -f "$WORK/result.txt"
    start_workload "$WORK/out-$name.txt" "$CPU" --steps 15 --step-ms 100 --hold /dev/cpu_dma_latency \
        --result "$WORK/result.txt"
    wait_for_line "$WORK/out-$name.txt" "step 3/"
    mkdir -p "$WORK/img-$name"
    env "$@" "$CRIU" dump -t "$WPID" -D "$WORK/img-$name" -L "$BOTH" -v4 -o dump.log ||
        fail "$name: dump failed with both plugins loaded"
    wait_gone "$WPID" 10
    ls "$WORK/img-$name" | grep -q '^other-plugin-' || fail "$name: the other plugin did not get its file"
    ls "$WORK/img-$name" | grep -q '^amdgpu-' && fail "$name: the amdgpu plugin wrote images for a device that is not its own"
    env "$@" "$CRIU" restore -D "$WORK/img-$name" -L "$BOTH" -v4 -o restore.log -d --pidfile "$WORK/img-$name/pid" ||
        fail "$name: restore failed with both plugins loaded"
    local pid; pid=$(cat "$WORK/img-$name/pid")
    STARTED_PIDS+=("$pid")
    ls -l /proc/"$pid"/fd | grep -q cpu_dma_latency || fail "$name: the restored process lost its device"
    wait_gone "$pid" 60
    local got; got=$(checksum_of "$WORK/result.txt")
    [ "$got" = "$EXPECTED" ] || fail "$name: checksum $got, expected $EXPECTED"
    note "other plugin ($name): its device dumped and restored through it, checksum $got"
}
run_case amdgpu-inert -u CRIU_AMDGPU_MOCK_ROOT
run_case amdgpu-active CRIU_AMDGPU_MOCK_ROOT="$ROOT"

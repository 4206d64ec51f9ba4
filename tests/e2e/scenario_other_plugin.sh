#!/usr/bin/env bash
# Another plugin loaded beside amdgpu_plugin (as the CUDA plugin would be): a process holding a
# device only the other plugin owns (/dev/cpu_dma_latency, the very numbers the mock GPU's nodes
# carry) is dumped and restored through it, with the amdgpu plugin inert and with it active.
source "$(dirname "$0")/lib.sh"
EXPECTED=$("$BUILD_DIR/tests/e2e/e2e-cpu-workload" --steps 15 --step-ms 0 | awk '/^checksum/{print $2}')
ROOT=$(make_machine machine --gpus 1)
BOTH="$WORK/plugins"
mkdir -p "$BOTH"
ln -s "$PLUGIN_DIR/amdgpu_plugin.so" "$BOTH/amdgpu_plugin.so"
ln -s "$PLUGIN_DIR/amdgpu" "$BOTH/amdgpu"
ln -s "$BUILD_DIR/tests/e2e/other-plugin/other_plugin.so" "$BOTH/other_plugin.so"

check_dumped() { # NAME
    ls "$WORK/img-$1" | grep -q '^other-plugin-' || fail "$1: the other plugin did not get its file"
}
check_restored() { # NAME PID
    ls -l /proc/"$2"/fd | grep -q cpu_dma_latency || fail "$1: the restored process lost its device"
}
for case in "amdgpu-inert -u CRIU_AMDGPU_MOCK_ROOT" "amdgpu-active CRIU_AMDGPU_MOCK_ROOT=$ROOT"; do
    set -- $case
    name=$1; shift
    run_cpu_case "$name" "$BOTH" /dev/cpu_dma_latency "$@"
    note "other plugin ($name): its device dumped and restored through it, checksum $CASE_CHECKSUM"
done

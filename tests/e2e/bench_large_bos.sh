#!/usr/bin/env bash
# bench.large_bos: sizes past 32 bits through real criu (issue 22 item 5). A process with one BO
# of BENCH_MIB MiB (2560 by default: 2.5 GiB, past 2^31) on each of two mock GPUs (5 GiB in all,
# past 2^32) is dumped, its images checked by `criu-amdgpu image verify` (every byte against the
# checksum recorded at dump), and restored with parallel-restore (criu 4.2+; serially under older
# criu); it must then end with the checksum of an uninterrupted run. Prints the times of the
# dump, the verify and the restore. Needs about 3 x 5 GiB of disk under TMPDIR and a few minutes:
# not a CI entry (configure with -DCRIU_AMDGPU_BENCH_LARGE=ON for `ctest -R bench.large_bos`, or
# run `BUILD_DIR=build CRIU=... bash tests/e2e/bench_large_bos.sh`).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench_lib.sh"
MIB=${BENCH_MIB:-2560}
case "$CRIU_VERSION" in
    4.0* | 4.1*) parallel=0 ;;
    *) parallel=1 ;;
esac
ROOT=$(make_machine machine --gpus 2 --vram 16G)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 1 --size "${MIB}M" --steps 2)
t0=$(now)
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")
[ -n "$EXPECTED" ] || fail "the uninterrupted run printed no checksum"
reference=$(seconds_since "$t0")

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 2000
wait_for_line "$WORK/out.txt" "step 1/" 600
t0=$(now)
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
dump=$(seconds_since "$t0")
wait_gone "$WPID" 30
bytes=$(du -b --apparent-size -c "$WORK"/img/amdgpu-*pages* | tail -1 | awk '{print $1}')
[ "$bytes" -gt $((2 * MIB * 1048576)) ] || fail "the pages files hold $bytes bytes, fewer than the BOs"

t0=$(now)
VERIFY=$("$TOOL" image verify "$WORK/img") || fail "image verify: $VERIFY"
verify=$(seconds_since "$t0")

"$TOOL" mock reset --root "$ROOT" >/dev/null
t0=$(now)
CRIU_AMDGPU_PARALLEL_RESTORE=$parallel criu_restore "$WORK/img"
restore=$(seconds_since "$t0")
if [ "$parallel" = 1 ]; then
    grep -q "parallel restore: 2 job(s) done" "$WORK/img/restore.log" ||
        fail "the restore was not a parallel one: $(grep 'parallel restore' "$WORK/img/restore.log")"
fi
wait_for_line "$WORK/out.txt" "^checksum " 600
GOT=$(checksum_of "$WORK/out.txt")
[ "$GOT" = "$EXPECTED" ] || fail "checksum after the restore $GOT, expected $EXPECTED"

echo "bench.large_bos: criu $CRIU_VERSION, 2 mock GPUs with one BO of $MIB MiB each ($bytes bytes of" \
    "pages files), $(conditions)"
echo "  uninterrupted run $reference s; dump $dump s; image verify $verify s ($(echo "$VERIFY" | tail -1));" \
    "$([ "$parallel" = 1 ] && echo parallel || echo serial) restore $restore s; checksum $GOT holds"

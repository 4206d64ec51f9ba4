#!/usr/bin/env bash
# criu-amdgpu image show / verify / check on a checkpoint real criu wrote: the dry-run's answer is
# what the restore then does (it restores where check said so, with the right checksum), a
# damaged pages file is named with its first bad offset, and verify reads criu's own images: a
# render-node image or all of the plugin's removed is a damaged checkpoint.
# The workload steps until the scenario is done with it (--stop-file: a fixed number of steps could
# end before criu froze it under load); the restored one stops when the scenario says so.
source "$(dirname "$0")/lib.sh"
SRC=$(make_machine source --gpus 2)
SMALL=$(make_machine small --gpus 2 --vram 64K)
ARGS=(--gpus 2 --buffers 2 --size 131072)

export CRIU_AMDGPU_MOCK_ROOT=$SRC
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$SRC" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 4/"
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
IMG=$WORK/img

# show: every image decoded, the writer named, nothing missing or left over.
OUT=$("$TOOL" image show "$IMG") || fail "image show exited $?: $OUT"
grep -q "written by: criu-amdgpu (mock GPU backend)" <<<"$OUT" || fail "show: no writer: $OUT"
[ "$(echo "$OUT" | grep -c '^render node amdgpu-renderD-')" = 2 ] || fail "show: not 2 render nodes: $OUT"
grep -qE "BO [0-9]+: handle [0-9]+ [A-Z|-]+ +131072 bytes at VA 0x" <<<"$OUT" || fail "show: no BO line: $OUT"
grep -qE "[0-9]+ queue\(s\), [0-9]+ event\(s\)" <<<"$OUT" || fail "show: no queue counts: $OUT"
grep -q "^topology amdgpu-topology.img: 2 GPU(s)" <<<"$OUT" || fail "show: no topology: $OUT"
grep -qE "^(missing|left over|cannot decode)" <<<"$OUT" && fail "show: problems reported: $OUT"
JSON=$("$TOOL" image show --json "$IMG") || fail "image show --json exited $?"
[ "$(grep -o '"image":"amdgpu-renderD-[0-9]*.img"' <<<"$JSON" | wc -l)" = 2 ] || fail "show --json: $JSON"
grep -q '"missing":\[\],"leftover":\[\],"undecodable":\[\]}$' <<<"$JSON" || fail "show --json: $JSON"

# verify: sound.
OUT=$("$TOOL" image verify "$IMG") || fail "image verify of a sound checkpoint exited $?: $OUT"
grep -qE "^[0-9]+ contents file\(s\) checked \(([0-9]+) with a recorded checksum\): all sound" <<<"$OUT" ||
    fail "verify: $OUT"
# ... read against criu's own images: the dump finished, the plugin registered, every external
# file has its image. Without one render-node image, or without any of the plugin's, it is damaged.
grep -q "^note: checked against criu's inventory.img: the dump finished, plugins: .*amdgpu_plugin" <<<"$OUT" ||
    fail "verify: criu's inventory not read: $OUT"
grep -qE "^note: checked against criu's files.img: [1-9][0-9]* external file" <<<"$OUT" ||
    fail "verify: criu's files.img not read: $OUT"
PART=$WORK/partial
cp -a "$IMG" "$PART"
RENDER=$(ls "$PART" | grep '^amdgpu-renderD-' | head -1)
rm "$PART/$RENDER"
rc=0
OUT=$("$TOOL" image verify "$PART") || rc=$?
[ "$rc" = 2 ] || fail "verify without $RENDER exited $rc: $OUT"
grep -q "$RENDER or amdgpu-dmabuf_[0-9]*.img: missing: files.img lists external file" <<<"$OUT" ||
    fail "verify did not name $RENDER: $OUT"
rm -f "$PART"/amdgpu-*
rc=0
OUT=$("$TOOL" image verify "$PART") || rc=$?
[ "$rc" = 2 ] || fail "verify without the plugin's images exited $rc: $OUT"
grep -q "^inventory.img: lists amdgpu_plugin among the plugins the dump used" <<<"$OUT" ||
    fail "verify without the plugin's images: $OUT"

# check: a machine with too little VRAM would not restore, naming the rule and the option.
rc=0
OUT=$(CRIU_AMDGPU_MOCK_ROOT=$SMALL "$TOOL" image check "$IMG") || rc=$?
[ "$rc" = 2 ] || fail "check against a machine with 64K of VRAM exited $rc: $OUT"
grep -qi "vram" <<<"$OUT" || fail "check: no VRAM reason: $OUT"
grep -q "would NOT restore" <<<"$OUT" || fail "check: $OUT"
rc=0
OUT=$("$TOOL" image check --topology "$WORK/small-topology" --json "$IMG") || rc=$?
[ "$rc" = 2 ] || fail "check --topology small exited $rc: $OUT"
grep -q '"would_restore":false' <<<"$OUT" || fail "check --json: $OUT"
grep -q '"matched":false,"mapping":\[\],"reasons":\["' <<<"$OUT" || fail "check --json: no reasons: $OUT"
# ... and the source machine would, with the mock backend: then the restore does.
OUT=$("$TOOL" image check "$IMG") || fail "check on the source machine exited $?: $OUT"
grep -q "^backend: mock" <<<"$OUT" || fail "check: backend: $OUT"
grep -qE "^  0x1000 -> 0x1000" <<<"$OUT" || fail "check: mapping: $OUT"
criu_restore "$IMG"
finish_stopped "$SRC" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum after the restore check approved $GOT, expected $EXPECTED"

# verify names the damaged file and where it goes wrong: a flipped byte inside a BO, a cut file.
PAGES=$(ls -S "$IMG" | grep "^amdgpu-drm-pages-" | head -1)
flip_byte "$IMG/$PAGES" 1000
rc=0
OUT=$("$TOOL" image verify "$IMG") || rc=$?
[ "$rc" = 2 ] || fail "verify of a flipped byte exited $rc: $OUT"
grep -qE "^$PAGES: at offset 8: the contents do not match the checksum" <<<"$OUT" ||
    fail "verify did not name $PAGES: $OUT"
SIZE=$(stat -c %s "$IMG/$PAGES")
truncate -s $((SIZE - 100)) "$IMG/$PAGES"
rc=0
OUT=$("$TOOL" image verify --json "$IMG") || rc=$?
[ "$rc" = 2 ] || fail "verify of a cut file exited $rc: $OUT"
grep -qF "\"problems\":[{\"file\":\"$PAGES\",\"offset\":$((SIZE - 100))," <<<"$OUT" ||
    fail "verify --json of a cut file: $OUT"
note "image inspect: show/verify/check on criu's dump; check approved the restore (checksum $GOT); verify found $PAGES cut at $((SIZE - 100)), $RENDER and the plugin's images removed"

#!/usr/bin/env bash
# Encrypted checkpoints (issue 35), with real criu: the inference-shaped workload dumped with
# content-encryption=aes-256-gcm and zstd (--leave-running), then with chacha20-poly1305 against
# that dump (parent-images; the dump node needs the private key to reuse the parent's key). No
# contents file is under CRIU's own names, none holds the workload's bytes in the clear, image
# show names the cipher and the certificate's fingerprint, image verify --key authenticates every
# frame and image check says whether a key opens it. A restore without the key and one of a
# tampered chunk are refused, naming the option and the file and frame; after a GPU reset the
# chain restores with the key and finishes with the checksum of an uninterrupted run. The workload
# steps until the scenario is done with it (--stop-file: a fixed number of steps could end before
# the second dump under load); the restored one takes a step and stops, the stop file there by
# then. Its output is /dev/null (it runs on after the dumps): its steps are seen as its queue's
# completed commands, one fill and then one more per step (one rewritten buffer of four).
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 1 --buffers 4 --size 2M --shape inference)

KEYS=$WORK/keys
mkdir -m 0700 "$KEYS"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=criu-amdgpu-e2e \
    -keyout "$KEYS/checkpoint.key" -out "$KEYS/checkpoint.crt" 2>/dev/null ||
    fail "openssl could not make a key and certificate"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other \
    -keyout "$KEYS/other.key" -out "$KEYS/other.crt" 2>/dev/null || fail "openssl: other key"
chmod 0600 "$KEYS"/*
export CRIU_AMDGPU_CONTENT_CERTIFICATE=$KEYS/checkpoint.crt

start_workload /dev/null "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop" --result "$WORK/result.txt"
wait_for_gpu_commands "$ROOT" 1 4 # step 3
CRIU_AMDGPU_CONTENT_ENCRYPTION=aes-256-gcm CRIU_AMDGPU_CONTENT_COMPRESSION=zstd \
    criu_dump "$WORK/e1" "$WPID" --leave-running || fail "the encrypted zstd dump failed"
wait_for_gpu_commands "$ROOT" 1 $(($(gpu_commands_completed "$ROOT") + 1)) # a step more
CRIU_AMDGPU_CONTENT_ENCRYPTION=chacha20-poly1305 CRIU_AMDGPU_PARENT_IMAGES=../e1 \
    CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key \
    criu_dump "$WORK/e2" "$WPID" --leave-running || fail "the encrypted dump against e1 failed"

for d in e1 e2; do
    [ -f "$WORK/$d/amdgpu-seal.img" ] || fail "$d holds no key image"
    ls "$WORK/$d"/amdgpu-drm-pages-* >/dev/null 2>&1 &&
        fail "$d: encrypted contents under CRIU's own names"
    n=$(ls "$WORK/$d"/amdgpu-packed-* | wc -l)
    [ "$n" = 4 ] || fail "$d holds $n packed contents files, not one per BO (4)"
done
fp=$(openssl x509 -in "$KEYS/checkpoint.crt" -noout -fingerprint -sha256 | cut -d= -f2)
"$TOOL" image show "$WORK/e2" | grep -q "encrypted: chacha20-poly1305.*fingerprint $fp" ||
    fail "image show does not name the cipher and the certificate: $("$TOOL" image show "$WORK/e2" | grep encrypted)"
"$TOOL" image verify "$WORK/e2" --key "$KEYS/checkpoint.key" >"$WORK/verify.txt" ||
    fail "image verify --key e2: $(cat "$WORK/verify.txt")"
"$TOOL" image verify "$WORK/e2" >/dev/null 2>&1 && fail "image verify without the key passed"
"$TOOL" image check "$WORK/e2" --key "$KEYS/other.key" >"$WORK/check.txt" &&
    fail "image check says another key opens e2"
grep -q "does not unwrap with the content-private-key" "$WORK/check.txt" ||
    fail "image check does not say the other key does not open e2: $(cat "$WORK/check.txt")"

kill -0 "$WPID" 2>/dev/null || fail "the original did not keep running through the dumps"
touch "$WORK/stop"
wait_gone "$WPID" 60
expect_stopped_result "$ROOT" "the original after the dumps" "${ARGS[@]}"

restore_refused "$WORK/e2" "no content-private-key is given"
cp -a "$WORK/e2" "$WORK/t2"
rm -f "$WORK/t2"/*.log
victim=$(cd "$WORK/t2" && ls -S amdgpu-packed-* | head -1)
flip_byte "$WORK/t2/$victim" 200
CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key restore_refused "$WORK/t2" "$victim: frame 0"

CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key \
    restore_stopped "$WORK/e2" "restored from the encrypted chain"
note "restored the encrypted chain (aes-256-gcm + zstd, then chacha20-poly1305) after a GPU reset: checksum $GOT"

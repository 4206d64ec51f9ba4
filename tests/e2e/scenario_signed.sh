#!/usr/bin/env bash
# Signed checkpoints (issue 52), with real criu 4.3: a dump with checkpoint-signing-key signs its
# whole image directory at DUMP_FINISH (an ECDSA key and certificate made here with openssl);
# image verify accepts it under trusted-certificates and the restore finishes with the checksum
# of an uninterrupted run. A copy with one of criu's images changed is refused at the plugin's
# init, the error naming the file, before anything is restored; image verify says the same.
# The workload steps until the scenario is done with it (--stop-file: a fixed number of steps
# could end before criu froze it under load); the restored one takes a step and stops, the stop
# file there by then.
source "$(dirname "$0")/lib.sh"
case "$CRIU_VERSION" in
    4.3*) ;;
    *) fail "criu $CRIU_VERSION has no DUMP_FINISH: this scenario is declared for criu 4.3" ;;
esac
ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 1 --buffers 2 --size 262144)

KEYS=$WORK/keys
mkdir -m 0700 "$KEYS"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=node-a \
    -keyout "$KEYS/node.key" -out "$KEYS/node.crt" 2>/dev/null ||
    fail "openssl could not make a key and certificate"
chmod 0600 "$KEYS"/*
export CRIU_AMDGPU_TRUSTED_CERTIFICATES=$KEYS/node.crt

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop" --result "$WORK/result.txt"
wait_for_line "$WORK/out.txt" "step 5/"
CRIU_AMDGPU_CHECKPOINT_SIGNING_KEY=$KEYS/node.key \
    CRIU_AMDGPU_CHECKPOINT_SIGNING_CERTIFICATE=$KEYS/node.crt \
    criu_dump "$WORK/s1" "$WPID" || fail "the signed dump failed"
wait_gone "$WPID" 10
touch "$WORK/stop"
[ -f "$WORK/s1/amdgpu-manifest.img" ] || fail "the signed dump wrote no amdgpu-manifest.img"
grep -q "signed the checkpoint with ECDSA with SHA-256" "$WORK/s1/dump.log" ||
    fail "the dump's log does not say it signed the checkpoint"
"$TOOL" image verify "$WORK/s1" >"$WORK/verify.txt" || fail "image verify: $(cat "$WORK/verify.txt")"
grep -q "signed by a trusted certificate" "$WORK/verify.txt" ||
    fail "image verify does not say who signed it: $(cat "$WORK/verify.txt")"

# The copy to tamper with is taken before the restore writes its log and pid file there.
cp -a "$WORK/s1" "$WORK/t1"
rm -f "$WORK/t1"/*.log
restore_stopped "$WORK/s1" "restored from the signed checkpoint"
grep -q "the checkpoint is signed by a trusted certificate" "$WORK/s1/restore.log" ||
    fail "the restore's log does not say the signature was checked"

victim=$(cd "$WORK/t1" && ls pages-*.img | head -1)
[ -n "$victim" ] || fail "criu wrote no pages image"
flip_byte "$WORK/t1/$victim" 100
restore_refused "$WORK/t1" "$victim: changed since the checkpoint was signed"
"$TOOL" image verify "$WORK/t1" >"$WORK/verify-t1.txt" && fail "image verify accepted t1"
grep -q "$victim: changed since the checkpoint was signed" "$WORK/verify-t1.txt" ||
    fail "image verify does not name $victim: $(cat "$WORK/verify-t1.txt")"
note "signed dump restored (checksum $GOT); a changed $victim refused by the restore and image verify"

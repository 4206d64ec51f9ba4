#!/usr/bin/env bash
# Usage: tests/fuzz/update_seeds.sh BUILD_DIR
# Rewrites the committed seeds (tests/fuzz/corpus/NAME/seed-*) from the harnesses built in
# BUILD_DIR. Regression inputs (regress-*) are kept.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
for harness in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$harness" ] || continue
  name=${harness##*/fuzz_}
  mkdir -p "$here/corpus/$name"
  rm -f "$here/corpus/$name"/seed-*
  "$harness" --write-seeds="$here/corpus/$name"
  echo "$name: $(ls "$here/corpus/$name" | wc -l) inputs"
done

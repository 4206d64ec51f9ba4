#!/usr/bin/env bash
# Usage: tests/fuzz/update_seeds.sh BUILD_DIR
# Rewrites the committed seeds (tests/fuzz/corpus/NAME/seed-*) from the harnesses built in
# BUILD_DIR. Regression inputs (regress-*) are kept.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
# The harnesses load libstdc++ before the shared ASan runtime (as in scripts/test.sh).
export ASAN_OPTIONS=${ASAN_OPTIONS:-verify_asan_link_order=0}
for harness in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$harness" ] || continue
  name=${harness##*/fuzz_}
  mkdir -p "$here/corpus/$name"
  # Written beside the corpus first: a harness that fails leaves the committed seeds as they were.
  fresh=$(mktemp -d)
  "$harness" --write-seeds="$fresh" || { rm -rf "$fresh"; echo "$harness failed" >&2; exit 1; }
  rm -f "$here/corpus/$name"/seed-*
  mv "$fresh"/* "$here/corpus/$name"/
  rmdir "$fresh"
  echo "$name: $(ls "$here/corpus/$name" | wc -l) inputs"
done

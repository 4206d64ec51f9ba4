#!/usr/bin/env bash
# Usage: check_seeds.sh HARNESS CORPUS_DIR
# Fails when the committed seeds (CORPUS_DIR/seed-*) differ from what HARNESS generates from the
# real formats today; tests/fuzz/update_seeds.sh rewrites them.
set -euo pipefail
harness=$1 corpus=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$harness" --write-seeds="$tmp/seeds"
mkdir -p "$tmp/committed"
cp "$corpus"/seed-* "$tmp/committed/" 2>/dev/null || true
if ! diff -r "$tmp/committed" "$tmp/seeds" >/dev/null; then
  echo "the seeds in $corpus are stale: run tests/fuzz/update_seeds.sh BUILD_DIR" >&2
  diff -r -q "$tmp/committed" "$tmp/seeds" >&2 || true
  exit 1
fi
echo "$(ls "$tmp/seeds" | wc -l) seeds up to date"

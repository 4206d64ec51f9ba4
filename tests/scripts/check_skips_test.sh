#!/usr/bin/env bash
# scripts/check-skips.py --gtest-xml on the XML report a real gtest program writes (skip_sample:
# one test skips, one passes), as the per-suite entries of the sanitizer builds write theirs: the
# skipped test is found under its CTest name with its reason, passes when the expected list names
# it and fails the check, marked NOT EXPECTED, when the list does not.
#   check_skips_test.sh CHECK_SKIPS SKIP_SAMPLE
set -euo pipefail
check=$1 sample=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/xml"
"$sample" --gtest_output="xml:$work/xml/skip_sample.SkipSample.xml" >/dev/null
# The CTest report of that run: one entry, the suite, passed.
echo '<testsuite><testcase name="SkipSample" status="run"/></testsuite>' >"$work/junit.xml"
echo 'SkipSample.Skips  # the sample skips' >"$work/expected.txt"
: >"$work/none.txt"

"$check" --gtest-xml "$work/xml" "$work/junit.xml" "$work/expected.txt" >"$work/out"
grep -q '^== skipped: 1 test(s)$' "$work/out" || { cat "$work/out"; echo "FAIL: the one skip not counted"; exit 1; }
grep -q "^  SkipSample.Skips: the sample's reason$" "$work/out" ||
    { cat "$work/out"; echo "FAIL: the skip not named with its reason"; exit 1; }

if "$check" --gtest-xml "$work/xml" "$work/junit.xml" "$work/none.txt" >"$work/out"; then
    cat "$work/out"; echo "FAIL: a skip the list lacks passed the check"; exit 1
fi
grep -q 'SkipSample.Skips: .*\[NOT EXPECTED\]' "$work/out" ||
    { cat "$work/out"; echo "FAIL: the unexpected skip not marked"; exit 1; }

# Without --gtest-xml the suite's entry hides the skip (why the sanitizer builds pass the folder).
"$check" "$work/junit.xml" "$work/none.txt" >"$work/out"
grep -q '^== skipped: 0 test(s)$' "$work/out" || { cat "$work/out"; echo "FAIL: counted without the reports"; exit 1; }
echo "check-skips reads gtest's XML reports"

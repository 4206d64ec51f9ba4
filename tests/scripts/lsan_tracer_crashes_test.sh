#!/usr/bin/env bash
# scripts/lsan-tracer-crashes.py on CTest reports whose failed entry printed what LeakSanitizer
# printed when its tracer died at exit in a cold CI run here (2026-12-07, MockEncryptedTest): that
# alone is named (run again by scripts/test.sh); with a failed gtest test, a leak report or a
# second, real failure beside it, nothing is.
#   lsan_tracer_crashes_test.sh LSAN_TRACER_CRASHES
set -euo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crash='[  PASSED  ] 9 tests.
Tracer caught signal 11: addr=0x1740 pc=0x7fdc51c48b0a sp=0x7fdc4a0f5d40
==28387==LeakSanitizer has encountered a fatal error.
==28387==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1
==28387==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)'
# junit FILE NAME OUTPUT [NAME OUTPUT...]: a CTest report whose named entries failed with OUTPUT.
junit() {
    local file=$1; shift
    {
        echo '<testsuite><testcase name="Fine" status="run"><system-out>[  PASSED  ] 1 test.</system-out></testcase>'
        while [ $# -gt 0 ]; do
            printf '<testcase name="%s" status="fail"><failure message="Failed"/><system-out><![CDATA[%s]]></system-out></testcase>\n' "$1" "$2"
            shift 2
        done
        echo '</testsuite>'
    } >"$file"
}
expect_named() { # FILE WANT
    local got
    got=$("$script" "$1") || { echo "FAIL: $1: nothing named, expected $2"; exit 1; }
    [ "$got" = "$2" ] || { echo "FAIL: $1: named '$got', expected '$2'"; exit 1; }
}
expect_none() { # FILE
    if "$script" "$1" >"$work/out"; then echo "FAIL: $1 named $(cat "$work/out")"; exit 1; fi
    [ ! -s "$work/out" ] || { echo "FAIL: $1 printed $(cat "$work/out")"; exit 1; }
}
junit "$work/crash.xml" MockEncryptedTest "$crash"
expect_named "$work/crash.xml" MockEncryptedTest
junit "$work/failed.xml" MockEncryptedTest "${crash/\[  PASSED  \] 9 tests./[  FAILED  ] 1 test, listed below:}"
expect_none "$work/failed.xml"
junit "$work/leak.xml" MockEncryptedTest "==1==ERROR: LeakSanitizer: detected memory leaks
$crash"
expect_none "$work/leak.xml"
junit "$work/two.xml" MockEncryptedTest "$crash" Other "[  FAILED  ] Other.Test"
expect_none "$work/two.xml"
junit "$work/none.xml"
expect_none "$work/none.xml"
echo "only LeakSanitizer's tracer crash is named"

#!/usr/bin/env python3
"""Names the failed tests of a CTest run whose only failure is LeakSanitizer's own crash at exit.

    scripts/lsan-tracer-crashes.py JUNIT

LeakSanitizer checks for leaks at exit from a tracer thread that stops every thread of the
process; under load that tracer now and then dies itself ("Tracer caught signal 11" then
"LeakSanitizer has encountered a fatal error", google/sanitizers#1353: a runtime bug, no leak
and no failed test). scripts/test.sh runs such tests once more. A failed test counts only when its
output has that signature, gtest said every test passed, and no sanitizer reported an error.

Prints one name a line and exits 0 when every failed test of JUNIT is such a crash (and there is
at least one); exits 1, printing nothing, otherwise.
"""
import sys
import xml.etree.ElementTree as ET

TRACER = "Tracer caught signal"
FATAL = "LeakSanitizer has encountered a fatal error"
# What a real finding prints: a leak or memory error report, a gtest failure, UBSan's runtime error.
FINDINGS = ("ERROR: LeakSanitizer: detected memory leaks", "ERROR: AddressSanitizer",
            "[  FAILED  ]", "runtime error:")


def tracer_crash_only(output):
    if TRACER not in output or FATAL not in output:
        return False
    if any(f in output for f in FINDINGS):
        return False
    return "[  PASSED  ]" in output


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
    except (OSError, ET.ParseError):
        return 1
    failed = [c for c in cases if c.get("status") == "fail" or c.find("failure") is not None]
    if not failed or not all(tracer_crash_only(c.findtext("system-out") or "") for c in failed):
        return 1
    for case in failed:
        print(case.get("name"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

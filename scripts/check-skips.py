#!/usr/bin/env python3
"""Prints how many tests a ctest run skipped and why, and fails on a skip that the list of
expected skips lacks: a skipped test is one that did not check what it was written for.

    scripts/check-skips.py JUNIT [EXPECTED]

JUNIT is the file `ctest --output-junit` wrote. EXPECTED (default tests/expected-skips.txt) holds
one test name a line, shell wildcards allowed, each with the reason it may skip after a '#'.
"""
import fnmatch
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def expected_patterns(path):
    patterns = []
    for line in Path(path).read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            patterns.append(name)
    return patterns


def skip_reason(case):
    """The message the test gave (gtest prints it between 'Skipped' and '[  SKIPPED ]')."""
    out = case.findtext("system-out") or ""
    found = re.search(r": Skipped\n(.*?)\n\[  SKIPPED \]", out, re.S)
    if found:
        return " ".join(found.group(1).split()) or "(no reason given)"
    skipped = case.find("skipped")
    return (skipped.get("message") if skipped is not None else None) or "(no reason given)"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    junit = sys.argv[1]
    expected = sys.argv[2] if len(sys.argv) == 3 else str(
        Path(__file__).resolve().parent.parent / "tests" / "expected-skips.txt")
    patterns = expected_patterns(expected)
    try:
        cases = list(ET.parse(junit).getroot().iter("testcase"))
    except (OSError, ET.ParseError) as e:
        # CTest did not get to write it (the run failed before any test): that failure is reported.
        print(f"== skipped: no CTest report ({e})")
        return 0
    skipped = [c for c in cases if c.get("status") == "skipped" or c.find("skipped") is not None]
    print(f"== skipped: {len(skipped)} test(s)")
    unexpected = []
    for case in skipped:
        name = case.get("name")
        known = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        print(f"  {name}: {skip_reason(case)}{'' if known else '  [NOT EXPECTED]'}")
        if not known:
            unexpected.append(name)
    if unexpected:
        print(f"== {len(unexpected)} skip(s) not in {expected}: a skip there hides what the test "
              "should have caught; fix the cause, or add the test with the reason it may skip")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints how many tests a ctest run skipped and why, and fails on a skip that the list of
expected skips lacks: a skipped test is one that did not check what it was written for.

    scripts/check-skips.py [--gtest-xml DIR] JUNIT [EXPECTED]

JUNIT is the file `ctest --output-junit` wrote. EXPECTED (default tests/expected-skips.txt) holds
one test name a line, shell wildcards allowed, each with the reason it may skip after a '#'.
DIR holds the gtest XML reports of a build whose CTest entries are gtest suites (the sanitizer
builds: tests/cmake/gtest_suites.cmake): a suite's entry passes whatever its tests skipped, so the
tests each report says it skipped are counted too, named SUITE.TEST as CTest names them elsewhere.
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


def gtest_skips(directory):
    """(name, reason) of every test a gtest XML report in DIRECTORY says it skipped."""
    found = []
    for report in sorted(Path(directory).glob("*.xml")):
        try:
            cases = ET.parse(report).getroot().iter("testcase")
        except ET.ParseError as e:
            sys.exit(f"check-skips: {report}: not a gtest XML report ({e})")
        for case in cases:
            skipped = case.find("skipped")
            if case.get("result") == "skipped" or skipped is not None:
                reason = (skipped.get("message") if skipped is not None else None) or ""
                # gtest's message is "FILE:LINE\nREASON"; the reason is what the test said.
                reason = " ".join(reason.split("\n", 1)[-1].split()) or "(no reason given)"
                found.append((f"{case.get('classname')}.{case.get('name')}", reason))
    return found


def main():
    args = sys.argv[1:]
    gtest_xml = None
    if len(args) >= 2 and args[0] == "--gtest-xml":
        gtest_xml, args = args[1], args[2:]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    junit = args[0]
    expected = args[1] if len(args) == 2 else str(
        Path(__file__).resolve().parent.parent / "tests" / "expected-skips.txt")
    patterns = expected_patterns(expected)
    try:
        cases = list(ET.parse(junit).getroot().iter("testcase"))
    except (OSError, ET.ParseError) as e:
        # CTest did not get to write it (the run failed before any test): that failure is reported.
        print(f"== skipped: no CTest report ({e})")
        return 0
    skipped = [(c.get("name"), skip_reason(c)) for c in cases
               if c.get("status") == "skipped" or c.find("skipped") is not None]
    if gtest_xml:
        skipped += gtest_skips(gtest_xml)
    print(f"== skipped: {len(skipped)} test(s)")
    unexpected = []
    for name, reason in skipped:
        known = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        print(f"  {name}: {reason}{'' if known else '  [NOT EXPECTED]'}")
        if not known:
            unexpected.append(name)
    if unexpected:
        print(f"== {len(unexpected)} skip(s) not in {expected}: a skip there hides what the test "
              "should have caught; fix the cause, or add the test with the reason it may skip")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

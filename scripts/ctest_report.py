#!/usr/bin/env python3
"""Where a CTest run's time went: one line per label (e2e split per criu generation).

    scripts/ctest_report.py STAGE BUILD_DIR JUNIT_XML

JUNIT_XML is what `ctest --output-junit` wrote for the run; the labels come from
`ctest --show-only=json-v1` of BUILD_DIR. Each line gives the tests run, how many failed or were
skipped, and their seconds added up (tests of a label that ran side by side count each their own
time, so a label's seconds can exceed the wall time it took). Prints nothing but a note when the
file is missing (a run that failed before CTest started).
"""
import collections
import json
import subprocess
import sys
import xml.etree.ElementTree as ET


def labels_of(build_dir):
    out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    labels = {}
    for test in json.loads(out).get("tests", []):
        names = []
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                names = list(prop.get("value") or [])
        labels[test["name"]] = names or ["(no label)"]
    return labels


def group_of(name, label):
    # e2e.SCENARIO.criu-VERSION and bench.NAME.criu-VERSION: one group per criu generation.
    if label in ("e2e", "bench") and ".criu-" in name:
        return f"{label} criu-{name.rsplit('.criu-', 1)[1]}"
    return label


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    stage, build_dir, junit = sys.argv[1:]
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"== time: {stage}: no CTest report ({e})")
        return
    labels = labels_of(build_dir)
    rows = collections.defaultdict(lambda: [0, 0, 0, 0.0])  # run, failed, skipped, seconds
    for case in root.iter("testcase"):
        name = case.get("name", "")
        seconds = float(case.get("time") or 0)
        failed = case.find("failure") is not None or case.get("status") == "fail"
        skipped = case.find("skipped") is not None or case.get("status") in ("notrun", "disabled")
        for label in labels.get(name, ["(no label)"]):
            row = rows[group_of(name, label)]
            row[0] += 1
            row[1] += failed
            row[2] += skipped and not failed
            row[3] += seconds
    for group, (run, failed, skipped, seconds) in sorted(rows.items(), key=lambda r: -r[1][3]):
        extra = "".join(f", {n} {what}" for n, what in ((failed, "failed"), (skipped, "skipped")) if n)
        print(f"== time: {stage}: tests {group}: {run} tests{extra}, {seconds:.0f} s of test time")


if __name__ == "__main__":
    main()

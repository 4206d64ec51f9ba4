#!/usr/bin/env python3
"""The README's benchmark table, from one run of the benchmarks.

    scripts/bench-table.py BUILD_DIR [--write README.md]   runs `ctest -L bench -V` in BUILD_DIR
    scripts/bench-table.py --log FILE [--write README.md]   reads the output of such a run
    scripts/bench-table.py --junit FILE [--write README.md] reads the benchmarks' output from
        CTest's JUnit file of a whole run (scripts/test.sh --normal writes BUILD_DIR/ctest-junit.xml)

Every benchmark prints, beside its own lines, one line per figure: "figure", the benchmark, what
is measured, the figure, the limit measured in the same run, the target and its verdict ("met",
"NOT met" or "none"), separated by tabs (benchutil::figure in tests/bench/bench_util.h, `figure`
in tests/e2e/bench_lib.sh). The verdicts are the benchmarks' own, computed from the figures of
that run; this script only lays them out. Without --write the table is printed; with it, the
table replaces what lies between the markers `<!-- bench-table:begin -->` and
`<!-- bench-table:end -->` in that file. A benchmark that failed or printed no figure fails the
script, naming it.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
# ctest -V prefixes each line of a test's output with "N: ".
FIGURE = re.compile(r"^(?:\d+: )?figure\t(.*)$")
HEADER = re.compile(r"^(?:\d+: )?(bench\.[a-z_.0-9-]+): (.*)$")
RESULT = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.+\s*(\*\*\*)?(\w+)")


def run_benchmarks(build_dir):
    """Runs every benchmark of BUILD_DIR; returns its output (also shown as it goes)."""
    cmd = ["ctest", "--test-dir", build_dir, "-L", "bench", "-V"]
    print("bench-table.py: " + " ".join(cmd), file=sys.stderr)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:
        sys.stderr.write(line)
        lines.append(line)
    proc.wait()
    return "".join(lines)


def parse(output):
    """(figures, headers, failed): figures in the order printed, each benchmark's first line, and
    the benchmarks ctest did not pass."""
    figures, headers, failed = [], {}, []
    for line in output.splitlines():
        m = FIGURE.match(line)
        if m:
            fields = m.group(1).split("\t")
            if len(fields) != 6:
                sys.exit(f"bench-table.py: a figure line without its 6 fields: {line!r}")
            figures.append(fields)
            continue
        m = HEADER.match(line)
        if m and m.group(1) not in headers:
            headers[m.group(1)] = m.group(2)
        m = RESULT.match(line)
        if m and m.group(3) != "Passed":
            failed.append(m.group(1))
    return figures, headers, failed


def from_junit(path):
    """The output of the benchmarks of a CTest JUnit file, as `ctest -V` would show it: each
    benchmark's lines, then its result line."""
    try:
        cases = ElementTree.parse(path).getroot().iter("testcase")
    except (OSError, ElementTree.ParseError) as e:
        sys.exit(f"bench-table.py: {path}: {e}")
    lines = []
    for case in cases:
        name = case.get("name", "")
        if not name.startswith("bench."):
            continue
        out = case.find("system-out")
        lines.extend((out.text or "").splitlines() if out is not None else [])
        passed = case.get("status") == "run" and case.find("failure") is None
        lines.append(f"1/1 Test #1: {name} ... {'Passed' if passed else '***Failed'}")
    if not lines:
        sys.exit(f"bench-table.py: {path} holds no benchmark (label bench)")
    return "\n".join(lines)


def cell(text):
    return text.replace("|", "\\|")


def render(figures, headers, how):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    out = [f"Measured {datetime.date.today().isoformat()} at commit {commit or 'unknown'} with "
           f"{how} ({os.cpu_count()} CPUs; each "
           "benchmark's conditions below the table).", "",
           "| benchmark | what | figure | limit in the same run | target | this run |",
           "|---|---|---|---|---|---|"]
    for bench, what, value, limit, target, verdict in figures:
        out.append("| " + " | ".join(cell(c) for c in
                                      (f"`{bench}`", what, value, limit, target, verdict)) + " |")
    out.append("")
    for bench in dict.fromkeys(f[0] for f in figures):
        if bench in headers:
            out.append(f"- `{bench}`: {cell(headers[bench])}")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", nargs="?", help="a build with the benchmarks (label bench)")
    parser.add_argument("--log", action="append", default=[],
                        help="the output of `ctest -L bench -V` instead of a run (repeatable)")
    parser.add_argument("--junit", action="append", default=[],
                        help="CTest's JUnit file of a run with the benchmarks (repeatable)")
    parser.add_argument("--write", metavar="README", help="replace the table in this file")
    args = parser.parse_args()
    if bool(args.build_dir) == bool(args.log or args.junit):
        parser.error("give BUILD_DIR, or --log FILE and --junit FILE (each as often as needed)")
    if args.build_dir:
        output = [run_benchmarks(args.build_dir)]
        how = "`scripts/bench-table.py BUILD_DIR --write README.md`"
    else:
        output = [from_junit(j) for j in args.junit] + [open(l).read() for l in args.log]
        sources = [f"the benchmarks of a whole `scripts/test.sh --normal` run, beside its other "
                   f"tests (`--junit BUILD_DIR/ctest-junit.xml`)"] * bool(args.junit)
        sources += ["`ctest -L bench -V` output (`--log FILE`)"] * bool(args.log)
        how = "`scripts/bench-table.py` from " + " and ".join(sources)
    # Several runs: each benchmark's figures and conditions from the first run that has figures
    # of it.
    figures, headers, failed = [], {}, []
    for text in output:
        run_figures, run_headers, run_failed = parse(text)
        mine = {f[0] for f in run_figures} - {f[0] for f in figures}
        figures += [f for f in run_figures if f[0] in mine]
        headers.update({b: h for b, h in run_headers.items() if b in mine or b not in headers})
        failed += run_failed
    # A benchmark that failed in one run counts only when no other run given has its figures (a
    # run of it alone after a fix, --log).
    failed = [b for b in failed if b not in {f[0] for f in figures}]
    if failed:
        sys.exit("bench-table.py: these benchmarks did not pass, no table written: " +
                 ", ".join(failed))
    silent = [b for b in headers if b not in {f[0] for f in figures}]
    if not figures:
        sys.exit("bench-table.py: no figure in the output (was it run with -V?)")
    table = render(figures, headers, how)
    if silent:
        print("bench-table.py: printed no figure (not in the table): " + ", ".join(silent),
              file=sys.stderr)
    if not args.write:
        sys.stdout.write(table)
        return
    text = open(args.write).read()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        sys.exit(f"bench-table.py: {args.write} has no single {BEGIN} ... {END}")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    open(args.write, "w").write(head + BEGIN + "\n" + table + END + tail)
    print(f"bench-table.py: {len(figures)} figures written to {args.write}", file=sys.stderr)


if __name__ == "__main__":
    main()

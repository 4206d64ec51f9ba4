#!/usr/bin/env python3
"""backends/amdgpu-drm laid out as backends/kfd is (issue 49, "One name per thing"): what others may
include in `include/amdgpu-drm/` (already there), everything else of the backend in `src/`.

Usage, from anywhere inside a checkout:   python3 scripts/dev/layout-amdgpu-drm.py

Deterministic and idempotent, for the lead to replay on a branch before merging it:
1. `git mv` each file at the top of backends/amdgpu-drm/ but CMakeLists.txt and README.md into
   src/ (a file a branch added there moves too; a second run finds none to move).
2. backends/amdgpu-drm/CMakeLists.txt: each source file named bare becomes `src/<name>`, and the
   folder itself as an include directory (the backend's own headers) becomes `.../src`.
3. The backend's README and CMakeLists' comment say where its own files are now (PROSE).
4. Every text file git lists (code, CMake, Markdown, scripts) naming `backends/amdgpu-drm/<file>` of
   a file now in src/ names `backends/amdgpu-drm/src/<file>`.
Hand edits after running it: none.
"""

import os
import re
import subprocess

FOLDER = "backends/amdgpu-drm"
KEPT = {"CMakeLists.txt", "README.md"}
TEXT_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".c", ".inc", ".md", ".txt", ".cmake", ".sh", ".py",
                 ".yml", ".yaml")


# The README's sentences about the old layout, and what they say now (whitespace-insensitive).
PROSE = {
    f"{FOLDER}/README.md": [
        ("The rest of the folder is the backend's own;",
         "Everything else, in `src/`, is the backend's\nown;"),
        ("the rest from its folder);", "the rest from its\n`src/`);"),
    ],
    f"{FOLDER}/CMakeLists.txt": [
        ("the rest of the folder is the backend's own.", "the rest, in src/, is the backend's own."),
    ],
}


def rewrite_prose(path, text):
    for old, new in PROSE.get(path, []):
        pattern = r"\s+".join(re.escape(w) for w in old.split())
        text = re.sub(pattern, lambda m: new, text)
    return text


def git(*args):
    return subprocess.check_output(["git", *args], text=True)


def main():
    os.chdir(git("rev-parse", "--show-toplevel").strip())
    listed = sorted({f for f in git("ls-files", "-z", "--cached", "--others",
                                    "--exclude-standard").split("\0") if f and os.path.isfile(f)})
    top = [f for f in listed if os.path.dirname(f) == FOLDER and os.path.basename(f) not in KEPT]
    if top:
        os.makedirs(f"{FOLDER}/src", exist_ok=True)
        for f in top:
            subprocess.check_call(["git", "mv", f, f"{FOLDER}/src/{os.path.basename(f)}"])
    moved = sorted(os.path.basename(f) for f in os.listdir(f"{FOLDER}/src"))

    cmake = f"{FOLDER}/CMakeLists.txt"
    with open(cmake, encoding="utf-8") as fh:
        text = fh.read()
    names = "|".join(re.escape(n) for n in moved if n.endswith((".cpp", ".c")))
    new = re.sub(rf"(?<![\w/.-])({names})(?![\w.])", r"src/\1", text)
    new = new.replace('"${CMAKE_CURRENT_SOURCE_DIR}")', '"${CMAKE_CURRENT_SOURCE_DIR}/src")')
    if new != text:
        with open(cmake, "w", encoding="utf-8") as fh:
            fh.write(new)

    named = re.compile(rf"{re.escape(FOLDER)}/({'|'.join(re.escape(n) for n in moved)})(?![\w.])")
    listed = sorted({f for f in git("ls-files", "-z", "--cached", "--others",
                                    "--exclude-standard").split("\0") if f and os.path.isfile(f)})
    for f in listed:
        if not f.endswith(TEXT_SUFFIXES) or f.startswith(("third_party/", "debian/")) or \
                f == "scripts/dev/layout-amdgpu-drm.py":
            continue
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        new = rewrite_prose(f, named.sub(lambda m: f"{FOLDER}/src/{m.group(1)}", text))
        if new != text:
            with open(f, "w", encoding="utf-8") as fh:
                fh.write(new)
            print(f)


if __name__ == "__main__":
    main()

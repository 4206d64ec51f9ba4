#!/usr/bin/env bash
# cmake/may_include.cmake on a project of two folders made here: a library `a` that links the
# library of lib/ and takes lib/include (and its own a/compat) as include directories. Its
# configuration passes when a/README.md's "May include" names `lib/` (its own folders need no
# mention), and stops, naming the target and the folder, when the paragraph does not (the folder
# named only elsewhere in the README), or when there is none. Then its build (check_includes.cmake):
# a header of `a` that includes a header of the library folder m/ (m/include/m/) passes where the
# paragraph names that header, and stops the build, naming the file and the include, where it
# names another header of m/ or names m/ only after "**Must not include:**".
#   may_include_test.sh CMAKE CMAKE_DIR (the project's cmake/: may_include.cmake and its helpers)
set -euo pipefail
cmake=$1 modules=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/p/cmake" "$work/p/a" "$work/p/lib/include" "$work/p/m/include/m"
cp "$modules"/may_include.cmake "$modules"/check_includes.cmake "$modules"/readme_rules.cmake \
  "$work/p/cmake/"
cat >"$work/p/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(may_include_test LANGUAGES CXX)
include(cmake/may_include.cmake)
add_subdirectory(a) # before lib/: the check runs once every target is defined
add_subdirectory(lib)
CMAKE
echo 'int f() { return 1; }' >"$work/p/lib/f.cpp"
echo 'add_library(l STATIC f.cpp)' >"$work/p/lib/CMakeLists.txt"
echo 'int g() { return 2; }' >"$work/p/a/g.cpp"
cat >"$work/p/a/CMakeLists.txt" <<'CMAKE'
add_library(a STATIC g.cpp)
target_include_directories(a PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}/compat"
                           "${PROJECT_SOURCE_DIR}/lib/include")
criu_amdgpu_may_include("${CMAKE_CURRENT_SOURCE_DIR}/README.md" a)
CMAKE
configure() { rm -rf "$work/b"; "$cmake" -S "$work/p" -B "$work/b" >"$work/out" 2>&1; }
fail() { echo "FAIL: $*" >&2; cat "$work/out" >&2; exit 1; }

printf '# a\n\n**May include:** `lib/` (its\nheaders).\n\n' >"$work/p/a/README.md"
configure || fail "the include directory of a named folder was refused"
echo 'target_link_libraries(a PRIVATE l)' >>"$work/p/a/CMakeLists.txt"
configure || fail "a link to a named folder was refused"

printf '# a\n\n**May include:** nothing.\n\nElsewhere: `lib/`.\n' >"$work/p/a/README.md"
if configure; then fail "a link to a folder the paragraph does not name passed"; fi
grep -q 'a links l (lib/)' "$work/out" || fail "the error does not name the target and the folder"
sed -i '/target_link_libraries/d' "$work/p/a/CMakeLists.txt"
if configure; then fail "an include directory of a folder the paragraph does not name passed"; fi
grep -q 'a adds the include directory .*(lib/)' "$work/out" || fail "the error does not name the directory"

# The includes of a's files, at build time.
build() { "$cmake" --build "$work/b" >"$work/out" 2>&1; }
echo '#include "m/one.h"' >"$work/p/a/h.h"
printf '# a\n\n**May include:** `lib/`, `m/one.h`.\n**Must not include:** `m/`.\n\n' \
  >"$work/p/a/README.md"
configure || fail "the configuration with a header of m/ named was refused"
build || fail "an include of a header the paragraph names was refused"
echo '#include "m/two.h"' >>"$work/p/a/h.h"
if build; then fail "an include of a header of m/ the paragraph does not allow passed"; fi
grep -q 'a/h.h: #include "m/two.h"' "$work/out" || fail "the error does not name the include"
grep -q 'm/one.h' "$work/out" && fail "the error names an include the paragraph allows"
rm "$work/p/a/h.h"

printf '# a\n\nNo rules here.\n' >"$work/p/a/README.md"
if configure; then fail "a README without the paragraph passed"; fi
grep -q 'has no "\*\*May include:\*\*" paragraph' "$work/out" || fail "the error does not say the paragraph is missing"
echo "may_include_test: every case as expected"

#pragma once
/// \file
/// How the sample workloads fail: a message naming the process and what it was doing, then exit
/// status 1.

#include "base/result.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#ifdef CRIU_AMDGPU_COVERAGE
extern "C" void __gcov_dump(void);
#endif

namespace workload {

/// Ends a forked child of the workload (a rank, the --fork copy) with `status`, without the
/// parent's exit handlers (_exit). In the coverage build (CRIU_AMDGPU_COVERAGE) it first writes
/// the child's line counts, which _exit would drop: scripts/coverage.sh counts what children ran.
[[noreturn]] inline void endChild(int status) {
#ifdef CRIU_AMDGPU_COVERAGE
    __gcov_dump();
#endif
    _exit(status);
}

[[noreturn]] inline void die(const char* what, const base::Error& e) {
    fprintf(stderr, "mockgpu-workload[%d]: %s: %s\n", getpid(), what, e.describe().c_str());
    exit(1);
}

template <typename T> T check(base::Result<T> r, const char* what) {
    if (!r.ok())
        die(what, r.error());
    return std::move(r).value();
}

inline void check(base::Result<void> r, const char* what) {
    if (!r.ok())
        die(what, r.error());
}

} // namespace workload

#pragma once
/// \file
/// How the sample workloads fail: a message naming the process and what it was doing, then exit
/// status 1.

#include "base/result.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace workload {

[[noreturn]] inline void die(const char* what, const hal::Error& e) {
    fprintf(stderr, "mockgpu-workload[%d]: %s: %s\n", getpid(), what, e.describe().c_str());
    exit(1);
}

template <typename T> T check(hal::Result<T> r, const char* what) {
    if (!r.ok())
        die(what, r.error());
    return std::move(r).value();
}

inline void check(hal::Result<void> r, const char* what) {
    if (!r.ok())
        die(what, r.error());
}

} // namespace workload

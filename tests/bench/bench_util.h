#pragma once
/// \file
/// What the benchmarks share: medians of repeated runs, MiB/s, bytes on disk, and the conditions
/// of the run (the machine is shared: figures are only comparable within one run).

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace benchutil {

/// Seconds one call of `fn` takes.
inline double secondsOf(const std::function<void()>& fn) {
    auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The median of `values` (not empty).
inline double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

/// Seconds `fn` takes, median of `runs` runs.
inline double medianSeconds(int runs, const std::function<void()>& fn) {
    std::vector<double> t;
    for (int i = 0; i < runs; ++i)
        t.push_back(secondsOf(fn));
    return median(std::move(t));
}

/// MiB/s of `bytes` in `seconds`.
inline double mibPerSecond(uint64_t bytes, double seconds) {
    return seconds > 0 ? static_cast<double>(bytes) / seconds / (1 << 20) : 0;
}

/// "load average 3.10 over 2 CPUs".
inline std::string conditions() {
    double load = 0;
    if (FILE* f = fopen("/proc/loadavg", "r")) {
        if (fscanf(f, "%lf", &load) != 1)
            load = -1;
        fclose(f);
    }
    char text[128];
    snprintf(text, sizeof(text), "load average %.2f over %u CPUs", load,
             std::max(1u, static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN))));
    return text;
}

/// Bytes the files of `dir` take on disk (holes excluded).
inline uint64_t allocatedIn(const std::string& dir) {
    uint64_t blocks = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        struct stat st;
        if (stat(e.path().c_str(), &st) == 0)
            blocks += static_cast<uint64_t>(st.st_blocks) * 512;
    }
    return blocks;
}

} // namespace benchutil

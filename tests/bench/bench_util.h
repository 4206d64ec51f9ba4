#pragma once
/// \file
/// What the benchmarks share: medians of repeated runs, MiB/s, bytes on disk, and the conditions
/// of the run (the machine is shared: figures are only comparable within one run).

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
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

/// The fastest of `values` (not empty): what the figures that write to or read from the disk
/// compare, each side with the fastest of its runs taken in turns. On this project's machines
/// (virtual, 2 CPUs) the first use of memory the kernel has lately freed costs up to ten times
/// more, whoever touches it: the same `dd` of 1 GiB into ext4 took 2.47 s and then 0.15 s in
/// back-to-back runs, nearly all of it in the kernel's copy into new page-cache pages (perf). That
/// only ever adds time, to whichever run it falls on, so a median of a few runs decides a verdict
/// by chance; the fastest run of each side is what the code itself costs. The medians are
/// printed beside them.
inline double fastest(const std::vector<double>& values) {
    return *std::min_element(values.begin(), values.end());
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

/// Drops a file's pages from the page cache (synced first), so the next read comes from the disk.
inline bool evictFromPageCache(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    close(fd);
    return ok;
}

/// Milliseconds the block device holding `path` has had requests in flight since it started
/// (the 10th field of its /sys/dev/block/MAJOR:MINOR/stat, `io_ticks`); -1 where it cannot be
/// read (no such file: a tmpfs, an overlay, a container without /sys). The share of a run's time
/// the device was busy tells whether the run waited on the disk.
inline long long diskBusyMs(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
        return -1;
    std::string stat = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                       std::to_string(minor(st.st_dev)) + "/stat";
    FILE* f = fopen(stat.c_str(), "r");
    if (!f)
        return -1;
    long long field[10] = {};
    int n = 0;
    while (n < 10 && fscanf(f, "%lld", &field[n]) == 1)
        ++n;
    fclose(f);
    return n == 10 ? field[9] : -1;
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

/// printf into a std::string.
[[gnu::format(printf, 1, 2)]] inline std::string text(const char* fmt, ...) {
    char buf[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    return buf;
}

/// "met" or "NOT met".
inline const char* met(bool yes) {
    return yes ? "met" : "NOT met";
}

/// One figure for the README's table, in the format scripts/bench-table.py reads: a line of
/// tab-separated fields "figure", the benchmark, what is measured, the figure, the limit measured
/// in the same run, the target, and this run's verdict ("met", "NOT met", or "none" where there is
/// no target). Every verdict is computed from the figures of this run.
inline void figure(const char* bench, const std::string& what, const std::string& value,
                   const std::string& limit, const std::string& target, const char* verdict) {
    printf("figure\t%s\t%s\t%s\t%s\t%s\t%s\n", bench, what.c_str(), value.c_str(), limit.c_str(),
           target.c_str(), verdict);
}

} // namespace benchutil

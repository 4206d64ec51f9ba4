// bench.cold_read: an image read cold from storage (its pages dropped from the page cache first)
// by the plugin's image reader, in the restore lane's 256 KiB reads, against what `cat` does (128
// KiB reads after POSIX_FADV_SEQUENTIAL) and against O_DIRECT reads of 2 MiB (the storage's own
// pace, with the page cache out of the way); alternately, medians. The file is BENCH_MIB MiB (512
// by default) in TMPDIR (/var/tmp by default: storage, not tmpfs). Exits non-zero only when it
// could not measure.
#include "bench_util.h"

#include "content/read_ahead.h"
#include "formats/image_store.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int kRuns = 5;
constexpr size_t kLaneRead = 256 * 1024; // the restore lane's I/O stage reads this at a time
constexpr size_t kCatRead = 128 * 1024;  // coreutils cat's buffer
constexpr size_t kDirectRead = 2 << 20;

/// Reads the whole file with read() calls of `chunk` bytes into `buf`; false on an error.
bool readAll(int fd, std::byte* buf, size_t chunk) {
    for (;;) {
        ssize_t n = read(fd, buf, chunk);
        if (n < 0)
            return false;
        if (n == 0)
            return true;
    }
}

} // namespace

int main() {
    uint64_t mib = 512;
    if (const char* m = getenv("BENCH_MIB"))
        mib = std::max(16ull, strtoull(m, nullptr, 10));
    const uint64_t bytes = mib << 20;
    std::string base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    std::string tmpl = base + "/criu-amdgpu-bench.XXXXXX";
    if (!mkdtemp(tmpl.data())) {
        fprintf(stderr, "bench.cold_read: cannot make a directory in %s\n", base.c_str());
        return 1;
    }
    const std::string dir = tmpl, name = "contents.img", path = dir + "/" + name;
    struct Cleanup {
        std::string dir;
        ~Cleanup() { std::filesystem::remove_all(dir); }
    } cleanup{dir};

    void* raw = nullptr;
    if (posix_memalign(&raw, 4096, kDirectRead) != 0) {
        fprintf(stderr, "bench.cold_read: cannot allocate a buffer\n");
        return 1;
    }
    std::unique_ptr<std::byte, decltype(&free)> buf(static_cast<std::byte*>(raw), &free);
    for (size_t i = 0; i < kDirectRead; ++i)
        buf.get()[i] = static_cast<std::byte>(i * 131 + (i >> 11));
    {
        int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        bool ok = fd >= 0;
        for (uint64_t done = 0; ok && done < bytes; done += kDirectRead)
            ok = write(fd, buf.get(), kDirectRead) == static_cast<ssize_t>(kDirectRead);
        ok = ok && fsync(fd) == 0;
        if (fd >= 0)
            close(fd);
        if (!ok) {
            fprintf(stderr, "bench.cold_read: cannot write %llu MiB to %s\n",
                    static_cast<unsigned long long>(mib), path.c_str());
            return 1;
        }
    }
    auto store = formats::openDirectoryStore(dir);
    if (!store.ok()) {
        fprintf(stderr, "bench.cold_read: %s\n", store.error().describe().c_str());
        return 1;
    }

    bool failed = false, direct = true;
    auto plugin = [&] {
        auto reader = (*store)->openRead(name);
        failed = failed || !reader.ok();
        for (uint64_t done = 0; reader.ok() && done < bytes && !failed; done += kLaneRead)
            failed = !(*reader)->readExact(std::span(buf.get(), kLaneRead)).ok();
    };
    auto cat = [&] {
        int fd = open(path.c_str(), O_RDONLY);
        failed = failed || fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) != 0 ||
                 !readAll(fd, buf.get(), kCatRead);
        if (fd >= 0)
            close(fd);
    };
    auto odirect = [&] {
        int fd = open(path.c_str(), O_RDONLY | O_DIRECT);
        if (fd < 0) {
            direct = false; // a file system without O_DIRECT: that figure is left out
            return;
        }
        failed = failed || !readAll(fd, buf.get(), kDirectRead);
        close(fd);
    };
    std::vector<double> t[3];
    const std::function<void()> ways[3] = {plugin, cat, odirect};
    for (int run = 0; run < kRuns && !failed; ++run)
        for (int w = 0; w < 3; ++w) {
            if (!benchutil::evictFromPageCache(path)) {
                fprintf(stderr, "bench.cold_read: cannot drop %s from the page cache\n",
                        path.c_str());
                return 1;
            }
            t[w].push_back(benchutil::secondsOf(ways[w]));
        }
    if (failed) {
        fprintf(stderr, "bench.cold_read: reading %s failed\n", path.c_str());
        return 1;
    }
    double p = benchutil::mibPerSecond(bytes, benchutil::median(t[0]));
    double c = benchutil::mibPerSecond(bytes, benchutil::median(t[1]));
    printf("bench.cold_read: %llu MiB read cold from %s, medians of %d runs (%s)\n",
           static_cast<unsigned long long>(mib), dir.c_str(), kRuns,
           benchutil::conditions().c_str());
    printf("  plugin's image reader (read-ahead asked %llu MiB ahead) %6.0f MiB/s\n",
           static_cast<unsigned long long>(content::kReadAheadWindow >> 20), p);
    printf("  cat (128 KiB reads, POSIX_FADV_SEQUENTIAL)               %6.0f MiB/s: the reader at "
           "%.2f x\n",
           c, p / c);
    std::string limit = benchutil::text("cat %.0f MiB/s (%.2f x)", c, p / c);
    if (direct) {
        double d = benchutil::mibPerSecond(bytes, benchutil::median(t[2]));
        printf("  O_DIRECT 2 MiB reads (the storage's pace)                %6.0f MiB/s: the reader "
               "at %.2f x\n",
               d, p / d);
        limit += benchutil::text("; O_DIRECT 2 MiB reads %.0f MiB/s (%.2f x)", d, p / d);
    } else {
        printf("  O_DIRECT: not supported by this file system\n");
    }
    benchutil::figure("bench.cold_read",
                      benchutil::text("%llu MiB read cold from %s",
                                      static_cast<unsigned long long>(mib), dir.c_str()),
                      benchutil::text("the image reader %.0f MiB/s", p), limit, "none", "none");
    return 0;
}

// The page-cache probe (formats/src/page_cache_probe.h) costs a fixed amount per file on every
// kernel: with cachestat refused (as before Linux 6.5), mincore looks at a fixed sample of
// windows, so a sparse packed file of 16 TiB named by a checkpoint is opened in bounded time.
#include "page_cache_probe.h"

#include "formats/image_store.h"
#include "formats/packed_image.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using testsupport::TempDir;

/// Forces the mincore fallback for one test.
struct WithoutCachestat {
    WithoutCachestat() { formats::pageCacheProbeWithoutCachestat = true; }
    ~WithoutCachestat() { formats::pageCacheProbeWithoutCachestat = false; }
};

constexpr uint64_t kSample = formats::kProbeWindows * formats::kProbeWindowPages;

uint64_t pageSize() {
    return static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

/// A sparse file of 16 TiB at `path` (ext4 stops one page short of it: then that).
int sparseHuge(const std::string& path) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0);
    if (ftruncate(fd, off_t{16} << 40) != 0) {
        EXPECT_EQ(errno, EFBIG);
        EXPECT_EQ(ftruncate(fd, (off_t{16} << 40) - static_cast<off_t>(pageSize())), 0);
    }
    return fd;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(PageCacheProbe, GivenNoCachestatAndA16TiBSparseFileWhenProbedThenAFixedSampleIsLookedAt) {
    WithoutCachestat fallback;
    TempDir tmp;
    int fd = sparseHuge(tmp / "huge");
    auto start = std::chrono::steady_clock::now();
    formats::CachedShare share = formats::cachedShare(fd, (uint64_t{16} << 40));
    double seconds = secondsSince(start);
    close(fd);
    EXPECT_EQ(share.looked, kSample);
    EXPECT_EQ(share.cached, 0u);
    EXPECT_LT(seconds, 1.0);
    std::printf("16 TiB sparse file probed with mincore in %.2f ms\n", seconds * 1e3);
}

TEST(PageCacheProbe, GivenNoCachestatAndA16TiBSparsePackedFileWhenOpenedThenItTakesBoundedTime) {
    WithoutCachestat fallback;
    TempDir tmp;
    std::string name = formats::packedImageName("amdgpu-drm-pages-1-128-0.img");
    close(sparseHuge(tmp / name));
    auto store = formats::openDirectoryStore(tmp.path());
    ASSERT_TRUE(store.ok()) << store.error().message();
    auto start = std::chrono::steady_clock::now();
    (*store)->readAhead(name, 64 << 20);
    auto reader = (*store)->openRead(name);
    double seconds = secondsSince(start);
    ASSERT_TRUE(reader.ok()) << reader.error().message();
    EXPECT_GE((*reader)->size(), (int64_t{16} << 40) - static_cast<int64_t>(pageSize()));
    EXPECT_LT(seconds, 1.0);
}

TEST(PageCacheProbe,
     GivenNoCachestatAndAFileLargerThanTheSampleWhenProbedThenItsCachedShareIsSeen) {
    WithoutCachestat fallback;
    TempDir tmp;
    uint64_t size = 3 * kSample * pageSize();
    int fd = open((tmp / "file").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    // Holes read back as zeros through the page cache: all of it cached.
    std::vector<char> buf(1 << 20);
    for (uint64_t at = 0; at < size; at += buf.size())
        ASSERT_EQ(pread(fd, buf.data(), buf.size(), static_cast<off_t>(at)),
                  static_cast<ssize_t>(buf.size()));
    formats::CachedShare all = formats::cachedShare(fd, size);
    ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    formats::CachedShare none = formats::cachedShare(fd, size);
    close(fd);
    EXPECT_EQ(all.looked, kSample);
    // This machine's proactive reclaim (DAMON) can take back a few of the 384 MiB read before
    // the probe runs: 32,763 of 32,768 sampled pages were cached in one run.
    EXPECT_GE(all.cached, kSample - kSample / 100);
    EXPECT_EQ(none.looked, kSample);
    EXPECT_LT(none.cached, kSample / 4);
}

TEST(PageCacheProbe, GivenNoCachestatAndASmallFileWhenProbedThenEveryPageIsLookedAtOnce) {
    WithoutCachestat fallback;
    TempDir tmp;
    uint64_t pages = formats::kProbeWindowPages + 5;
    int fd = open((tmp / "file").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(pages * pageSize() - 1)), 0);
    formats::CachedShare share = formats::cachedShare(fd, pages * pageSize() - 1);
    close(fd);
    EXPECT_EQ(share.looked, pages);
}

} // namespace

// Peak memory of content streaming is set by the staging buffer, not by the content size.
#include "hal/content_stream.h"

#include "content_fakes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kContent = 256 * kMiB;
constexpr uint64_t kStaging = 1 * kMiB;
constexpr uint64_t kAllowedGrowth = 8 * kMiB;

/// A "VmXxx:   1234 kB" line of /proc/self/status, in bytes (0 when absent).
uint64_t procStatusBytes(const std::string& key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0)
            return std::stoull(line.substr(key.size() + 1)) * 1024;
    return 0;
}

/// Resets VmHWM to the current RSS where the kernel allows it, so earlier tests in the same
/// process do not hide growth.
void resetPeakRss() {
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
}

TEST(ContentStreamMemory, Given256MiBThroughA1MiBBuffer_WhenDumped_ThenPeakRssGrowsByFewMiB) {
    resetPeakRss();
    const uint64_t hwmBefore = procStatusBytes("VmHWM");
    const uint64_t rssBefore = procStatusBytes("VmRSS");
    ASSERT_GT(hwmBefore, 0u);
    hal::StagingBuffer staging(kStaging);
    haltest::PatternSource source;
    haltest::CountingWriter writer;
    hal::Fnv1a64 digest;

    auto r = hal::dumpContents(source, kContent, writer, staging, &digest);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(writer.written(), kContent);
    EXPECT_EQ(writer.digest(), digest.value());
    EXPECT_LE(source.maxChunk(), kStaging);
    const uint64_t hwmAfter = procStatusBytes("VmHWM");
    const uint64_t rssAfter = procStatusBytes("VmRSS");
    EXPECT_LE(hwmAfter, hwmBefore + kAllowedGrowth)
        << "peak RSS grew from " << hwmBefore / kMiB << " MiB to " << hwmAfter / kMiB << " MiB";
    EXPECT_LE(rssAfter, rssBefore + kAllowedGrowth);
}

TEST(ContentStreamMemory, Given256MiBThroughA1MiBBuffer_WhenRestored_ThenPeakRssGrowsByFewMiB) {
    resetPeakRss();
    const uint64_t hwmBefore = procStatusBytes("VmHWM");
    ASSERT_GT(hwmBefore, 0u);
    hal::StagingBuffer staging(kStaging);
    haltest::PatternReader reader(kContent);
    haltest::PatternCheckSink sink;

    auto r = hal::restoreContents(reader, kContent, sink, staging);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(sink.received(), kContent);
    EXPECT_EQ(sink.mismatches(), 0u);
    EXPECT_LE(sink.maxChunk(), kStaging);
    const uint64_t hwmAfter = procStatusBytes("VmHWM");
    EXPECT_LE(hwmAfter, hwmBefore + kAllowedGrowth)
        << "peak RSS grew from " << hwmBefore / kMiB << " MiB to " << hwmAfter / kMiB << " MiB";
}

} // namespace

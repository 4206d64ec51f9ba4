// Peak memory of a content lane is set by its staging area, not by the content size.
#include "datapath/content_pipeline.h"

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

/// A lane over all of `staging`.
datapath::LaneOptions laneOver(content::StagingBuffer& staging) {
    datapath::LaneOptions o;
    o.gpu = "GPU 0x1";
    o.staging = staging.span();
    o.progressSeconds = -1;
    return o;
}

/// Hands the lane a writer the test keeps.
struct Borrowed : formats::ImageWriter {
    explicit Borrowed(formats::ImageWriter& w) : w_(w) {}
    base::Result<void> write(std::span<const std::byte> d) override { return w_.write(d); }
    base::Result<void> close() override { return w_.close(); }
    uint64_t written() const override { return w_.written(); }
    formats::ImageWriter& w_;
};

std::vector<std::unique_ptr<formats::ImageWriter>> kept_;

TEST(ContentLaneMemory, Given256MiBThroughA1MiBBuffer_WhenDumped_ThenPeakRssGrowsByFewMiB) {
    resetPeakRss();
    const uint64_t hwmBefore = procStatusBytes("VmHWM");
    const uint64_t rssBefore = procStatusBytes("VmRSS");
    ASSERT_GT(hwmBefore, 0u);
    content::StagingBuffer staging(kStaging);
    haltest::PatternSource source;
    haltest::CountingWriter* writer = nullptr;
    std::vector<datapath::DumpImage> images(1);
    images[0].name = "big.img";
    images[0].create = [&]() -> base::Result<std::unique_ptr<formats::ImageWriter>> {
        auto w = std::make_unique<haltest::CountingWriter>();
        writer = w.get();
        kept_.push_back(std::move(w));
        return std::unique_ptr<formats::ImageWriter>(new Borrowed(*writer));
    };
    images[0].pieces.push_back({&source, nullptr, kContent, "BO 0"});

    auto r = datapath::runDumpLane(images, laneOver(staging));

    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_NE(writer, nullptr);
    EXPECT_EQ(writer->written(), kContent);
    EXPECT_LE(source.maxChunk(), kStaging / datapath::kLaneSlots);
    const uint64_t hwmAfter = procStatusBytes("VmHWM");
    const uint64_t rssAfter = procStatusBytes("VmRSS");
    EXPECT_LE(hwmAfter, hwmBefore + kAllowedGrowth)
        << "peak RSS grew from " << hwmBefore / kMiB << " MiB to " << hwmAfter / kMiB << " MiB";
    EXPECT_LE(rssAfter, rssBefore + kAllowedGrowth);
}

TEST(ContentLaneMemory, Given256MiBThroughA1MiBBuffer_WhenRestored_ThenPeakRssGrowsByFewMiB) {
    resetPeakRss();
    const uint64_t hwmBefore = procStatusBytes("VmHWM");
    ASSERT_GT(hwmBefore, 0u);
    content::StagingBuffer staging(kStaging);
    haltest::PatternCheckSink sink;
    std::vector<datapath::RestoreImage> images(1);
    images[0].name = "big.img";
    images[0].open = []() -> base::Result<formats::FramedImage> {
        formats::FramedImage f;
        f.reader = std::make_unique<haltest::PatternReader>(kContent);
        return f;
    };
    images[0].pieces.push_back({nullptr, &sink, kContent, "BO 0"});

    auto r = datapath::runRestoreLane(images, laneOver(staging));

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(sink.received(), kContent);
    EXPECT_EQ(sink.mismatches(), 0u);
    EXPECT_LE(sink.maxChunk(), kStaging / datapath::kLaneSlots);
    const uint64_t hwmAfter = procStatusBytes("VmHWM");
    EXPECT_LE(hwmAfter, hwmBefore + kAllowedGrowth)
        << "peak RSS grew from " << hwmBefore / kMiB << " MiB to " << hwmAfter / kMiB << " MiB";
}

} // namespace

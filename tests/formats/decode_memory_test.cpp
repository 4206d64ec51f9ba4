// Peak memory of decoding a metadata image built to maximise it (issue 53): a render-node image
// of the most BO entries whose unpacked message still fits kMaxProtoUnpackedBytes, each entry the
// fewest bytes a reader accepts (a size and a handle, 6 bytes). Measured in a child process as
// the rise of its peak resident set (VmHWM, reset through /proc/self/clear_refs) over reading the
// image: the file's bytes, the unpacked message and the decoded entries, at once.

#include "formats/framed_image.h"
#include "formats/image_names.h"
#include "formats/image_store.h"
#include "formats/proto_image.h"
#include "formats/render_node_image.h"

#include "bounded_child.h"
#include "temp_dir.h"

#include "criu-amdgpu.pb-c.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DECODE_MEMORY_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DECODE_MEMORY_SANITIZED 1
#endif
#endif
/// A sanitizer's shadow memory and quarantine make the resident set no measure of the code's,
/// and its slowdown would outlast runBounded's 20 s: a sanitized build decodes an eighth of the
/// image (the same code, checked for its errors) and measures nothing.
#ifdef DECODE_MEMORY_SANITIZED
constexpr bool kMeasures = false;
#else
constexpr bool kMeasures = true;
#endif

/// A /proc/self/status field in KiB ("VmHWM", "VmRSS"); 0 when absent.
uint64_t statusKib(const std::string& field) {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with(field + ":"))
            return std::stoull(line.substr(field.size() + 1));
    return 0;
}

/// Resets this process's peak resident set to its current one (Linux 4.0+).
bool resetPeak() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    return static_cast<bool>(clear);
}

// The documented bound (README, "hostile checkpoints"; docs/security.md): a metadata image is
// read whole (at most kMaxProtoImageSize), unpacks into at most kMaxProtoUnpackedBytes, and its
// decoded entries take no more than the unpacked message: about 64 + 2 x 256 MiB at the worst.
TEST(DecodeMemory,
     GivenTheRenderNodeImageThatUnpacksIntoTheMost_WhenRead_ThenPeakMemoryStaysInBound) {
    testsupport::TempDir dir;
    std::string says = testsupport::runBounded([&]() -> std::string {
        auto store = formats::openDirectoryStore(dir.path());
        if (!store.ok())
            return store.error().message();
        // What unpacking allocates per entry (its struct, its pointer in bo_entries, protobuf-c's
        // scan records) comes to just under 256 bytes with protobuf-c 1.4 (240 is over the cap,
        // with 1 MiB left for the rest): the first size whose image unpacks is within a few
        // percent of the most entries.
        for (uint64_t perEntry : {256u, 288u, 320u, 384u}) {
            uint64_t entries = (formats::kMaxProtoUnpackedBytes - (1u << 20)) / perEntry;
            if (!kMeasures)
                entries /= 8;
            {
                std::string payload("\x08\x01", 2); // gpu_id 1
                payload.reserve(entries * 6 + 2);
                for (uint64_t i = 0; i < entries; ++i)
                    payload.append("\x2a\x04\x10\x01\x38\x01", 6); // size 1, handle 1
                std::string name = formats::renderNodeImageName(1);
                std::filesystem::remove(dir.path() + "/" + name);
                auto out = formats::createFramedImage(**store, name, payload.size());
                if (!out.ok())
                    return out.error().message();
                if (!(*out)->write(std::as_bytes(std::span(payload.data(), payload.size()))).ok() ||
                    !(*out)->close().ok())
                    return "could not write the image";
            }
            if (!resetPeak())
                return "no /proc/self/clear_refs";
            uint64_t before = statusKib("VmRSS");
            auto image = formats::readRenderNodeImage(**store, 1);
            uint64_t peak = statusKib("VmHWM");
            if (!image.ok() &&
                image.error().message().find("would unpack into more") != std::string::npos)
                continue;
            if (!image.ok())
                return image.error().message();
            if (image->bos.size() != entries)
                return "decoded " + std::to_string(image->bos.size()) + " BOs";
            return std::to_string(entries) + " entries, peak " +
                   std::to_string((peak - before) >> 10) + " MiB";
        }
        return "no image of these sizes unpacks within the cap";
    });
    std::printf("%s\n", says.c_str());
    uint64_t entries = 0, peakMib = 0;
    ASSERT_EQ(std::sscanf(says.c_str(), "%lu entries, peak %lu MiB", &entries, &peakMib), 2)
        << says;
    if (kMeasures) {
        EXPECT_GT(entries, 1000000u) << "the image is not the largest the cap allows";
        uint64_t bound = (formats::kMaxProtoImageSize + 2 * formats::kMaxProtoUnpackedBytes) >> 20;
        EXPECT_LE(peakMib, bound) << says;
    }
}

} // namespace

// The scratch buffers of packed files (formats/src/scratch_buffer.h): one written past the page
// cache and holding a frame starts on a huge page and is advised to be one (MADV_HUGEPAGE), so a
// frame's write reaches the device as one request; smaller ones start on a page, and a restore's
// (no alignment asked) are plain allocations without the advice.
#include "scratch_buffer.h"
#include "vm_flags.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

using testsupport::hasFlag;
using testsupport::vmFlagsAt;

TEST(ScratchBuffer,
     GivenAFrameWrittenPastThePageCache_ThenItsBufferStartsOnAHugePageAdvisedToBeOne) {
    formats::ScratchBuffer buffer(formats::kScratchAlign);
    std::span<std::byte> bytes = buffer.atLeast(formats::kHugePage + 4096);

    EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % formats::kHugePage, 0u);
    std::string flags = vmFlagsAt(bytes.data());
    ASSERT_FALSE(flags.empty()) << "no mapping holds the buffer in /proc/self/smaps";
    EXPECT_TRUE(hasFlag(flags, "hg")) << "VmFlags:" << flags;
    bytes[0] = std::byte{1};
    bytes[bytes.size() - 1] = std::byte{2}; // every byte is the buffer's
}

TEST(ScratchBuffer, GivenSmallerOrRestoreBuffers_ThenAPageOrMallocsOwnAlignmentAndNoAdvice) {
    formats::ScratchBuffer small(formats::kScratchAlign), restore;
    std::span<std::byte> a = small.atLeast(64 * 1024);
    std::span<std::byte> b = restore.atLeast(formats::kHugePage + 4096);

    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % formats::kScratchAlign, 0u);
    EXPECT_FALSE(hasFlag(vmFlagsAt(b.data()), "hg")) << "VmFlags:" << vmFlagsAt(b.data());
}

TEST(ScratchBuffer,
     GivenABufferGrownFromSmallToAFrame_ThenTheNewOneIsAlignedAndKeptForSmallerRequests) {
    formats::ScratchBuffer buffer(formats::kScratchAlign);
    buffer.atLeast(4096)[0] = std::byte{1};
    std::span<std::byte> grown = buffer.atLeast(formats::kHugePage * 2);

    EXPECT_EQ(grown.size(), formats::kHugePage * 2);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(grown.data()) % formats::kHugePage, 0u);
    EXPECT_EQ(buffer.atLeast(16).data(), grown.data()) << "a smaller request keeps the buffer";
}

} // namespace

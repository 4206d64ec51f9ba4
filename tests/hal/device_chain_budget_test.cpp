// The chunk records a whole restore may read (formats/image_chain.h kMaxChainBudget, 256 MiB) are
// one budget for the device, shared by the chains of every file: records of 16 MiB each (the
// most one may be) under sixteen file ids spend it, and the seventeenth is refused by it.
#include "mock_device.h"

#include "formats/chunk_map.h"
#include "formats/image_chain.h"
#include "formats/image_store.h"

#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

namespace {

using ::testing::HasSubstr;

TEST(DeviceChainBudget, GivenRecordsOfSeventeenFilesWhenLoadedThenTheSharedBudgetRefusesTheLast) {
    testsupport::TempDir tmp;
    constexpr uint32_t kFiles = formats::kMaxChainBudget / formats::kMaxChunkRecordBytes + 1;
    for (uint32_t id = 1; id <= kFiles; ++id) {
        std::string path = tmp / formats::chunkMapImageName(id);
        testsupport::writeFile(path, "");
        ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(formats::kMaxChunkRecordBytes)), 0);
    }
    auto store = formats::openDirectoryStore(tmp.path());
    ASSERT_TRUE(store.ok()) << store.error().message();
    settings::Settings settings;
    ::testing::NiceMock<haltest::MockDevice> dev(&settings, store->get());
    for (uint32_t id = 1; id < kFiles; ++id) {
        auto chain = dev.restoreChainOf(id);
        ASSERT_FALSE(chain.ok()) << id;
        EXPECT_THAT(chain.error().message(), HasSubstr("not an incremental chunk record")) << id;
    }
    auto last = dev.restoreChainOf(kFiles);
    ASSERT_FALSE(last.ok());
    EXPECT_THAT(last.error().message(), HasSubstr(formats::chunkMapImageName(kFiles)));
    EXPECT_THAT(last.error().message(), HasSubstr("than the 256 MiB a checkpoint's chains may "
                                                  "read in all"));
}

} // namespace

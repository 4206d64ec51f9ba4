// Protobuf images: 8-byte size header + payload; every malformed file is an Image error naming it.
#include "formats/proto_image.h"

#include "criu-amdgpu.pb-c.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace {

using base::ErrorCode;
using ::testing::HasSubstr;
using testsupport::TempDir;

std::string header(uint64_t len) {
    std::string h(sizeof(len), '\0');
    memcpy(h.data(), &len, sizeof(len));
    return h;
}

class ProtoImage : public ::testing::Test {
protected:
    void SetUp() override {
        auto s = formats::openDirectoryStore(dir_.path());
        ASSERT_TRUE(s.ok());
        store_ = std::move(*s);
    }
    base::Result<formats::UniqueProto<CriuKfd>> readKfd(const std::string& name) {
        return formats::readProtoImage<CriuKfd>(*store_, name, &criu_kfd__descriptor);
    }
    TempDir dir_;
    std::unique_ptr<formats::ImageStore> store_;
};

TEST_F(ProtoImage, GivenACriuKfdMessage_WhenWrittenAndRead_ThenEveryFieldSurvives) {
    CriuKfd msg;
    criu_kfd__init(&msg);
    msg.has_pid = true;
    msg.pid = 4242;
    msg.has_num_of_bos = true;
    msg.num_of_bos = 3;
    uint8_t priv[] = {1, 2, 3, 4, 5};
    msg.has_priv_data = true;
    msg.priv_data.len = sizeof priv;
    msg.priv_data.data = priv;
    ASSERT_TRUE(formats::writeProtoImage(*store_, "amdgpu-kfd-1.img", &msg.base).ok());

    auto r = readKfd("amdgpu-kfd-1.img");

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE((*r)->has_pid);
    EXPECT_EQ((*r)->pid, 4242u);
    EXPECT_EQ((*r)->num_of_bos, 3u);
    ASSERT_EQ((*r)->priv_data.len, sizeof priv);
    EXPECT_EQ(memcmp((*r)->priv_data.data, priv, sizeof priv), 0);
    EXPECT_FALSE((*r)->has_shared_mem_size);
}

TEST_F(ProtoImage, GivenAWrittenImage_WhenItsBytesAreInspected_ThenTheyAreHeaderThenPayload) {
    CriuKfd msg;
    criu_kfd__init(&msg);
    msg.has_pid = true;
    msg.pid = 1;
    ASSERT_TRUE(formats::writeProtoImage(*store_, "k.img", &msg.base).ok());

    std::string bytes = testsupport::readFile(dir_ / "k.img");

    size_t packed = criu_kfd__get_packed_size(&msg);
    ASSERT_EQ(bytes.size(), 8 + packed);
    EXPECT_EQ(bytes.substr(0, 8), header(packed));
}

TEST_F(ProtoImage, GivenAFileShorterThanTheHeader_WhenRead_ThenImageErrorNamingTheFile) {
    testsupport::writeFile(dir_ / "short.img", "abc");

    auto r = readKfd("short.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("short.img"));
    EXPECT_THAT(r.error().describe(), HasSubstr("size header"));
}

TEST_F(ProtoImage, GivenAHeaderLargerThanThePayload_WhenRead_ThenImageErrorWithBothSizes) {
    testsupport::writeFile(dir_ / "trunc.img", header(100) + std::string(10, '\0'));

    auto r = readKfd("trunc.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("trunc.img"));
    EXPECT_THAT(r.error().describe(), HasSubstr("100"));
    EXPECT_THAT(r.error().describe(), HasSubstr("10"));
}

TEST_F(ProtoImage, GivenAHeaderSmallerThanThePayload_WhenRead_ThenImageError) {
    testsupport::writeFile(dir_ / "long.img", header(2) + std::string(10, '\0'));

    auto r = readKfd("long.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("long.img"));
}

TEST_F(ProtoImage, GivenAHeaderAboveTheLimit_WhenRead_ThenImageErrorWithoutAllocating) {
    testsupport::writeFile(dir_ / "huge.img", header(formats::kMaxProtoImageSize + 1));

    auto r = readKfd("huge.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("huge.img"));
}

TEST_F(ProtoImage, GivenAGarbagePayload_WhenRead_ThenImageErrorNamingFileAndMessage) {
    testsupport::writeFile(dir_ / "garbage.img", header(16) + std::string(16, '\xff'));

    auto r = readKfd("garbage.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("garbage.img"));
    EXPECT_THAT(r.error().describe(), HasSubstr("criu_kfd"));
}

TEST_F(ProtoImage, GivenAMissingImage_WhenRead_ThenNotFound) {
    auto r = readKfd("absent.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotFound);
}

TEST(ProtoImageStream, GivenAStreamTruncatedInThePayload_WhenRead_ThenImageErrorNamingTheFile) {
    // A pipe has no size: only reading tells the payload is short.
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::string bytes = header(100) + std::string(10, '\0');
    ASSERT_EQ(write(fds[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fds[1]);
    auto store = formats::makeStreamerStore([&](const std::string&, bool) { return fds[0]; },
                                            formats::StreamDirection::Restore);

    auto r = formats::readProtoImage<CriuKfd>(*store, "piped.img", &criu_kfd__descriptor);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("piped.img"));
    EXPECT_THAT(r.error().describe(), HasSubstr("truncated"));
}

} // namespace

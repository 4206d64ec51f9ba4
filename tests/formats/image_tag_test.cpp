// Image tags (formats/image_tag.h, issue 52 item 2): an encrypted checkpoint's metadata is
// authenticated under its key, bound to its name and its checkpoint.

#include "formats/image_tag.h"
#include "formats/render_node_image.h"

#include "sealed_fixture.h"

#include <gmock/gmock.h>

namespace {

namespace fs = std::filesystem;
using sealedtest::fileBytes;
using sealedtest::putFileBytes;
using testing::HasSubstr;

struct ImageTags : sealedtest::Sealed {
    formats::RenderNodeImage image(uint32_t id) {
        formats::RenderNodeImage i;
        i.gpuId = 0x1234;
        i.id = id;
        i.renderMinor = 128;
        formats::DrmBoEntry bo;
        bo.size = 4096;
        bo.handle = 7;
        bo.vms.push_back({0x100000, 4096, 0, 0});
        i.bos.push_back(bo);
        return i;
    }
    /// Dumps render-node images `ids` into `path` under a key of its own.
    void dump(const std::string& path, std::initializer_list<uint32_t> ids) {
        fs::create_directories(path);
        auto s = store(path, dumping());
        for (uint32_t id : ids) {
            auto written = formats::writeRenderNodeImage(*s, image(id));
            ASSERT_TRUE(written.ok()) << written.error().describe();
        }
    }
    /// Reads render-node image `id` of `dir` with the private key.
    base::Result<formats::RenderNodeImage> read(uint32_t id, bool allowPlaintext = false) {
        formats::SealOptions options = restoring(keys.privateKey);
        options.allowPlaintext = allowPlaintext;
        auto s = store(dir, options);
        return formats::readRenderNodeImage(*s, id);
    }
    std::string path(uint32_t id) const { return dir + "/" + formats::renderNodeImageName(id); }
    std::string tagPath(uint32_t id) const {
        return dir + "/" + formats::imageTagName(formats::renderNodeImageName(id));
    }
};

TEST(ImageTagName, GivenImageNames_ThenTheTagsNameKeepsTheDirectoryAndMarksItOurs) {
    EXPECT_EQ(formats::imageTagName("amdgpu-renderD-5.img"), "amdgpu-tag-renderD-5.img");
    EXPECT_EQ(formats::imageTagName("../ck1/amdgpu-chunks-5.img"),
              "../ck1/amdgpu-tag-chunks-5.img");
    EXPECT_EQ(formats::imageTagName("k.img"), "amdgpu-tag-k.img");
}

TEST_F(ImageTags, GivenAnEncryptedDump_WhenItsMetadataIsRead_ThenItsTagVerifies) {
    ASSERT_NO_FATAL_FAILURE(dump(dir, {1}));
    EXPECT_EQ(fileBytes(tagPath(1)).size(), 40u);
    auto got = read(1);
    ASSERT_TRUE(got.ok()) << got.error().describe();
    EXPECT_EQ(got->bos.at(0).handle, 7u);
}

TEST_F(ImageTags, GivenAnUnencryptedDump_ThenNoTagIsWritten) {
    auto s = store(dir, {});
    ASSERT_TRUE(formats::writeRenderNodeImage(*s, image(1)).ok());
    EXPECT_FALSE(fs::exists(tagPath(1)));
}

TEST_F(ImageTags, GivenAByteOfTheMetadataChanged_WhenRead_ThenRefusedNamingTheImageAndTag) {
    ASSERT_NO_FATAL_FAILURE(dump(dir, {1}));
    std::string bytes = fileBytes(path(1));
    bytes.back() = static_cast<char>(bytes.back() ^ 1);
    putFileBytes(path(1), bytes);
    auto got = read(1);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().code(), base::ErrorCode::Image);
    EXPECT_THAT(got.error().describe(),
                HasSubstr("amdgpu-renderD-1.img: does not match its tag amdgpu-tag-renderD-1.img"));
}

// An image and its tag copied under another image's name: the tag binds the name.
TEST_F(ImageTags, GivenAnImageAndItsTagUnderAnotherName_WhenRead_ThenRefused) {
    ASSERT_NO_FATAL_FAILURE(dump(dir, {1}));
    fs::copy_file(path(1), path(2));
    fs::copy_file(tagPath(1), tagPath(2));
    auto got = read(2);
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.error().describe(), HasSubstr("does not match its tag"));
}

// An image and its tag from another checkpoint made with the same certificate: the tag is under
// that checkpoint's key, not this one's.
TEST_F(ImageTags, GivenAnImageAndItsTagFromAnotherCheckpoint_WhenRead_ThenRefused) {
    ASSERT_NO_FATAL_FAILURE(dump(dir, {1}));
    std::string other = root / "other";
    ASSERT_NO_FATAL_FAILURE(dump(other, {2}));
    fs::copy_file(other + "/" + formats::renderNodeImageName(2), path(2));
    fs::copy_file(other + "/" + formats::imageTagName(formats::renderNodeImageName(2)), tagPath(2));
    auto got = read(2);
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.error().describe(), HasSubstr("amdgpu-renderD-2.img: does not match its tag"));
}

TEST_F(ImageTags, GivenTheTagRemoved_WhenRead_ThenRefusedUnlessPlaintextIsAllowed) {
    ASSERT_NO_FATAL_FAILURE(dump(dir, {1}));
    fs::remove(tagPath(1));
    auto refused = read(1);
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().describe(),
                HasSubstr("amdgpu-renderD-1.img: its tag amdgpu-tag-renderD-1.img is missing"));
    EXPECT_THAT(refused.error().describe(), HasSubstr("content-allow-plaintext"));
    EXPECT_TRUE(read(1, true).ok());
}

TEST_F(ImageTags, GivenATagFileOfAnotherVersionOrLength_WhenRead_ThenRefusedNamingIt) {
    ASSERT_NO_FATAL_FAILURE(dump(dir, {1}));
    std::string tag = fileBytes(tagPath(1));
    std::string versioned = tag;
    versioned[4] = 2;
    putFileBytes(tagPath(1), versioned);
    auto got = read(1);
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.error().describe(), HasSubstr("amdgpu-tag-renderD-1.img: version 2"));
    putFileBytes(tagPath(1), tag + "x");
    got = read(1);
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.error().describe(), HasSubstr("amdgpu-tag-renderD-1.img: bytes after its tag"));
}

// A node without the private key checks nothing (it cannot open the contents either), as
// `image show` reads a checkpoint.
TEST_F(ImageTags, GivenNoPrivateKey_WhenRead_ThenTheMetadataIsReadUnchecked) {
    ASSERT_NO_FATAL_FAILURE(dump(dir, {1}));
    fs::remove(tagPath(1));
    auto s = store(dir, {});
    EXPECT_TRUE(formats::readRenderNodeImage(*s, 1).ok());
}

} // namespace

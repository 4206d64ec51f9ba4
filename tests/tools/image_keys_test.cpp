// criu-amdgpu image verify and check with a private key (issue 52): every frame of an encrypted
// contents file is authenticated whether or not its image records a checksum, a sealed file
// without one is a problem, and a checkpoint in the clear (CRIU's pages files, no key image) is
// refused where a key is given unless content-allow-plaintext says otherwise.
#include "image_fixtures.h"
#include "run_tool.h"
#include "temp_dir.h"
#include "test_keys.h"

#include "formats/chunk_codec.h"
#include "formats/content_keys.h"
#include "formats/packed_image.h"
#include "formats/render_node_image.h"
#include "formats/seal_image.h"
#include "formats/topology_codec.h"
#include "topology/synth.h"
#include "topology/sysfs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace {

using json = nlohmann::json;
using testing::HasSubstr;
using tooltest::RunResult;
using tooltest::runTool;
using namespace imagetest;

/// A render-node checkpoint whose one BO (3 MiB: two frames) is sealed with aes-256-gcm.
class SealedCheckpoint : public ::testing::Test {
protected:
    /// Writes it; `checksum`: the image records the contents' keyed checksum, as a dump does.
    void write(bool checksum) {
        auto store = formats::openDirectoryStore(images_);
        ASSERT_TRUE(store.ok());
        (*store)->contentKeys().configure({formats::Cipher::Aes256Gcm, keys_.certificate, ""});
        ASSERT_TRUE(
            formats::writeTopologyImage(**store, topology::makeSyntheticTopology(twoGpus())).ok());
        auto out = formats::createContentsImage(**store, packed_, data_.size(), {});
        ASSERT_TRUE(out.ok()) << out.error().describe();
        ASSERT_TRUE((*out)->write(std::as_bytes(std::span(data_.data(), data_.size()))).ok());
        ASSERT_TRUE((*out)->close().ok());
        formats::RenderNodeImage r;
        r.id = kRenderId;
        r.gpuId = kGpuB;
        r.renderMinor = kRenderMinor;
        formats::DrmBoEntry bo;
        bo.handle = 1;
        bo.size = data_.size();
        bo.preferredDomains = 4; // VRAM
        bo.vms.push_back({0x100000, bo.size, 0, 0});
        if (checksum)
            bo.checksum = content::ContentChecksum{content::DigestKind::Xxh3_64,
                                                   (*out)->keyedChecksum(checksumOf(data_).value)};
        r.bos.push_back(bo);
        ASSERT_TRUE(formats::writeRenderNodeImage(**store, r).ok());
    }
    RunResult verify() {
        return runTool({"image", "verify", "--json", images_, "--key", keys_.privateKey});
    }

    testsupport::TempDir dir_;
    testsupport::KeyFiles keys_ = testsupport::writeTestKeys(dir_.path());
    std::string images_ = [this] {
        std::filesystem::create_directories(dir_ / "img");
        return dir_ / "img";
    }();
    std::string packed_ =
        formats::packedImageName(formats::drmPagesImageName(kRenderId, kRenderMinor, 0));
    std::string data_ = bytesOf(3u << 20, 3);
};

TEST_F(SealedCheckpoint, VerifyWithTheKeyPassesASealedCheckpointThatRecordsItsChecksums) {
    write(true);
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_EQ(json::parse(r.out)["verdict"], "sound") << r.out;
}

// The metadata records no checksum: verify still opens every frame, and names the one that does
// not authenticate; untampered, the missing checksum is itself the problem.
TEST_F(SealedCheckpoint, VerifyWithTheKeyOpensEveryFrameWhenNoChecksumIsRecorded) {
    write(false);
    // A bit of the second frame's ciphertext, past the first frame (stored raw and sealed).
    long second = 8 + formats::kSealHeader + formats::kFrameHeader + formats::kPackedFrameRaw +
                  formats::kTagBytes;
    ASSERT_TRUE(
        testsupport::flipByte(images_ + "/" + packed_, second + formats::kSealHeader + 500));
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    json j = json::parse(r.out);
    EXPECT_EQ(j["verdict"], "damaged");
    std::string problems = j["problems"].dump();
    EXPECT_THAT(problems, HasSubstr("frame 1")) << problems;
    EXPECT_THAT(problems, HasSubstr("does not authenticate")) << problems;

    write(false);
    r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    problems = json::parse(r.out)["problems"].dump();
    EXPECT_THAT(problems, HasSubstr("records no checksum")) << problems;
}

/// The KFD checkpoint of image_fixtures.h: CRIU's pages files, in the clear, no key image.
class ClearKfdCheckpoint : public ::testing::Test {
protected:
    void SetUp() override {
        writeKfdCheckpointIn(images_);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_TRUE(
            topology::writeKfdTopology(topology::makeSyntheticTopology(twoGpus()), dir_ / "same")
                .ok());
    }
    testsupport::TempDir dir_;
    testsupport::KeyFiles keys_ = testsupport::writeTestKeys(dir_.path());
    std::string images_ = [this] {
        std::filesystem::create_directories(dir_ / "img");
        return dir_ / "img";
    }();
};

TEST_F(ClearKfdCheckpoint, WithAKeyVerifyAndCheckRefuseItNamingTheKeyImageAndTheOption) {
    RunResult v = runTool({"image", "verify", images_, "--key", keys_.privateKey});
    EXPECT_EQ(v.exitCode, 2) << v.describe();
    EXPECT_THAT(v.out, HasSubstr("amdgpu-seal.img is missing"));
    EXPECT_THAT(v.out, HasSubstr("content-allow-plaintext"));
    // The key from the options, as the plugin reads it.
    RunResult c =
        runTool({"image", "check", "--topology", dir_ / "same", images_},
                tooltest::cleanEnv({{"CRIU_AMDGPU_CONTENT_PRIVATE_KEY", keys_.privateKey}}));
    EXPECT_EQ(c.exitCode, 2) << c.describe();
    EXPECT_THAT(c.out, HasSubstr("amdgpu-seal.img is missing"));
    EXPECT_THAT(c.out, HasSubstr("would NOT restore"));
    // Allowed in the clear: both pass, as without a key.
    auto plain = tooltest::cleanEnv({{"CRIU_AMDGPU_CONTENT_ALLOW_PLAINTEXT", "true"}});
    v = runTool({"image", "verify", images_, "--key", keys_.privateKey}, plain);
    EXPECT_EQ(v.exitCode, 0) << v.describe();
    c = runTool({"image", "check", "--topology", dir_ / "same", images_, "--key", keys_.privateKey},
                plain);
    EXPECT_EQ(c.exitCode, 0) << c.describe();
    v = runTool({"image", "verify", images_});
    EXPECT_EQ(v.exitCode, 0) << v.describe();
}

} // namespace

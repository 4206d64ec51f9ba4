// criu-amdgpu image sign, and image verify and image check under the option
// trusted-certificates, run as a process on a checkpoint directory of the kfd backend's images
// and files named as criu's: a signed directory is accepted; an unsigned one, one signed by a
// stranger, and one with a file of criu's or ours changed, a file added or removed, is refused
// naming it (exit 2). Without the option, signatures are not looked at.
#include "image_fixtures.h"
#include "run_tool.h"
#include "temp_dir.h"
#include "test_keys.h"

#include "topology/synth.h"
#include "topology/sysfs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace {

using testing::HasSubstr;
using testing::Not;
using tooltest::RunResult;
using tooltest::runTool;

using namespace imagetest;

class SignedCheckpoint : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(images_);
        auto store = formats::openDirectoryStore(images_);
        ASSERT_TRUE(store.ok());
        writeKfdCheckpoint(**store);
        testsupport::writeFile(images_ + "/pages-1.img", bytesOf(8192, 3)); // criu's
        testsupport::writeFile(images_ + "/core-4242.img", bytesOf(300, 9));
        ASSERT_TRUE(
            topology::writeKfdTopology(topology::makeSyntheticTopology(twoGpus()), dir_ / "same")
                .ok());
        std::filesystem::create_directories(dir_ / "keys");
        node_ = testsupport::writeTestKeys(dir_ / "keys", 0, "node");
        stranger_ = testsupport::writeTestKeys(dir_ / "keys", 1, "stranger");
    }
    RunResult sign(const testsupport::KeyFiles& k) {
        return runTool({"image", "sign", images_, "--key", k.privateKey, "--cert", k.certificate});
    }
    tooltest::Env trusting() {
        return tooltest::cleanEnv({{"CRIU_AMDGPU_TRUSTED_CERTIFICATES", node_.certificate}});
    }
    RunResult verify() { return runTool({"image", "verify", images_}, trusting()); }
    RunResult check() {
        return runTool({"image", "check", "--topology", dir_ / "same", images_}, trusting());
    }
    /// Verify and check both refuse, verify naming `what`.
    void expectRefused(const std::string& what) {
        RunResult v = verify();
        EXPECT_EQ(v.exitCode, 2) << v.describe();
        EXPECT_THAT(v.out, HasSubstr(what));
        RunResult c = check();
        EXPECT_EQ(c.exitCode, 2) << c.describe();
        EXPECT_THAT(c.out, HasSubstr("not a checkpoint the option trusted-certificates accepts"));
        EXPECT_THAT(c.out, HasSubstr(what));
    }

    testsupport::TempDir dir_;
    std::string images_ = dir_ / "img";
    testsupport::KeyFiles node_, stranger_;
};

TEST_F(SignedCheckpoint, ASignedCheckpointVerifiesAndWouldRestore) {
    RunResult s = sign(node_);
    ASSERT_EQ(s.exitCode, 0) << s.describe();
    EXPECT_THAT(s.out, HasSubstr("with RSA-PSS with SHA-256 (SHA-256 fingerprint "));
    EXPECT_THAT(s.out, HasSubstr(": 5 files, "));
    RunResult v = verify();
    EXPECT_EQ(v.exitCode, 0) << v.describe();
    EXPECT_THAT(v.out, HasSubstr("signed by a trusted certificate"));
    RunResult c = check();
    EXPECT_EQ(c.exitCode, 0) << c.describe();
    EXPECT_THAT(c.out, HasSubstr("\nwould restore\n"));
    // image show does not call the manifest left over.
    RunResult show = runTool({"image", "show", images_});
    EXPECT_THAT(show.out, Not(HasSubstr("left over: amdgpu-manifest.img")));
}

TEST_F(SignedCheckpoint, AnUnsignedCheckpointIsRefused) {
    expectRefused("amdgpu-manifest.img: missing: the checkpoint is not signed");
    // Without the option nothing asks for a signature.
    RunResult v = runTool({"image", "verify", images_});
    EXPECT_EQ(v.exitCode, 0) << v.describe();
}

TEST_F(SignedCheckpoint, AStrangersSignatureIsRefused) {
    ASSERT_EQ(sign(stranger_).exitCode, 0);
    expectRefused("signed by a certificate that is not trusted");
}

TEST_F(SignedCheckpoint, AChangedImageOfCriusIsNamed) {
    ASSERT_EQ(sign(node_).exitCode, 0);
    ASSERT_TRUE(testsupport::flipByte(images_ + "/pages-1.img", 4000));
    expectRefused("pages-1.img: changed since the checkpoint was signed (its SHA-256 differs)");
}

TEST_F(SignedCheckpoint, AChangedImageOfOursIsNamed) {
    ASSERT_EQ(sign(node_).exitCode, 0);
    std::string ours = formats::kfdPagesImageName(kKfdId, kGpuA);
    ASSERT_TRUE(testsupport::flipByte(images_ + "/" + ours, 100));
    expectRefused(ours + ": changed since the checkpoint was signed");
}

TEST_F(SignedCheckpoint, AFileAddedOrRemovedIsNamed) {
    ASSERT_EQ(sign(node_).exitCode, 0);
    testsupport::writeFile(images_ + "/fs-4242.img", "added");
    ASSERT_EQ(unlink((images_ + "/core-4242.img").c_str()), 0);
    expectRefused("core-4242.img: removed after the checkpoint was signed; fs-4242.img: added "
                  "after the checkpoint was signed");
}

TEST_F(SignedCheckpoint, SignTakesTheOptionsAndNamesWhatIsMissing) {
    RunResult none = runTool({"image", "sign", images_});
    EXPECT_EQ(none.exitCode, 1) << none.describe();
    EXPECT_THAT(none.err, HasSubstr("give the signing key and its certificate"));
    RunResult mismatched = runTool(
        {"image", "sign", images_, "--key", node_.privateKey, "--cert", stranger_.certificate});
    EXPECT_EQ(mismatched.exitCode, 1) << mismatched.describe();
    EXPECT_THAT(mismatched.err, HasSubstr("is not the key of checkpoint-signing-certificate"));
    RunResult fromOptions = runTool(
        {"image", "sign", images_},
        tooltest::cleanEnv({{"CRIU_AMDGPU_CHECKPOINT_SIGNING_KEY", node_.privateKey},
                            {"CRIU_AMDGPU_CHECKPOINT_SIGNING_CERTIFICATE", node_.certificate}}));
    EXPECT_EQ(fromOptions.exitCode, 0) << fromOptions.describe();
    EXPECT_EQ(verify().exitCode, 0);
}

} // namespace

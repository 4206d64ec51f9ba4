// criu-amdgpu image show / verify / check, run as a process on checkpoint directories written by
// the project's own image writers: the kfd backend's (kfd::writeKfdImage, pages files with
// recorded checksums) and the render-node backends' (formats::writeRenderNodeImage, per-BO contents
// files, amdgpu-topology.img, dma-buf images). Images of CRIU's own plugin: tests/compat.
#include "image_fixtures.h"
#include "run_tool.h"
#include "temp_dir.h"

#include "formats/image_names.h"
#include "topology/synth.h"
#include "topology/sysfs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace {

using nlohmann::json;
using testing::HasSubstr;
using tooltest::RunResult;
using tooltest::runTool;

using namespace imagetest;

/// A KFD checkpoint as the kfd backend writes it: one process on two GPUs, a VRAM and a GTT BO
/// on GPU A, a VRAM BO on GPU B, a userptr BO (no contents file), checksums recorded.
class KfdCheckpoint : public ::testing::Test {
protected:
    void SetUp() override {
        writeKfdCheckpointIn(images_);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_TRUE(
            topology::writeKfdTopology(topology::makeSyntheticTopology(twoGpus()), dir_ / "same")
                .ok());
        ASSERT_TRUE(topology::writeKfdTopology(topology::makeSyntheticTopology(twoGpus(1ull << 30)),
                                               dir_ / "small")
                        .ok());
    }

    testsupport::TempDir dir_;
    std::string images_ = [this] {
        std::filesystem::create_directories(dir_ / "img");
        return dir_ / "img";
    }();
    std::string pagesA_ = formats::kfdPagesImageName(kKfdId, kGpuA);
};

TEST_F(KfdCheckpoint, ShowJsonDecodesTheProcessItsGpusAndBos) {
    RunResult r = runTool({"image", "show", "--json", images_});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    json j = json::parse(r.out);
    ASSERT_EQ(j["processes"].size(), 1u) << r.out;
    const json& p = j["processes"][0];
    EXPECT_EQ(p["pid"], 4242);
    EXPECT_EQ(p["writer"]["backend"], "kfd");
    EXPECT_THAT(p["writer"]["generation"].get<std::string>(), HasSubstr("criu-amdgpu"));
    EXPECT_EQ(p["kernel_objects"], 3);
    ASSERT_EQ(p["gpus"].size(), 2u);
    EXPECT_EQ(p["gpus"][0]["gpu_id"], kGpuA);
    EXPECT_EQ(p["gpus"][1]["properties"]["device_id"], 0x740f);
    EXPECT_EQ(p["gpus"][0]["vram_bytes"], 64ull << 30);
    ASSERT_EQ(p["bos"].size(), 4u);
    EXPECT_EQ(p["bos"][1]["domain"], "GTT");
    EXPECT_EQ(p["bos"][2]["domain"], "USERPTR");
    EXPECT_EQ(p["bos"][3]["va"], 0x7f0000300000ull);
    EXPECT_EQ(p["bos"][3]["gpu_id"], kGpuB);
    ASSERT_EQ(j["contents_files"].size(), 2u);
    EXPECT_EQ(j["contents_files"][0]["bytes"], 12288);
    EXPECT_TRUE(j["missing"].empty());
    EXPECT_TRUE(j["leftover"].empty());
}

TEST_F(KfdCheckpoint, ShowTextNamesMissingAndLeftOverFiles) {
    std::filesystem::rename(images_ + "/" + pagesA_, images_ + "/amdgpu-pages-9-dead.img");
    RunResult r = runTool({"image", "show", images_});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out,
                HasSubstr("process 4242 (amdgpu-kfd-5.img): 2 GPU(s), 1 CPU node(s), 4 BO(s)"));
    EXPECT_THAT(r.out, HasSubstr("missing: " + pagesA_ + " (called for by amdgpu-kfd-5.img)"));
    EXPECT_THAT(r.out, HasSubstr("left over: amdgpu-pages-9-dead.img"));
}

// Names that only look like image names (an id past 32 bits, leading zeros) are left-over files,
// not images, and never stop the tool (an id past 32 bits once threw out of std::stoul).
TEST_F(KfdCheckpoint, ShowTreatsNamesThatAreNotCriusAsLeftOver) {
    for (const char* name : {"amdgpu-kfd-99999999999999999999.img", "amdgpu-kfd-005.img"})
        testsupport::writeFile(images_ + "/" + name, "x");
    RunResult r = runTool({"image", "show", images_});
    EXPECT_EQ(r.exitCode, 0) << r.describe(); // left-over files alone are no fault
    EXPECT_THAT(r.out, HasSubstr("left over: amdgpu-kfd-99999999999999999999.img"));
    EXPECT_THAT(r.out, HasSubstr("left over: amdgpu-kfd-005.img"));
    EXPECT_THAT(r.out, HasSubstr("process 4242 (amdgpu-kfd-5.img)"));
}

TEST_F(KfdCheckpoint, VerifyOfASoundCheckpointExitsZero) {
    RunResult r = runTool({"image", "verify", images_});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out,
                HasSubstr("2 contents file(s) checked (2 with a recorded checksum): all sound"));
}

TEST_F(KfdCheckpoint, VerifyNamesAFlippedByteByTheChecksumItBreaks) {
    ASSERT_TRUE(testsupport::flipByte(images_ + "/" + pagesA_, 9000));
    RunResult r = runTool({"image", "verify", images_});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out,
                HasSubstr(pagesA_ + ": at offset 8: the contents do not match the checksum"));
    EXPECT_THAT(r.out, HasSubstr("to offset 12295"));
}

TEST_F(KfdCheckpoint, VerifyNamesTheOffsetWhereACutFileEnds) {
    std::filesystem::resize_file(images_ + "/" + pagesA_, 5000);
    RunResult r = runTool({"image", "verify", "--json", images_});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    json j = json::parse(r.out);
    ASSERT_EQ(j["problems"].size(), 1u) << r.out;
    EXPECT_EQ(j["problems"][0]["file"], pagesA_);
    EXPECT_EQ(j["problems"][0]["offset"], 5000);
    EXPECT_THAT(j["problems"][0]["what"].get<std::string>(), HasSubstr("BO 0 (bytes 8..8199"));
}

TEST_F(KfdCheckpoint, VerifyNamesAWrongSizeHeaderAtOffsetZero) {
    ASSERT_TRUE(testsupport::flipByte(images_ + "/" + pagesA_, 1));
    RunResult r = runTool({"image", "verify", images_});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr(pagesA_ + ": at offset 0: the size header says"));
}

TEST_F(KfdCheckpoint, VerifyOfAnUndecodableImageExitsTwo) {
    testsupport::writeFile(images_ + "/amdgpu-kfd-5.img", "garbage");
    RunResult r = runTool({"image", "verify", images_});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("amdgpu-kfd-5.img: cannot be decoded"));
}

TEST_F(KfdCheckpoint, CheckAgainstTheSameTreeWouldRestore) {
    RunResult r = runTool({"image", "check", "--topology", dir_ / "same", images_});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("0x1000 -> 0x1000: VRAM 65536 -> 65536 MiB"));
    EXPECT_THAT(r.out, HasSubstr("\nwould restore\n"));
}

TEST_F(KfdCheckpoint, CheckAgainstLessVramWouldNotAndNamesTheOption) {
    RunResult r = runTool({"image", "check", "--topology", dir_ / "small", "--json", images_});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    json j = json::parse(r.out);
    EXPECT_FALSE(j["would_restore"]);
    ASSERT_EQ(j["sources"].size(), 1u);
    std::string reasons = j["sources"][0]["reasons"].dump();
    EXPECT_THAT(reasons, HasSubstr("VRAM")) << reasons;
    EXPECT_THAT(reasons, HasSubstr("KFD_VRAM_SIZE_CHECK")) << reasons;
}

TEST_F(KfdCheckpoint, CheckHonoursTheEnvironmentLikeThePlugin) {
    RunResult r = runTool({"image", "check", "--topology", dir_ / "small", images_},
                          tooltest::cleanEnv({{"KFD_VRAM_SIZE_CHECK", "0"}}));
    EXPECT_EQ(r.exitCode, 0) << r.describe();
}

// The new pod's view: `--dev` names a directory holding what its /dev holds; only GPUs whose
// render node is there are candidates.
TEST_F(KfdCheckpoint, CheckWithAPodGivenBothGpusWouldRestore) {
    std::filesystem::create_directories(dir_ / "pod/dri");
    for (const char* node : {"pod/kfd", "pod/dri/renderD128", "pod/dri/renderD129"})
        testsupport::writeFile(dir_ / node, "");
    RunResult r =
        runTool({"image", "check", "--topology", dir_ / "same", "--dev", dir_ / "pod", images_});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
}

TEST_F(KfdCheckpoint, CheckWithAPodGivenOneOfTwoGpusNamesTheNodeItLacks) {
    std::filesystem::create_directories(dir_ / "pod/dri");
    for (const char* node : {"pod/kfd", "pod/dri/renderD129"})
        testsupport::writeFile(dir_ / node, "");
    RunResult r =
        runTool({"image", "check", "--topology", dir_ / "same", "--dev", dir_ / "pod", images_});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("the destination has only 1 usable GPUs"));
    EXPECT_THAT(r.out, HasSubstr("can open only 0x1111 (renderD129) of the 2 GPUs"));
    EXPECT_THAT(r.out, HasSubstr("--dev " + (dir_ / "pod")));
    EXPECT_THAT(r.out, HasSubstr("not given the device nodes of 0x1000 (renderD128)"));
}

TEST(ImageCommands, BadInputExitsOne) {
    testsupport::TempDir dir;
    RunResult r = runTool({"image", "show", dir / "nope"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("is not a directory"));
    r = runTool({"image", "verify", dir.path()});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("no amdgpu image in"));
    testsupport::writeFile(dir / "amdgpu-topology.img", std::string(8, '\0'));
    r = runTool({"image", "check", "--topology", dir / "none", dir.path()});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("--topology"));
}

/// A render-node checkpoint as the amdgpu-drm backend writes it: amdgpu-topology.img, one render
/// node with three BOs (one imported, one exported as a dma-buf), per-BO contents files.
TEST(RenderCheckpoint, ShowAndVerifyReadTheRenderNodeBackendsImages) {
    testsupport::TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    writeRenderCheckpoint(**store);
    ASSERT_FALSE(HasFatalFailure());

    RunResult show = runTool({"image", "show", "--json", dir.path()});
    ASSERT_EQ(show.exitCode, 0) << show.describe();
    json j = json::parse(show.out);
    ASSERT_EQ(j["render_nodes"].size(), 1u);
    const json& n = j["render_nodes"][0];
    EXPECT_EQ(n["writer"]["backend"], "amdgpu-drm");
    EXPECT_EQ(n["bos"][0]["domains"], "VRAM");
    EXPECT_EQ(n["bos"][0]["exported_as"], json::array({"amdgpu-dmabuf_9.img"}));
    EXPECT_EQ(n["bos"][1]["imported"], true);
    EXPECT_EQ(n["bos"][0]["sharing"], (json{{"key", 0x77aa}, {"follower", false}}));
    EXPECT_EQ(n["bos"][1]["sharing"], (json{{"key", 0x77aa}, {"follower", true}}));
    EXPECT_EQ(n["bos"][2]["domains"], "GWS");
    EXPECT_EQ(n["contexts"],
              (json::array({{{"id", 1}, {"query2_flags", 0}}, {{"id", 3}, {"query2_flags", 0}}})));
    EXPECT_EQ(n["syncobjs"][0],
              (json{{"handle", 1}, {"signaled", true}, {"timeline_point", nullptr}}));
    EXPECT_EQ(n["syncobjs"][2], (json{{"handle", 4}, {"signaled", false}, {"timeline_point", 7}}));
    RunResult text = runTool({"image", "show", dir.path()});
    ASSERT_EQ(text.exitCode, 0) << text.describe();
    EXPECT_THAT(text.out, HasSubstr("imported, follower of shared memory 0x77aa"));
    EXPECT_THAT(text.out,
                HasSubstr("owner of shared memory 0x77aa, exported as amdgpu-dmabuf_9.img"));
    EXPECT_THAT(text.out, HasSubstr("  context 3\n"));
    EXPECT_THAT(text.out, HasSubstr("  syncobj 2: no fence\n"));
    EXPECT_THAT(text.out, HasSubstr("  syncobj 4: timeline at point 7\n"));
    EXPECT_EQ(j["topology"]["gpus"].size(), 2u);
    EXPECT_EQ(j["contents_files"].size(), 2u);

    RunResult verify = runTool({"image", "verify", dir.path()});
    EXPECT_EQ(verify.exitCode, 0) << verify.describe();
    ASSERT_TRUE(testsupport::flipByte(dir / formats::drmPagesImageName(7, 129, 1), 100));
    verify = runTool({"image", "verify", dir.path()});
    EXPECT_EQ(verify.exitCode, 2) << verify.describe();
    EXPECT_THAT(verify.out, HasSubstr("amdgpu-drm-pages-7-129-0001.img: at offset 8: the contents "
                                      "do not match"));
    EXPECT_THAT(verify.out, HasSubstr("BO 1 (handle 2)"));
}

} // namespace

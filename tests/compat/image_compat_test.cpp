// criu-amdgpu image show / verify / check on checkpoints laid out by the rules of CRIU's own
// amdgpu plugin: written by the reference tool (upstream_images.c, built from the plugin's schema
// in Debian's criu source), never by this project's writers. Each suite runs them against its
// schema generation (4.1.1, 4.2.1, and the development branch when configured).
#include "upstream_tool.h"

#include "run_tool.h"
#include "temp_dir.h"

#include "topology/synth.h"
#include "topology/sysfs.h"

#include <linux/kfd_ioctl.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace {

using nlohmann::json;
using testing::HasSubstr;
using tooltest::RunResult;
using tooltest::runTool;

constexpr uint32_t kVram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM, kGtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT,
                   kUserptr = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR;

topology::SyntheticSpec twoGpus(uint64_t vram) {
    topology::SyntheticSpec spec;
    spec.gpus = 2;
    spec.vramBytes = vram;
    return spec;
}

/// What KFD's CRIU ops report for a process on GPUs 0x1000 and 0x1111 (the reference tool's
/// kernel-state format): a VRAM and a userptr BO on the first, a GTT BO on the second.
std::string kernelState() {
    return base::strFormat("pid 321\nnum_objects 4\ngpu 1000\ngpu 1111\n"
                           "bo 7f0000000000 8192 1000 %x 1000\n"
                           "bo 7f0000100000 4096 2000 %x 1000\n"
                           "bo 7f0000200000 4096 3000 %x 1111\n"
                           "priv 3 aa bb cc\n",
                           kVram, kUserptr, kGtt);
}

/// A checkpoint directory written by the reference tool, optionally corrupted by it.
struct UpstreamDir {
    explicit UpstreamDir(const std::vector<std::string>& corruption = {}) {
        std::filesystem::create_directories(images);
        EXPECT_TRUE(topology::writeKfdTopology(
                        topology::makeSyntheticTopology(twoGpus(64ull << 30)), dir / "sysfs")
                        .ok());
        EXPECT_TRUE(topology::writeKfdTopology(topology::makeSyntheticTopology(twoGpus(1ull << 30)),
                                               dir / "small")
                        .ok());
        testsupport::writeFile(dir / "kernel-state", kernelState());
        std::vector<std::string> args = {
            "write-kfd",          images, "--sysfs", dir / "sysfs", "--kernel",
            dir / "kernel-state", "--id", "3",       "--render-id", "4"};
        args.insert(args.end(), corruption.begin(), corruption.end());
        compat::ToolRun run = compat::runUpstream(args);
        EXPECT_EQ(run.status, 0) << run.output;
    }
    testsupport::TempDir dir;
    std::string images = dir / "images";
};

TEST(ImageCompat, ShowDecodesUpstreamsCheckpointAndNamesItsWriter) {
    UpstreamDir up;
    RunResult r = runTool({"image", "show", "--json", up.images});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    json j = json::parse(r.out);
    ASSERT_EQ(j["processes"].size(), 1u) << r.out;
    const json& p = j["processes"][0];
    EXPECT_EQ(p["pid"], 321);
    EXPECT_EQ(p["kernel_objects"], 4);
    EXPECT_EQ(p["pages_checksums"], false);
    EXPECT_THAT(p["writer"]["generation"].get<std::string>(),
                HasSubstr("CRIU's own amdgpu plugin"));
    ASSERT_EQ(p["gpus"].size(), 2u);
    EXPECT_EQ(p["gpus"][1]["gpu_id"], 0x1111);
    EXPECT_EQ(p["gpus"][0]["vram_bytes"], 64ull << 30);
    ASSERT_EQ(p["bos"].size(), 3u);
    EXPECT_EQ(p["bos"][0]["domain"], "VRAM");
    EXPECT_EQ(p["bos"][1]["domain"], "USERPTR");
    EXPECT_EQ(p["bos"][2]["domain"], "GTT");
    EXPECT_EQ(p["bos"][2]["va"], 0x7f0000200000ull);
    // Two render nodes (one per GPU, no BOs) and two pages files, nothing missing or left over.
    EXPECT_EQ(j["render_nodes"].size(), 2u);
    ASSERT_EQ(j["contents_files"].size(), 2u);
    EXPECT_EQ(j["contents_files"][0]["name"], "amdgpu-pages-3-1000.img");
    EXPECT_EQ(j["contents_files"][0]["bytes"], 8192);
    EXPECT_TRUE(j["contents_files"][0]["checksum"].is_null());
    EXPECT_TRUE(j["missing"].empty());
    EXPECT_TRUE(j["leftover"].empty());
    EXPECT_TRUE(j["undecodable"].empty()) << r.out;
}

TEST(ImageCompat, VerifyAcceptsUpstreamsPagesFiles) {
    UpstreamDir up;
    RunResult r = runTool({"image", "verify", up.images});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out,
                HasSubstr("2 contents file(s) checked (0 with a recorded checksum): all sound"));
}

TEST(ImageCompat, VerifyNamesAHeaderUpstreamsRestoreWouldRefuse) {
    UpstreamDir up({"--corrupt", "header-mismatch", "--gpu", "1000"});
    RunResult r = runTool({"image", "verify", up.images});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("amdgpu-pages-3-1000.img: at offset 0: the size header says"));
}

TEST(ImageCompat, VerifyNamesTheOffsetOfAnExtraByte) {
    UpstreamDir up({"--corrupt", "extra-byte", "--gpu", "1111"});
    RunResult r = runTool({"image", "verify", up.images});
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out,
                HasSubstr("amdgpu-pages-3-1111.img: at offset 4104: 1 bytes follow the last BO"));
}

TEST(ImageCompat, ShowAndVerifyNameAMissingPagesFile) {
    UpstreamDir up({"--corrupt", "missing-gpu-file", "--gpu", "1111"});
    RunResult show = runTool({"image", "show", up.images});
    EXPECT_EQ(show.exitCode, 2) << show.describe();
    EXPECT_THAT(show.out,
                HasSubstr("missing: amdgpu-pages-3-1111.img (called for by amdgpu-kfd-3.img)"));
    RunResult verify = runTool({"image", "verify", up.images});
    EXPECT_EQ(verify.exitCode, 2) << verify.describe();
    EXPECT_THAT(verify.out, HasSubstr("amdgpu-pages-3-1111.img: missing"));
}

TEST(ImageCompat, CheckMapsUpstreamsCheckpointOntoATreeOrSaysWhyNot) {
    UpstreamDir up;
    RunResult ok = runTool({"image", "check", "--topology", up.dir / "sysfs", up.images});
    EXPECT_EQ(ok.exitCode, 0) << ok.describe();
    EXPECT_THAT(ok.out, HasSubstr("backend: kfd"));
    EXPECT_THAT(ok.out, HasSubstr("0x1111 -> 0x1111"));
    RunResult no = runTool({"image", "check", "--topology", up.dir / "small", "--json", up.images});
    EXPECT_EQ(no.exitCode, 2) << no.describe();
    json j = json::parse(no.out);
    EXPECT_FALSE(j["would_restore"]);
    EXPECT_THAT(j["sources"][0]["reasons"].dump(), HasSubstr("VRAM"));
}

} // namespace

// criu-amdgpu image show / verify / check, run as a process on checkpoint directories written by
// the project's own image writers: the kfd backend's (kfd::writeKfdImage, pages files with
// recorded checksums) and the render-node backends' (hal::writeRenderNodeImage, per-BO contents
// files, amdgpu-topology.img, dma-buf images). Images of CRIU's own plugin: tests/compat.
#include "run_tool.h"
#include "temp_dir.h"

#include "hal/content_stream.h"
#include "hal/dmabuf_image.h"
#include "hal/framed_image.h"
#include "hal/render_node_image.h"
#include "hal/topology_codec.h"
#include "hal/topology_synth.h"
#include "hal/topology_sysfs.h"
#include "kfd/kfd_images.h"

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

constexpr uint32_t kKfdId = 5;
constexpr uint32_t kGpuA = 0x1000, kGpuB = 0x1111;

std::string bytesOf(size_t n, uint8_t seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>(seed + i * 7);
    return s;
}

hal::ContentChecksum fnv(const std::string& data) { // what this project writes now: XXH3-64
    hal::ContentDigest d;
    d.update(std::as_bytes(std::span(data.data(), data.size())));
    return d.checksum();
}

void writeContents(hal::ImageStore& store, const std::string& name, const std::string& data) {
    auto w = hal::createFramedImage(store, name, data.size());
    ASSERT_TRUE(w.ok()) << w.error().describe();
    ASSERT_TRUE((*w)->write(std::as_bytes(std::span(data.data(), data.size()))).ok());
    ASSERT_TRUE((*w)->close().ok());
}

void flipByte(const std::string& path, long offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(offset);
    char c = 0;
    f.get(c);
    f.seekp(offset);
    f.put(static_cast<char>(~c));
}

hal::SyntheticSpec twoGpus(uint64_t vram = 64ull << 30) {
    hal::SyntheticSpec spec;
    spec.gpus = 2;
    spec.vramBytes = vram;
    return spec;
}

/// A KFD checkpoint as the kfd backend writes it: one process on two GPUs, a VRAM and a GTT BO
/// on GPU A, a VRAM BO on GPU B, a userptr BO (no contents file), checksums recorded.
class KfdCheckpoint : public ::testing::Test {
protected:
    void SetUp() override {
        auto store = hal::openDirectoryStore(images_);
        ASSERT_TRUE(store.ok());
        kfd::KfdImage image;
        image.pid = 4242;
        image.topology = hal::makeSyntheticTopology(twoGpus());
        image.bos = {{0x7f0000000000, 8192, 0x1000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_VRAM},
                     {0x7f0000100000, 4096, 0x2000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_GTT},
                     {0x7f0000200000, 4096, 0x3000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR},
                     {0x7f0000300000, 4096, 0x4000, kGpuB, KFD_IOC_ALLOC_MEM_FLAGS_VRAM}};
        image.numObjects = 3;
        image.privData = {1, 2, 3, 4};
        std::string a = bytesOf(8192, 1) + bytesOf(4096, 2), b = bytesOf(4096, 3);
        image.checksums = {{kGpuA, a.size(), fnv(a)}, {kGpuB, b.size(), fnv(b)}};
        ASSERT_TRUE(kfd::writeKfdImage(**store, hal::kfdImageName(kKfdId), image).ok());
        writeContents(**store, pagesA_, a);
        writeContents(**store, hal::kfdPagesImageName(kKfdId, kGpuB), b);
        ASSERT_TRUE(hal::writeKfdTopology(image.topology, dir_ / "same").ok());
        ASSERT_TRUE(
            hal::writeKfdTopology(hal::makeSyntheticTopology(twoGpus(1ull << 30)), dir_ / "small")
                .ok());
    }

    testsupport::TempDir dir_;
    std::string images_ = [this] {
        std::filesystem::create_directories(dir_ / "img");
        return dir_ / "img";
    }();
    std::string pagesA_ = hal::kfdPagesImageName(kKfdId, kGpuA);
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
    flipByte(images_ + "/" + pagesA_, 9000);
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
    flipByte(images_ + "/" + pagesA_, 1);
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
    auto store = hal::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(hal::writeTopologyImage(**store, hal::makeSyntheticTopology(twoGpus())).ok());
    hal::RenderNodeImage r;
    r.id = 7;
    r.gpuId = kGpuB;
    r.renderMinor = 129;
    std::vector<std::string> data = {bytesOf(4096, 9), bytesOf(8192, 10)};
    for (uint32_t i = 0; i < 3; ++i) {
        hal::DrmBoEntry bo;
        bo.handle = i + 1;
        bo.size = i < 2 ? data[i].size() : 4096;
        bo.preferredDomains = i == 0 ? 4 /* VRAM */ : i == 1 ? 2 /* GTT */ : 0x10 /* GWS */;
        bo.isImport = i == 1;
        bo.sharing = hal::BoSharing{i < 2 ? 0x77aau : 0u, i == 1}; // BO 1 imports BO 0's memory
        bo.vms.push_back({0x100000 * (i + 1), bo.size, 0, 0});
        if (i < 2) {
            bo.checksum = fnv(data[i]);
            writeContents(**store, hal::drmPagesImageName(7, 129, i), data[i]);
        }
        r.bos.push_back(bo);
    }
    ASSERT_TRUE(hal::writeRenderNodeImage(**store, r).ok());
    ASSERT_TRUE(hal::writeDmabufImage(**store, {9, 1, 77, 7}).ok());

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
    RunResult text = runTool({"image", "show", dir.path()});
    ASSERT_EQ(text.exitCode, 0) << text.describe();
    EXPECT_THAT(text.out, HasSubstr("imported, follower of shared memory 0x77aa"));
    EXPECT_THAT(text.out, HasSubstr("owner of shared memory 0x77aa, exported as amdgpu-dmabuf_9.img"));
    EXPECT_EQ(j["topology"]["gpus"].size(), 2u);
    EXPECT_EQ(j["contents_files"].size(), 2u);

    RunResult verify = runTool({"image", "verify", dir.path()});
    EXPECT_EQ(verify.exitCode, 0) << verify.describe();
    flipByte(dir / hal::drmPagesImageName(7, 129, 1), 100);
    verify = runTool({"image", "verify", dir.path()});
    EXPECT_EQ(verify.exitCode, 2) << verify.describe();
    EXPECT_THAT(verify.out, HasSubstr("amdgpu-drm-pages-7-129-0001.img: at offset 8: the contents "
                                      "do not match"));
    EXPECT_THAT(verify.out, HasSubstr("BO 1 (handle 2)"));
}

} // namespace

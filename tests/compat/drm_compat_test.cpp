// The amdgpu-drm backend's checkpoints read by the reference tool built from upstream's schema.
// Render-node BOs exist only in the schema of CRIU's development branch: with Debian's 4.1.1 and
// 4.2.1 the tool reads the render-node message (gpu_id) and, as those plugins do, never opens the
// BO files; with a development-branch schema every BO file is checked against its BO.
#include "upstream_tool.h"

#include "drm_fixture.h"

#include "formats/render_node_image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace fakedrm;
using compat::runUpstream;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

constexpr uint64_t kGtt = AMDGPU_GEM_DOMAIN_GTT;
constexpr uint64_t kVram = AMDGPU_GEM_DOMAIN_VRAM;
constexpr int kPid = 100;

/// Two render nodes of one process: GTT, visible and invisible VRAM and GDS on the first; VRAM
/// of its own and an import of the first's GTT BO on the second.
struct OurDrmDump {
    /// `compression`: option content-compression; `againstParent`: dumped a first time into
    /// `parent`, then into `images` with option parent-images naming it.
    explicit OurDrmDump(const std::string& compression = "none", bool againstParent = false) {
        src.addGpu(gpuAt(128), "0000:03:00.0");
        src.addGpu(gpuAt(129), "0000:43:00.0");
        AppFile a = src.open(kPid, 5, 128);
        AppFile b = src.open(kPid, 6, 129);
        uint32_t gtt = src.createBo(a, 64 << 10, kGtt, 0, 1);
        uint32_t vis = src.createBo(a, 200 << 10, kVram, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, 2);
        uint32_t inv = src.createBo(a, 300 << 10, kVram, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 3);
        src.createBo(a, 4096, AMDGPU_GEM_DOMAIN_GDS, 0, 4);
        uint32_t own = src.createBo(b, 128 << 10, kVram, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 5);
        uint32_t imported = src.share(a, gtt, b);
        EXPECT_EQ(0, src.mapBo(a, gtt, 0x400000000ull, 0, 64 << 10));
        EXPECT_EQ(0, src.mapBo(a, vis, 0x410000000ull, 0, 200 << 10));
        EXPECT_EQ(0, src.mapBo(a, inv, 0x420000000ull, 0, 300 << 10));
        EXPECT_EQ(0, src.mapBo(b, own, 0x500000000ull, 0, 128 << 10));
        EXPECT_EQ(0, src.mapBo(b, imported, 0x510000000ull, 0, 64 << 10));
        // And a dma-buf fd of the first file's GTT BO.
        auto dumpInto = [&](formats::ImageStore& store) {
            auto dumped =
                dumpRefs(src, store, kPid,
                         {src.criuFile(a, 1), src.criuFile(b, 2), src.criuDmabufFile(a, gtt, 3)});
            EXPECT_TRUE(dumped.ok()) << dumped.error().describe();
        };
        if (againstParent) {
            dumpInto(*parent.store);
            src.settings.parentImages =
                std::filesystem::relative(parent.dir.path(), images.dir.path()).string();
        }
        src.settings.contentCompression = compression;
        dumpInto(*images.store);
        // The contents each BO held, by its index in its render-node image.
        std::filesystem::create_directories(expect);
        for (auto [file, id] : {std::pair{a, 1u}, std::pair{b, 2u}}) {
            auto image = formats::readRenderNodeImage(*images.store, id);
            EXPECT_TRUE(image.ok()) << image.error().describe();
            for (size_t i = 0; image.ok() && i < image->bos.size(); ++i) {
                auto bytes = src.contents(file.fd, image->bos[i].handle);
                compat::writeBytes(expect, base::strFormat("drm-%u-bo-%zu.bin", id, i),
                                   bytes.data(), bytes.size());
            }
        }
    }
    std::vector<std::string> checkArgs() const {
        // GTT, visible, invisible of the first file; own and imported of the second (GDS: none).
        bool dev = compat::upstreamSchema().renderBos;
        return {"check",           images.dir.path(),
                "--expect",        expect,
                "--min-render",    "2",
                "--min-drm-pages", dev ? "5" : "0",
                "--min-dmabuf",    compat::upstreamSchema().dmabuf ? "1" : "0"};
    }
    FakeMachine src;
    Images parent, images;
    std::string expect = src.root / "expect";
};

TEST(DrmCompat, OurDumpIsWhatUpstreamsPluginReads) {
    OurDrmDump dump;
    compat::ToolRun run = runUpstream(dump.checkArgs());
    EXPECT_EQ(run.status, 0) << run.output;
    if (compat::upstreamSchema().renderBos)
        EXPECT_THAT(run.output,
                    HasSubstr("2 render-node images, 5 render-node BO files, 1 dmabuf"));
    else // 4.1/4.2: the render node is restored by its gpu_id; the BO files are never opened
        EXPECT_THAT(run.output, HasSubstr("note: amdgpu-drm-pages-1-128-0000.img: not an image of "
                                          "this schema's plugin"));
}

TEST(DrmCompat, ABoFileWithoutItsHeaderFailsWhereUpstreamReadsIt) {
    OurDrmDump dump;
    std::string path = dump.images.dir / "amdgpu-drm-pages-2-129-0000.img";
    std::string bytes = testsupport::readFile(path);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(8);
    compat::ToolRun run = runUpstream(dump.checkArgs());
    if (compat::upstreamSchema().renderBos) {
        EXPECT_EQ(run.status, 1) << run.output;
        EXPECT_THAT(run.output, HasSubstr("amdgpu-drm-pages-2-129-0000.img: "));
    } else { // a plugin that lists no BOs opens no BO file: it cannot notice
        EXPECT_EQ(run.status, 0) << run.output;
    }
}

TEST(DrmCompat, AnExtraByteAfterTheRenderNodeMessageFails) {
    OurDrmDump dump;
    std::ofstream(dump.images.dir / "amdgpu-renderD-2.img", std::ios::binary | std::ios::app)
        << 'x';
    compat::ToolRun run = runUpstream(dump.checkArgs());
    EXPECT_EQ(run.status, 1) << run.output;
    EXPECT_THAT(run.output, HasSubstr("amdgpu-renderD-2.img: header announces"));
}

// Contents in formats of ours alone (compressed: amdgpu-packed-*; incremental: amdgpu-delta-*)
// are under names CRIU's plugin does not look for: a plugin that reads render-node BO files finds
// none and fails, instead of restoring compressed bytes or holes where a parent's bytes belong.
// 4.1 and 4.2 read no BO file of a render node, with or without these formats.
class DrmCompatOurFormats : public ::testing::TestWithParam<std::pair<const char*, bool>> {};

TEST_P(DrmCompatOurFormats, AreRefusedByAPluginThatReadsRenderNodeBos) {
    OurDrmDump dump(GetParam().first, GetParam().second);
    compat::ToolRun run = runUpstream(dump.checkArgs());
    if (compat::upstreamSchema().renderBos) {
        EXPECT_EQ(run.status, 1) << run.output;
        EXPECT_THAT(run.output, HasSubstr("amdgpu-drm-pages-1-128-0000.img"));
    } else {
        EXPECT_EQ(run.status, 0) << run.output;
        EXPECT_THAT(run.output, Not(HasSubstr("amdgpu-drm-pages-1-128-0000.img: not an image")))
            << "no file under CRIU's names at all";
    }
}

INSTANTIATE_TEST_SUITE_P(Each, DrmCompatOurFormats,
                         ::testing::Values(std::pair{"lz4", false}, std::pair{"none", true},
                                           std::pair{"zstd:1", true}),
                         [](const auto& info) {
                             std::string name = info.param.first;
                             std::erase(name, ':');
                             return name + (info.param.second ? "AgainstAParent" : "");
                         });

} // namespace

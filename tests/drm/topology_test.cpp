// The topology of a machine without KFD, from render nodes.
#include "drm_fixture.h"
#include "render_topology.h"

#include "formats/topology_codec.h"
#include "memory_tree_copy.h"
#include "topology/match.h"
#include "topology/synth.h"
#include "topology/sysfs.h"
#include "topology_fixtures.h"

#include <filesystem>
#include <functional>

namespace fakedrm {
namespace {

// The reader on the fake machine's tree on disk and on a copy of it in memory (what the fuzz
// target render_topology_memory feeds it through FakeKernel::useFiles): every reading the same.
void expectSameReadingInMemory(FakeMachine& m) {
    topology::sysfs::MemoryTree tree;
    ASSERT_EQ(testsupport::copyIntoMemory(&tree, m.root.path()), "");
    auto disk = drm::readLocalTopology(*m.kernel, m.paths);
    m.kernel->useFiles(tree.root());
    auto memory = drm::readLocalTopology(*m.kernel, m.paths);
    m.kernel->useFiles(topology::sysfs::realFileSystem());
    testsupport::expectSameReading(disk, memory);
}

TEST(DrmTopology, AFakeMachineReadsTheSameFromMemoryAsFromDisk) {
    namespace fs = std::filesystem;
    struct Case {
        const char* what;
        std::function<void(FakeMachine&)> build;
    };
    std::vector<Case> cases = {
        {"two GPUs",
         [](FakeMachine& m) {
             m.addGpu(gpuAt(128), "0000:03:00.0");
             m.addGpu(gpuAt(129), "0001:c3:02.1");
         }},
        {"no GPU", [](FakeMachine&) {}},
        {"a GPU without sysfs, one of another driver, other files in /dev/dri",
         [](FakeMachine& m) {
             m.addGpu(gpuAt(128), "0000:03:00.0", false);
             GpuSpec other = gpuAt(129);
             other.driver = "radeon";
             m.addGpu(other, "0000:43:00.0");
             m.addGpu(gpuAt(130), "0000:83:00.0");
             testsupport::writeFile(m.paths.devRoot + "/dri/card0", "");
             testsupport::writeFile(m.paths.devRoot + "/dri/renderDx", "");
         }},
        {"vendor and device unreadable as numbers, the driver link dangling",
         [](FakeMachine& m) {
             m.addGpu(gpuAt(128), "0000:03:00.0");
             std::string dev = m.paths.sysRoot + "/devices/pci0000:00/0000:03:00.0";
             testsupport::writeFile(dev + "/vendor", "  zz\n");
             testsupport::writeFile(dev + "/device", "\n");
             fs::remove(dev + "/driver");
             fs::create_symlink("../../../bus/pci/drivers/gone", dev + "/driver");
         }},
        {"device links to a link to the PCI device (the location from the resolved name)",
         [](FakeMachine& m) {
             m.addGpu(gpuAt(128), "0000:03:00.0");
             std::string link = m.paths.sysRoot + "/class/drm/renderD128/device";
             fs::remove(link);
             fs::create_symlink("../../../gpu0", link);
             fs::create_symlink("devices/pci0000:00/0000:03:00.0", m.paths.sysRoot + "/gpu0");
         }},
        {"device a directory, not a link",
         [](FakeMachine& m) {
             m.addGpu(gpuAt(128), "0000:03:00.0");
             std::string link = m.paths.sysRoot + "/class/drm/renderD128/device";
             fs::remove(link);
             testsupport::writeFile(link + "/vendor", "0x1002\n");
         }},
        {"KFD's tree present",
         [](FakeMachine& m) {
             m.addGpu(gpuAt(128), "0000:03:00.0");
             topology::SyntheticSpec spec;
             spec.gpus = 2;
             ASSERT_TRUE(topology::writeKfdTopology(topology::makeSyntheticTopology(spec),
                                                    m.paths.kfdRoot())
                             .ok());
         }},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        FakeMachine m;
        c.build(m);
        expectSameReadingInMemory(m);
    }
}

TEST(DrmTopology, ThePciLocationIsTheNameDeviceResolvesToWhenItLinksToALink) {
    namespace fs = std::filesystem;
    FakeMachine m;
    m.addGpu(gpuAt(128), "0001:c3:02.1");
    std::string link = m.paths.sysRoot + "/class/drm/renderD128/device";
    fs::remove(link);
    fs::create_symlink("../../../gpu0", link); // its own name says nothing
    fs::create_symlink("devices/pci0000:00/0001:c3:02.1", m.paths.sysRoot + "/gpu0");
    drm::RenderNodeSysfs s = drm::readRenderNodeSysfs(m.kernel->files(), m.paths, 128);
    ASSERT_TRUE(s.pci);
    EXPECT_EQ(s.pci->domain, 1u);
    EXPECT_EQ(s.pci->locationId(), (0xc3u << 8) | (2u << 3) | 1u);
    EXPECT_EQ(s.driver, "amdgpu");
    EXPECT_EQ(s.vendorId, 0x1002u);
}

TEST(DrmTopology, GpuNodesCarryTheKfdKeysThatRenderNodesTell) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0001:c3:02.1");
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_TRUE(topo.ok()) << topo.error().describe();
    ASSERT_EQ(topo.value().gpus().size(), 1u);
    ASSERT_EQ(topo.value().cpus().size(), 1u);
    const topology::Node& g = *topo.value().gpus()[0];
    EXPECT_EQ(g.prop("simd_count"), 104u * 4);
    EXPECT_EQ(g.prop("simd_per_cu"), 4u);
    EXPECT_EQ(g.prop("array_count"), 8u);
    EXPECT_EQ(g.prop("cu_per_simd_array"), 13u);
    EXPECT_EQ(g.prop("vendor_id"), 0x1002u);
    EXPECT_EQ(g.prop("device_id"), 0x740fu);
    EXPECT_EQ(g.prop("domain"), 1u);
    EXPECT_EQ(g.prop("location_id"), (0xc3u << 8) | (2u << 3) | 1u);
    EXPECT_EQ(g.prop("drm_render_minor"), 128u);
    EXPECT_EQ(g.prop("local_mem_size"), 64ull << 30);
    EXPECT_EQ(g.vramSize(), 64ull << 30);
    EXPECT_EQ(g.prop("num_sdma_engines"), 2u);
    EXPECT_EQ(g.prop("fw_version"), 0x1cu);
    EXPECT_EQ(g.prop("sdma_fw_version"), 0x10u);
    EXPECT_EQ(g.prop("max_engine_clk_fcompute"), 1700u);
    EXPECT_TRUE(g.syntheticGpuId);
    EXPECT_EQ(g.ioLinks.size(), 1u);
    EXPECT_EQ(g.renderMinor(), 128);
}

TEST(DrmTopology, SyntheticGpuIdsAreStableAndDistinct) {
    FakeMachine a, b;
    a.addGpu(gpuAt(128), "0000:03:00.0");
    a.addGpu(gpuAt(129), "0000:43:00.0");
    b.addGpu(gpuAt(130), "0000:03:00.0");
    auto ta = drm::readRenderNodeTopology(*a.kernel, a.paths);
    auto tb = drm::readRenderNodeTopology(*b.kernel, b.paths);
    ASSERT_TRUE(ta.ok() && tb.ok());
    uint32_t id0 = ta.value().gpus()[0]->gpuId, id1 = ta.value().gpus()[1]->gpuId;
    EXPECT_NE(id0, 0u);
    EXPECT_NE(id0, id1);
    EXPECT_EQ(tb.value().gpus()[0]->gpuId, id0) << "same PCI location, model and VRAM";
    drm::PciLocation loc{0, 3, 0, 0};
    EXPECT_EQ(drm::syntheticGpuId(loc, 0x740f, 64ull << 30), id0);
}

TEST(DrmTopology, NaviReportsTwoSimdsPerCu) {
    FakeMachine m;
    GpuSpec navi = gpuAt(128);
    navi.family = AMDGPU_FAMILY_NV;
    navi.visibleVram = 256 << 20;
    m.addGpu(navi, "0000:03:00.0");
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_TRUE(topo.ok());
    const topology::Node& g = *topo.value().gpus()[0];
    EXPECT_EQ(g.prop("simd_per_cu"), 2u);
    EXPECT_EQ(g.memBanks.at(0).heapType, 2u) << "VRAM larger than the CPU window is private";
}

TEST(DrmTopology, OtherDriversAndBrokenNodesAreLeftOut) {
    FakeMachine m;
    GpuSpec intel = gpuAt(128);
    intel.driver = "i915";
    m.addGpu(intel, "0000:00:02.0");
    m.addGpu(gpuAt(129), "0000:03:00.0");
    testsupport::writeFile(m.paths.devRoot + "/dri/renderD140", "");
    m.kernel->failIoctl(DRM_IOCTL_AMDGPU_INFO, 1, EIO);
    GpuSpec second = gpuAt(131);
    m.addGpu(second, "0000:83:00.0");
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_TRUE(topo.ok()) << topo.error().describe();
    EXPECT_EQ(topo.value().gpus().size(), 1u);
    EXPECT_EQ(topo.value().skipped.size(), 2u);
}

TEST(DrmTopology, AFirmwareQueryThatFailsIsAnErrorNamingItNotFirmwareZero) {
    // DEV_INFO, VRAM_GTT, then FW_VERSION (MEC): EIO there is a failure, not "no firmware".
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.kernel->failIoctl(DRM_IOCTL_AMDGPU_INFO, 3, EIO);
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_FALSE(topo.ok()) << "read firmware 0 for a query that failed";
    std::string text = topo.error().describe();
    EXPECT_NE(text.find("renderD128: while reading AMDGPU_INFO_FW_VERSION (MEC)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("Input/output error"), std::string::npos) << text;
}

TEST(DrmTopology, AFirmwareTypeTheKernelDoesNotKnowIsFirmwareZero) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.kernel->failIoctl(DRM_IOCTL_AMDGPU_INFO, 3, EINVAL);
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_TRUE(topo.ok()) << topo.error().describe();
    ASSERT_EQ(topo.value().gpus().size(), 1u);
    EXPECT_EQ(topo.value().gpus()[0]->prop("fw_version", 99), 0u);
}

TEST(DrmTopology, NoAmdgpuNodeIsNotPresent) {
    FakeMachine m;
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_FALSE(topo.ok());
    EXPECT_EQ(topo.error().code(), base::ErrorCode::NotPresent);
}

TEST(DrmTopology, KfdSysfsIsPreferredWhenPresent) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    topology::SyntheticSpec spec;
    spec.gpus = 2;
    ASSERT_TRUE(
        topology::writeKfdTopology(topology::makeSyntheticTopology(spec), m.paths.kfdRoot()).ok());
    auto topo = drm::readLocalTopology(*m.kernel, m.paths);
    ASSERT_TRUE(topo.ok()) << topo.error().describe();
    EXPECT_EQ(topo.value().gpus().size(), 2u);
    EXPECT_EQ(topo.value().gpus()[0]->gpuId, 0x1000u);
}

TEST(DrmTopology, RenderNodeTopologySurvivesTheTopologyImageAndMatchesItself) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.addGpu(gpuAt(129), "0000:43:00.0");
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_TRUE(topo.ok());
    Images images;
    ASSERT_TRUE(formats::writeTopologyImage(*images.store, topo.value()).ok());
    auto back = formats::readTopologyImage(*images.store);
    ASSERT_TRUE(back.ok());
    auto mapping = topology::mapGpus(back.value(), topo.value(), topology::MatchOptions{});
    ASSERT_TRUE(mapping.ok()) << mapping.error().describe();
    for (const auto& [s, d] : mapping.value())
        EXPECT_EQ(s, d);
}

/// A host of two GPUs (KFD sysfs lists both): a process on the first, renderD128, dumped into
/// `images`; the host's topology in `host`.
void dumpOnTheFirstOfTwo(Images& images, topology::Topology* host) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(100, 5, 128);
    src.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    topology::SyntheticSpec spec;
    spec.gpus = 2;
    spec.vramBytes = 64ull << 30;
    *host = topology::makeSyntheticTopology(spec);
    ASSERT_TRUE(topology::writeKfdTopology(*host, src.paths.kfdRoot()).ok());
    auto dumped = dump(src, images, 100, {{f, 1}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    auto image = formats::readRenderNodeImage(*images.store, 1);
    ASSERT_TRUE(image.ok());
    ASSERT_EQ(image.value().gpuId, 0x1000u) << "the KFD gpu_id of renderD128";
}

TEST(DrmTopology, ContainerSeesOnlyTheGpusWhoseRenderNodeExists) {
    // KFD sysfs lists the host's 2 GPUs; only renderD129 exists here. The dump's GPU (same
    // model) must land on it, not on the first GPU of the host.
    Images images;
    topology::Topology host;
    ASSERT_NO_FATAL_FAILURE(dumpOnTheFirstOfTwo(images, &host));
    FakeMachine dst;
    ASSERT_TRUE(topology::writeKfdTopology(host, dst.paths.kfdRoot()).ok());
    dst.addGpu(gpuAt(129), "0000:43:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->minor, 129u);
}

// runc restores a container's /dev from the checkpoint: the old pod's renderD128, which the new
// pod's devices cgroup refuses, is there; the new pod's renderD129 is not. The restore asks the
// kernel, lands on 129 and makes its node.
TEST(DrmTopology, RestoredIntoANewPod_ThenTheGpuItsCgroupGivesIsUsedAndItsNodeMade) {
    Images images;
    topology::Topology host;
    ASSERT_NO_FATAL_FAILURE(dumpOnTheFirstOfTwo(images, &host));
    FakeMachine dst;
    ASSERT_TRUE(topology::writeKfdTopology(host, dst.paths.kfdRoot()).ok());
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    dst.addGpu(gpuAt(129), "0000:43:00.0");
    dst.kernel->denyRenderNode(128);
    dst.kernel->removeRenderNodeFile(129);
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->minor, 129u);
    auto made = dst.kernel->madeNodes();
    ASSERT_EQ(made.size(), 1u) << "one node made, no probe node left";
    EXPECT_EQ(made.begin()->first, dst.paths.renderNodePath(129));
}

} // namespace
} // namespace fakedrm

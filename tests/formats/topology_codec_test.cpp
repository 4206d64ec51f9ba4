// Topology <-> kfd_device_entry codec and amdgpu-topology.img.
#include "formats/topology_codec.h"

#include "formats/proto_image.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace {

using base::ErrorCode;
using ::testing::HasSubstr;
using topology::LinkType;
using topology::Node;
using topology::Topology;

topology::Link link(uint32_t from, uint32_t to, LinkType type) {
    topology::Link l;
    l.nodeFrom = from;
    l.nodeTo = to;
    l.type = static_cast<uint32_t>(type);
    return l;
}

Node gpuNode(uint32_t index, uint32_t gpuId, int minor) {
    Node n;
    n.index = index;
    n.gpuId = gpuId;
    n.set("simd_count", 416);
    n.set("cpu_cores_count", 0);
    n.set("device_id", 0x740f);
    n.set("vendor_id", 0x1002);
    n.set("fw_version", 78);
    n.set("sdma_fw_version", 8);
    n.set("drm_render_minor", static_cast<uint64_t>(minor));
    n.set("hive_id", 0xabcdef0123ull);
    n.set("location_id", 0x300 + index);
    n.set("gfx_target_version", 90010);
    n.set("local_mem_size", 64ull << 30);
    topology::MemBank bank;
    bank.heapType = 1;
    bank.sizeInBytes = 64ull << 30;
    n.memBanks.push_back(bank);
    return n;
}

/// CPU node 0, GPUs at nodes 1 and 2 in one XGMI hive; GPU 1 also has a HyperTransport link
/// and an Infiniband link that the codec must drop.
Topology handBuilt() {
    Topology t;
    Node cpu;
    cpu.index = 0;
    cpu.set("cpu_cores_count", 64);
    cpu.set("simd_count", 0);
    cpu.ioLinks.push_back(link(0, 1, LinkType::PciExpress));
    cpu.ioLinks.push_back(link(0, 2, LinkType::PciExpress));
    t.nodes.push_back(cpu);

    Node g1 = gpuNode(1, 0x59ea, 128);
    g1.ioLinks.push_back(link(1, 0, LinkType::PciExpress));
    g1.ioLinks.push_back(link(1, 2, LinkType::Xgmi));
    g1.ioLinks.push_back(link(1, 0, LinkType::HyperTransport));
    g1.ioLinks.push_back(link(1, 2, LinkType::Infiniband));
    t.nodes.push_back(g1);

    Node g2 = gpuNode(2, 0x8c2b, 129);
    g2.ioLinks.push_back(link(2, 0, LinkType::PciExpress));
    g2.ioLinks.push_back(link(2, 1, LinkType::Xgmi));
    t.nodes.push_back(g2);
    return t;
}

base::Result<Topology> roundTrip(const Topology& t) {
    formats::DeviceEntryList list(t);
    return formats::topologyFromDeviceEntries(list.data(), list.size(), "test");
}

TEST(TopologyCodec, GivenCpuAndGpuNodes_WhenEncoded_ThenCountsSplitCpusFromGpus) {
    formats::DeviceEntryList list(handBuilt());

    EXPECT_EQ(list.size(), 3u);
    EXPECT_EQ(list.gpuCount(), 2u);
    EXPECT_EQ(list.cpuCount(), 1u);
}

TEST(TopologyCodec, GivenAHandBuiltTopology_WhenRoundTripped_ThenNodesAndGpuIdsAreKept) {
    auto r = roundTrip(handBuilt());

    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_EQ(r->nodes.size(), 3u);
    EXPECT_EQ(r->source, "test");
    EXPECT_EQ(r->nodes[0].index, 0u);
    EXPECT_EQ(r->nodes[0].gpuId, 0u);
    EXPECT_TRUE(r->nodes[0].isCpu());
    EXPECT_FALSE(r->nodes[0].isGpu());
    EXPECT_EQ(r->nodes[1].gpuId, 0x59eau);
    EXPECT_EQ(r->nodes[2].gpuId, 0x8c2bu);
    EXPECT_EQ(r->gpus().size(), 2u);
    EXPECT_EQ(r->cpus().size(), 1u);
}

TEST(TopologyCodec, GivenGpuProperties_WhenRoundTripped_ThenTheCarriedKeysKeepTheirValues) {
    auto r = roundTrip(handBuilt());

    ASSERT_TRUE(r.ok());
    const Node* g = r->findGpu(0x59ea);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->prop("simd_count"), 416u);
    EXPECT_EQ(g->prop("device_id"), 0x740fu);
    EXPECT_EQ(g->prop("vendor_id"), 0x1002u);
    EXPECT_EQ(g->prop("fw_version"), 78u);
    EXPECT_EQ(g->prop("sdma_fw_version"), 8u);
    EXPECT_EQ(g->renderMinor(), 128);
    EXPECT_EQ(g->hiveId(), 0xabcdef0123ull);
    EXPECT_EQ(g->prop("location_id"), 0x301u);
    EXPECT_EQ(g->prop("gfx_target_version"), 90010u);
    EXPECT_EQ(g->vramSize(), 64ull << 30);
    ASSERT_EQ(g->memBanks.size(), 1u);
    EXPECT_EQ(g->memBanks[0].heapType, 1u);
}

TEST(TopologyCodec, GivenAnOptionalKeyTheNodeLacks_WhenRoundTripped_ThenItStaysAbsent) {
    auto r = roundTrip(handBuilt());

    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->findGpu(0x59ea)->has("num_xcc"));
    EXPECT_FALSE(r->nodes[0].has("location_id"));
}

TEST(TopologyCodec, GivenAKeyCriuRequires_WhenTheNodeLacksIt_ThenItIsStillWrittenAsZero) {
    formats::DeviceEntryList list(handBuilt());

    const KfdDeviceEntry* cpu = list.data()[0];
    EXPECT_TRUE(cpu->has_capability);
    EXPECT_EQ(cpu->capability, 0u);
    EXPECT_TRUE(cpu->has_num_gws);
    EXPECT_TRUE(cpu->has_drm_render_minor);
    EXPECT_FALSE(cpu->has_location_id);
}

TEST(TopologyCodec, GivenXgmiPcieAndOtherLinks_WhenRoundTripped_ThenOnlyXgmiAndPcieAreKept) {
    auto r = roundTrip(handBuilt());

    ASSERT_TRUE(r.ok());
    const Node* g = r->findGpu(0x59ea);
    ASSERT_EQ(g->ioLinks.size(), 2u);
    EXPECT_EQ(g->ioLinks[0].type, static_cast<uint32_t>(LinkType::PciExpress));
    EXPECT_EQ(g->ioLinks[0].nodeFrom, 1u);
    EXPECT_EQ(g->ioLinks[0].nodeTo, 0u);
    EXPECT_EQ(g->ioLinks[1].type, static_cast<uint32_t>(LinkType::Xgmi));
    EXPECT_EQ(g->ioLinks[1].nodeTo, 2u);
    EXPECT_EQ(r->nodes[0].ioLinks.size(), 2u);
}

TEST(TopologyCodec, GivenANodeWithNonzeroGpuIdButNoSimds_WhenEncoded_ThenItsGpuIdIsZero) {
    Topology t = handBuilt();
    t.nodes[0].gpuId = 0x7777; // a CPU node never carries a gpu_id

    formats::DeviceEntryList list(t);

    EXPECT_EQ(list.data()[0]->gpu_id, 0u);
    EXPECT_EQ(list.gpuCount(), 2u);
}

TEST(TopologyCodec, GivenTwoEntriesWithTheSameGpuId_WhenDecoded_ThenImageErrorNamingIt) {
    Topology t = handBuilt();
    t.nodes[2].gpuId = 0x59ea;
    formats::DeviceEntryList list(t);

    auto r = formats::topologyFromDeviceEntries(list.data(), list.size(), "amdgpu-kfd-9.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("0x59ea"));
    EXPECT_THAT(r.error().describe(), HasSubstr("amdgpu-kfd-9.img"));
}

TEST(TopologyCodec, GivenTwoEntriesWithTheSameNodeId_WhenDecoded_ThenImageError) {
    Topology t = handBuilt();
    t.nodes[2].index = 1;
    formats::DeviceEntryList list(t);

    auto r = formats::topologyFromDeviceEntries(list.data(), list.size(), "x");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("node 1"));
}

TEST(TopologyCodec, GivenAnEntryWithoutNodeId_WhenDecoded_ThenImageError) {
    formats::DeviceEntryList list(handBuilt());
    list.data()[1]->has_node_id = false;

    auto r = formats::topologyFromDeviceEntries(list.data(), list.size(), "x");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("node_id"));
}

TEST(TopologyImage, GivenATopology_WhenWrittenAndRead_ThenItRoundTripsUnderItsImageName) {
    testsupport::TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(formats::writeTopologyImage(**store, handBuilt()).ok());
    EXPECT_TRUE((*store)->exists(formats::kTopologyImageName));

    auto r = formats::readTopologyImage(**store);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->source, formats::kTopologyImageName);
    ASSERT_EQ(r->nodes.size(), 3u);
    EXPECT_EQ(r->findGpu(0x8c2b)->renderMinor(), 129);
    EXPECT_EQ(r->findGpu(0x8c2b)->ioLinks.size(), 2u);
}

TEST(TopologyImage, GivenADeviceCountThatDisagreesWithTheEntries_WhenRead_ThenImageError) {
    testsupport::TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    formats::DeviceEntryList list(handBuilt());
    AmdgpuDevinfo info;
    amdgpu_devinfo__init(&info);
    info.has_num_of_devices = true;
    info.num_of_devices = 5;
    info.n_device_entries = list.size();
    info.device_entries = list.data();
    ASSERT_TRUE(formats::writeProtoImage(**store, formats::kTopologyImageName, &info.base).ok());

    auto r = formats::readTopologyImage(**store);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("5"));
    EXPECT_THAT(r.error().describe(), HasSubstr(formats::kTopologyImageName));
}

TEST(TopologyImage, GivenNoTopologyImage_WhenRead_ThenNotFound) {
    testsupport::TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());

    auto r = formats::readTopologyImage(**store);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotFound);
}

} // namespace

#include "temp_dir.h"
#include "topology/synth.h"
#include "topology/sysfs.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using testsupport::TempDir;
using testsupport::writeFile;

using testsupport::expectSameTopology;

TEST(SysfsRoundTrip, SyntheticTreeReadsBackIdentical) {
    TempDir dir;
    topology::Topology t = testsupport::synth(8, 2, 2);
    ASSERT_TRUE(topology::writeKfdTopology(t, dir.path()).ok());
    auto back = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(back.ok()) << back.error().describe();
    expectSameTopology(t, *back);
    EXPECT_TRUE(back->skipped.empty());
    EXPECT_TRUE(back->notes.empty());
}

TEST(SysfsRoundTrip, SecondWriteOfAReadTreeIsIdentical) {
    TempDir a, b;
    ASSERT_TRUE(topology::writeKfdTopology(testsupport::synth(4, 1, 1), a.path()).ok());
    auto first = topology::readKfdTopology(a.path());
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(topology::writeKfdTopology(*first, b.path()).ok());
    auto second = topology::readKfdTopology(b.path());
    ASSERT_TRUE(second.ok());
    expectSameTopology(*first, *second);
    EXPECT_EQ(testsupport::readFile(a / "nodes/1/properties"),
              testsupport::readFile(b / "nodes/1/properties"));
}

TEST(SysfsRoundTrip, PropertiesAreWrittenInKernelKeyOrder) {
    TempDir dir;
    ASSERT_TRUE(topology::writeKfdTopology(testsupport::synth(1), dir.path()).ok());
    std::string props = testsupport::readFile(dir / "nodes/1/properties");
    EXPECT_EQ(props.rfind("cpu_cores_count 0\nsimd_count 416\n", 0), 0u) << props;
    EXPECT_LT(props.find("local_mem_size"), props.find("max_engine_clk_ccompute"));
}

TEST(SysfsReader, MissingNodesDirectoryIsAnError) {
    TempDir dir;
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), base::ErrorCode::Topology);
}

TEST(SysfsReader, EmptyNodesDirectoryIsAnError) {
    TempDir dir;
    ASSERT_EQ(::mkdir((dir / "nodes").c_str(), 0755), 0);
    EXPECT_FALSE(topology::readKfdTopology(dir.path()).ok());
}

TEST(SysfsReader, PropertiesThatIsADirectorySkipsTheNodeAndIsNotACpu) {
    TempDir dir;
    ASSERT_TRUE(topology::writeKfdTopology(testsupport::synth(2), dir.path()).ok());
    std::string props = dir / "nodes/2/properties";
    ASSERT_EQ(::unlink(props.c_str()), 0);
    ASSERT_EQ(::mkdir(props.c_str(), 0755), 0);
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->skipped.size(), 1u);
    EXPECT_NE(t->skipped[0].find("node 2"), std::string::npos) << t->skipped[0];
    EXPECT_EQ(t->gpus().size(), 1u);
    EXPECT_EQ(t->cpus().size(), 1u);
    EXPECT_EQ(t->findIndex(2), nullptr);
}

TEST(SysfsReader, DanglingPropertiesSymlinkSkipsTheNode) {
    TempDir dir;
    ASSERT_TRUE(topology::writeKfdTopology(testsupport::synth(2), dir.path()).ok());
    std::string props = dir / "nodes/1/properties";
    ASSERT_EQ(::unlink(props.c_str()), 0);
    ASSERT_EQ(::symlink((dir / "nowhere").c_str(), props.c_str()), 0);
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->skipped.size(), 1u);
    EXPECT_NE(t->skipped[0].find("node 1: properties"), std::string::npos) << t->skipped[0];
    EXPECT_EQ(t->gpus().size(), 1u);
    // The CPU node's io_link to the unreadable node is reported, not followed.
    bool noted = false;
    for (const std::string& n : t->notes)
        noted |= n.find("io_link to node 1") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(SysfsReader, UnreadableGpuIdSkipsTheNode) {
    TempDir dir;
    ASSERT_TRUE(topology::writeKfdTopology(testsupport::synth(1), dir.path()).ok());
    std::string gpuId = dir / "nodes/1/gpu_id";
    ASSERT_EQ(::unlink(gpuId.c_str()), 0);
    ASSERT_EQ(::mkdir(gpuId.c_str(), 0755), 0);
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->gpus().size(), 0u);
    EXPECT_EQ(t->cpus().size(), 1u);
    ASSERT_EQ(t->skipped.size(), 1u);
}

TEST(SysfsReader, EveryNodeUnreadableIsAnError) {
    TempDir dir;
    writeFile(dir / "nodes/0/name", "\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message().find("node 0"), std::string::npos);
}

TEST(SysfsReader, GpuWithoutGpuIdFileGetsAStableDerivedId) {
    TempDir dir;
    writeFile(dir / "nodes/0/properties", "cpu_cores_count 8\nsimd_count 0\n");
    writeFile(dir / "nodes/1/properties",
              "cpu_cores_count 0\nsimd_count 64\nlocation_id 768\ndevice_id 29711\n");
    auto a = topology::readKfdTopology(dir.path());
    auto b = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->gpus().size(), 1u);
    EXPECT_NE(a->gpus()[0]->gpuId, 0u);
    EXPECT_EQ(a->gpus()[0]->gpuId, b->gpus()[0]->gpuId);
    EXPECT_TRUE(a->gpus()[0]->syntheticGpuId);
    ASSERT_EQ(a->notes.size(), 1u);
    EXPECT_NE(a->notes[0].find("derived gpu_id"), std::string::npos);
}

TEST(SysfsReader, DuplicateGpuIdIsRenumberedWithANote) {
    TempDir dir;
    for (int n : {1, 2}) {
        writeFile(dir / ("nodes/" + std::to_string(n) + "/properties"), "simd_count 64\n");
        writeFile(dir / ("nodes/" + std::to_string(n) + "/gpu_id"), "4660\n");
    }
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->gpus().size(), 2u);
    EXPECT_EQ(t->gpus()[0]->gpuId, 4660u);
    EXPECT_NE(t->gpus()[1]->gpuId, 4660u);
    ASSERT_EQ(t->notes.size(), 1u);
    EXPECT_NE(t->notes[0].find("0x1234 is already used"), std::string::npos) << t->notes[0];
}

TEST(SysfsReader, NonNumericValuesAreKeptAsText) {
    TempDir dir;
    writeFile(dir / "nodes/0/properties", "cpu_cores_count 4\nodd_key some text\n");
    writeFile(dir / "nodes/0/caches/7/properties", "level 1\nsibling_map 1,0,0,0\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    const topology::Node& n = t->nodes[0];
    EXPECT_EQ(n.textProperties.at("odd_key"), "some text");
    ASSERT_EQ(n.caches.size(), 1u);
    EXPECT_EQ(n.caches[0].textProperties.at("sibling_map"), "1,0,0,0");
    EXPECT_EQ(n.caches[0].dirIndex, 7);
    TempDir out;
    ASSERT_TRUE(topology::writeKfdTopology(*t, out.path()).ok());
    EXPECT_EQ(testsupport::readFile(out / "nodes/0/caches/7/properties"),
              "level 1\nsibling_map 1,0,0,0\n");
}

TEST(SysfsReader, VramComesFromFrameBufferBanksWhenLocalMemSizeIsZero) {
    TempDir dir;
    writeFile(dir / "nodes/1/properties", "simd_count 64\nlocal_mem_size 0\n");
    writeFile(dir / "nodes/1/gpu_id", "7\n");
    writeFile(dir / "nodes/1/mem_banks/0/properties", "heap_type 1\nsize_in_bytes 1000\n");
    writeFile(dir / "nodes/1/mem_banks/1/properties", "heap_type 2\nsize_in_bytes 24\n");
    writeFile(dir / "nodes/1/mem_banks/2/properties", "heap_type 0\nsize_in_bytes 999999\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->gpus()[0]->vramSize(), 1024u);
}

TEST(SysfsReader, LocalMemSizeWinsWhenNonzero) {
    TempDir dir;
    writeFile(dir / "nodes/1/properties", "simd_count 64\nlocal_mem_size 5000\n");
    writeFile(dir / "nodes/1/gpu_id", "7\n");
    writeFile(dir / "nodes/1/mem_banks/0/properties", "heap_type 1\nsize_in_bytes 1000\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->gpus()[0]->vramSize(), 5000u);
}

TEST(SysfsReader, LinkPropertiesAreAllKept) {
    TempDir dir;
    writeFile(dir / "nodes/0/properties", "cpu_cores_count 4\n");
    writeFile(dir / "nodes/0/p2p_links/0/properties",
              "type 2\nnode_from 0\nnode_to 1\nweight 52\nrecommended_sdma_engine_id_mask 3\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->nodes[0].p2pLinks.size(), 1u);
    const topology::Link& l = t->nodes[0].p2pLinks[0];
    EXPECT_EQ(l.weight, 52u);
    EXPECT_EQ(l.properties.at("recommended_sdma_engine_id_mask"), 3u);
}

TEST(SysfsReader, GenerationIdAndSystemPropertiesAreRead) {
    TempDir dir;
    writeFile(dir / "generation_id", "42\n");
    writeFile(dir / "system_properties", "platform_oem 1\nplatform_id 2\nplatform_rev 3\n");
    writeFile(dir / "nodes/0/properties", "cpu_cores_count 4\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->generationId, 42u);
    EXPECT_EQ(t->systemProperties.at("platform_rev"), 3u);
}

TEST(SysfsReader, AFileLargerThanOneReadIsReadWhole) {
    // The reader reads a file with one read() while it fits its buffer; a longer one (a node
    // with many keys) must still be read to its end.
    TempDir dir;
    std::string text = "cpu_cores_count 4\n";
    for (int i = 0; i < 600; ++i)
        text += "padding_key_" + std::to_string(i) + " " + std::to_string(i) + "\n";
    text += "last_key 12345\n";
    ASSERT_GT(text.size(), 8192u);
    writeFile(dir / "nodes/0/properties", text);
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->nodes[0].prop("last_key"), 12345u);
    EXPECT_EQ(t->nodes[0].properties.size(), 602u);
}

TEST(SysfsReader, OnlyPlainNumbersNameNodesAndLinks) {
    TempDir dir;
    writeFile(dir / "nodes/0/properties", "cpu_cores_count 4\n");
    writeFile(dir / "nodes/00/properties", "cpu_cores_count 8\n");
    writeFile(dir / "nodes/x1/properties", "cpu_cores_count 8\n");
    writeFile(dir / "nodes/0/io_links/01/properties", "type 2\nnode_to 0\n");
    writeFile(dir / "nodes/0/io_links/3/properties", "type 11\nnode_to 0\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->nodes.size(), 1u);
    EXPECT_EQ(t->nodes[0].prop("cpu_cores_count"), 4u);
    ASSERT_EQ(t->nodes[0].ioLinks.size(), 1u);
    EXPECT_EQ(t->nodes[0].ioLinks[0].type, 11u);
}

TEST(SysfsReader, ManyNodesAreReadInOrderWithTheirNotes) {
    // Nodes are read by two threads; the result keeps node order, skipped nodes and notes.
    TempDir dir;
    for (int i = 0; i < 20; ++i) {
        std::string node = "nodes/" + std::to_string(i);
        if (i == 7)
            continue; // no properties: skipped
        writeFile(dir / (node + "/properties"), "simd_count 64\n");
        writeFile(dir / (node + "/gpu_id"), std::to_string(100 + i) + "\n");
        writeFile(dir / (node + "/io_links/0/properties"),
                  "type 11\nnode_to " + std::to_string(i == 19 ? 99 : (i + 1) % 20) + "\n");
    }
    writeFile(dir / "nodes/7/name", "x\n");
    auto t = topology::readKfdTopology(dir.path());
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->nodes.size(), 19u);
    for (size_t k = 0; k < t->nodes.size(); ++k) {
        uint32_t index = static_cast<uint32_t>(k < 7 ? k : k + 1);
        EXPECT_EQ(t->nodes[k].index, index);
        EXPECT_EQ(t->nodes[k].gpuId, 100u + index);
    }
    ASSERT_EQ(t->skipped.size(), 1u);
    EXPECT_NE(t->skipped[0].find("node 7"), std::string::npos);
    // node 6 links to the missing node 7 and node 19 to 99.
    ASSERT_EQ(t->notes.size(), 2u);
    EXPECT_NE(t->notes[0].find("node 6: io_link to node 7"), std::string::npos) << t->notes[0];
    EXPECT_NE(t->notes[1].find("node 19: io_link to node 99"), std::string::npos) << t->notes[1];
}

} // namespace

// The KFD sysfs reader on a tree held in memory (topology::sysfs::MemoryTree, what the in-memory
// fuzz target feeds it) gives what it gives on the same tree on disk: the same topology, the
// same notes and skipped nodes, the same errors.
#include "memory_tree_copy.h"
#include "temp_dir.h"
#include "topology/sysfs.h"
#include "topology/sysfs_tree.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>

namespace {

namespace fs = std::filesystem;
using testsupport::TempDir;
using testsupport::writeFile;

void expectSameLinks(const std::vector<topology::Link>& a, const std::vector<topology::Link>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].properties, b[i].properties);
        EXPECT_EQ(a[i].textProperties, b[i].textProperties);
        EXPECT_EQ(a[i].weight, b[i].weight);
    }
}

// Reads `root` from disk and from a memory copy of it; both readings must agree in every field.
void expectSameReading(const std::string& root) {
    SCOPED_TRACE(root);
    topology::sysfs::MemoryTree tree;
    std::error_code ec;
    if (fs::exists(root, ec)) {
        ASSERT_EQ(testsupport::copyIntoMemory(&tree, root), "");
    }
    auto disk = topology::readKfdTopology(root);
    auto memory = topology::readKfdTopology(tree.root(), root);
    testsupport::expectSameReading(disk, memory);
    if (!disk.ok() || !memory.ok())
        return;
    for (size_t i = 0; i < disk->nodes.size() && i < memory->nodes.size(); ++i) {
        const topology::Node& x = disk->nodes[i];
        const topology::Node& y = memory->nodes[i];
        EXPECT_EQ(x.syntheticGpuId, y.syntheticGpuId);
        expectSameLinks(x.ioLinks, y.ioLinks);
        expectSameLinks(x.p2pLinks, y.p2pLinks);
        ASSERT_EQ(x.caches.size(), y.caches.size());
        for (size_t c = 0; c < x.caches.size(); ++c)
            EXPECT_EQ(x.caches[c].dirIndex, y.caches[c].dirIndex);
        ASSERT_EQ(x.memBanks.size(), y.memBanks.size());
        for (size_t m = 0; m < x.memBanks.size(); ++m)
            EXPECT_EQ(x.memBanks[m].textProperties, y.memBanks[m].textProperties);
    }
}

// A synthetic machine written under dir/kfd; returns that root.
std::string written(const TempDir& dir, const topology::Topology& t) {
    std::string root = dir / "kfd";
    EXPECT_TRUE(topology::writeKfdTopology(t, root).ok());
    return root;
}

TEST(SysfsMemoryTree, SyntheticMachinesReadTheSame) {
    // 10 nodes (8 GPUs in 2 hives, 2 CPUs): the reader shares them between threads.
    for (const topology::Topology& t : {testsupport::synth(1), testsupport::synth(8, 2, 2)}) {
        TempDir dir;
        expectSameReading(written(dir, t));
    }
}

TEST(SysfsMemoryTree, DamagedTreesReadTheSame) {
    // Writing a tree is the slow part, so each tree carries several damages, on different
    // nodes; the first two have 9 nodes, which the reader shares between threads.
    struct Case {
        topology::Topology machine;
        std::function<void(const std::string&)> damage;
        int skipped; // nodes the reading skips, -1 when it fails
    };
    const std::vector<Case> cases = {
        {testsupport::synth(8, 0, 1),
         [](const std::string& r) {
             fs::remove(r + "/nodes/1/gpu_id");
             fs::remove(r + "/nodes/1/mem_banks/0/properties");
             fs::remove(r + "/nodes/2/properties");
             writeFile(r + "/nodes/3/gpu_id", "twelve\n");
             writeFile(r + "/nodes/4/properties", "\n\n");
             fs::remove_all(r + "/nodes/5");
             writeFile(r + "/nodes/5", "not a node directory\n");
             writeFile(r + "/nodes/6/io_links/0/properties", "node_to 77\n");
             writeFile(r + "/nodes/7/name", "gfx942  \n");
             writeFile(r + "/nodes/8/properties", std::string(9000, 'k') + " 1\nsimd_count 8\n");
             fs::create_directory(r + "/nodes/07"); // not node names
             fs::create_directory(r + "/nodes/1234567890");
             fs::create_directory(r + "/nodes/99"); // a node without properties
             writeFile(r + "/generation_id", "x\n");
             writeFile(r + "/system_properties", "platform_id 7\nname x y\n");
         },
         5},
        {testsupport::synth(8, 0, 1),
         [](const std::string& r) {
             fs::remove(r + "/nodes/2/properties");
             fs::create_directory(r + "/nodes/2/properties"); // read as a file: EISDIR
             fs::remove_all(r + "/nodes/3/io_links");
             writeFile(r + "/nodes/3/io_links", "a file where a directory belongs\n"); // ENOTDIR
         },
         1},
        {testsupport::synth(1), [](const std::string& r) { fs::remove_all(r + "/nodes"); }, -1},
        {testsupport::synth(1),
         [](const std::string& r) {
             fs::remove_all(r + "/nodes");
             fs::create_directory(r + "/nodes");
         },
         -1},
        {testsupport::synth(1),
         [](const std::string& r) {
             fs::remove(r + "/nodes/0/properties");
             fs::remove(r + "/nodes/1/properties");
         },
         -1},
        {testsupport::synth(1), [](const std::string& r) { fs::remove_all(r); }, -1},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE("case " + std::to_string(i));
        TempDir dir;
        std::string root = written(dir, cases[i].machine);
        cases[i].damage(root);
        expectSameReading(root);
        // The damage is what the reader met: the nodes it skips, or its failure.
        auto disk = topology::readKfdTopology(root);
        ASSERT_EQ(disk.ok(), cases[i].skipped >= 0);
        if (disk.ok()) {
            EXPECT_EQ(disk->skipped.size(), static_cast<size_t>(cases[i].skipped));
        }
    }
}

TEST(SysfsMemoryTree, CapturedMachinesReadTheSameWhenPresent) {
    // The captures of real machines (../shared/fixtures/topology) are not part of the
    // repository; the synthetic and damaged trees above stand without them.
    std::error_code ec;
    if (!fs::is_directory(CRIU_AMDGPU_SHARED_FIXTURES, ec))
        GTEST_SKIP() << "no captures at " << CRIU_AMDGPU_SHARED_FIXTURES;
    size_t compared = 0;
    for (const auto& entry : fs::directory_iterator(CRIU_AMDGPU_SHARED_FIXTURES, ec))
        if (fs::is_directory(entry.path() / "nodes", ec)) {
            expectSameReading(entry.path().string());
            ++compared;
        }
    EXPECT_GT(compared, 0u) << "no machine (a folder with nodes/) in "
                            << CRIU_AMDGPU_SHARED_FIXTURES;
}

TEST(SysfsMemoryTree, ErrorsAreThoseOfTheSystemCalls) {
    topology::sysfs::MemoryTree tree;
    ASSERT_TRUE(tree.addFile("a/b/file", "text"));
    ASSERT_TRUE(tree.addDir("a/c/"));
    EXPECT_FALSE(tree.addFile("a/b", "a directory already"));
    EXPECT_FALSE(tree.addFile("a/b/file/below", "under a file"));
    EXPECT_FALSE(tree.addDir("a/b/file/d"));
    EXPECT_FALSE(tree.addDir("a/../e"));
    int err = 0;
    std::string out = "old";
    EXPECT_EQ(tree.root().readFile("a/b", &out), EISDIR);
    EXPECT_EQ(out, "");
    EXPECT_EQ(tree.root().readFile("a/missing", &out), ENOENT);
    EXPECT_EQ(tree.root().readFile("a/b/file/x", &out), ENOTDIR);
    EXPECT_EQ(tree.root().readFile("/a//b/./file", &out), 0);
    EXPECT_EQ(out, "text");
    EXPECT_EQ(tree.root().openDir("a/b/file", &err), nullptr);
    EXPECT_EQ(err, ENOTDIR);
    EXPECT_EQ(tree.root().openDir("x", &err), nullptr);
    EXPECT_EQ(err, ENOENT);
    auto a = tree.root().openDir("a", &err);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(err, 0);
    ASSERT_TRUE(tree.addFile("a/b/file", "overwritten"));
    EXPECT_EQ(a->readFile("b/file", &out), 0);
    EXPECT_EQ(out, "overwritten");
}

// The same names asked of a tree on disk (through the system calls) and of its memory copy:
// links relative, absolute, chained, looping and dangling, "." and "..", files used as
// directories. Every answer, errno and bytes, must be the same.
TEST(SysfsMemoryTree, LinksAndDotsAreWalkedAsTheKernelWalksThem) {
    TempDir dir;
    const std::string t = dir.path();
    writeFile(t + "/d/file", "text");
    fs::create_directories(t + "/d/sub/deeper");
    writeFile(t + "/d/sub/deeper/0", "zero");
    fs::create_symlink("d/file", t + "/link-to-file");
    fs::create_symlink("d", t + "/link-to-dir");
    fs::create_symlink(t + "/d/sub", t + "/absolute");
    fs::create_symlink("../d/file", t + "/d/up");
    fs::create_symlink("chain2", t + "/chain1");
    fs::create_symlink("link-to-dir/sub", t + "/chain2");
    fs::create_symlink("loop-b", t + "/loop-a");
    fs::create_symlink("loop-a", t + "/loop-b");
    fs::create_symlink("nowhere", t + "/dangling");
    fs::create_symlink(".", t + "/d/sub/self");
    fs::create_symlink("../../d/file/x", t + "/d/sub/through-file");
    topology::sysfs::MemoryTree tree;
    ASSERT_EQ(testsupport::copyIntoMemory(&tree, t), "");
    const topology::sysfs::Dir& disk = topology::sysfs::realFileSystem();
    const topology::sysfs::Dir& memory = tree.root();
    auto sorted = [](std::vector<std::string> v) {
        std::sort(v.begin(), v.end());
        return v;
    };
    for (std::string name : {"d/file",
                             "link-to-file",
                             "link-to-dir/file",
                             "link-to-dir",
                             "absolute",
                             "absolute/deeper",
                             "d/up",
                             "chain1",
                             "chain1/deeper/0",
                             "loop-a",
                             "loop-a/x",
                             "dangling",
                             "dangling/x",
                             "d/sub/self/self/..",
                             "d/sub/self/deeper/../../file",
                             "link-to-dir/../d/file",
                             "d/file/x",
                             "d/file/..",
                             "link-to-file/x",
                             "d/sub/through-file",
                             "missing",
                             "d"}) {
        SCOPED_TRACE(name);
        std::string path = t + "/" + name;
        std::string a = "old", b = "old";
        EXPECT_EQ(disk.readFile(path.c_str(), &a), memory.readFile(path.c_str(), &b));
        EXPECT_EQ(a, b);
        a = b = "old";
        EXPECT_EQ(disk.readLink(path.c_str(), &a), memory.readLink(path.c_str(), &b));
        EXPECT_EQ(a, b);
        a = b = "old";
        EXPECT_EQ(disk.resolvedName(path.c_str(), &a), memory.resolvedName(path.c_str(), &b));
        EXPECT_EQ(a, b);
        int errA = -1, errB = -1;
        std::unique_ptr<topology::sysfs::Dir> x = disk.openDir(path.c_str(), &errA);
        std::unique_ptr<topology::sysfs::Dir> y = memory.openDir(path.c_str(), &errB);
        EXPECT_EQ(errA, errB);
        ASSERT_EQ(x == nullptr, y == nullptr);
        if (x) {
            EXPECT_EQ(sorted(x->entryNames(&errA)), sorted(y->entryNames(&errB)));
            EXPECT_EQ(errA, errB);
            // Names below an opened directory walk from there, ".." included.
            EXPECT_EQ(x->resolvedName("..", &a), y->resolvedName("..", &b));
            EXPECT_EQ(a, b);
        }
    }
    // Spot checks of what the comparison above holds the memory tree to.
    std::string out;
    EXPECT_EQ(memory.readFile((t + "/loop-a").c_str(), &out), ELOOP);
    EXPECT_EQ(memory.readLink((t + "/d").c_str(), &out), EINVAL);
    EXPECT_EQ(memory.readLink((t + "/chain1").c_str(), &out), 0);
    EXPECT_EQ(out, "chain2");
    EXPECT_EQ(memory.resolvedName((t + "/chain1").c_str(), &out), 0);
    EXPECT_EQ(out, "sub");
}

TEST(SysfsMemoryTree, BuildingFollowsLinksToDirectoriesAndMakesNoneThroughADanglingOne) {
    topology::sysfs::MemoryTree tree;
    ASSERT_TRUE(tree.addDir("real"));
    ASSERT_TRUE(tree.addLink("alias", "real"));
    ASSERT_TRUE(tree.addLink("dangling", "/nowhere"));
    EXPECT_FALSE(tree.addLink("alias", "elsewhere")); // exists
    EXPECT_TRUE(tree.addFile("alias/file", "through the link"));
    std::string out;
    EXPECT_EQ(tree.root().readFile("real/file", &out), 0);
    EXPECT_EQ(out, "through the link");
    EXPECT_FALSE(tree.addFile("dangling/file", "x"));
    EXPECT_FALSE(tree.addFile("alias", "over a link"));
    int err = 0;
    EXPECT_EQ(tree.root().openDir("nowhere", &err), nullptr);
    EXPECT_EQ(err, ENOENT);
    EXPECT_FALSE(tree.addLink("a/../b", "real"));
}

TEST(SysfsMemoryTree, NumberedEntriesAreTheNumericNamesInOrder) {
    topology::sysfs::MemoryTree tree;
    for (const char* name : {"10", "2", "0", "07", "x1", "123456789", "1234567890", "3"})
        ASSERT_TRUE(tree.addDir(std::string("d/") + name));
    int err = 1;
    auto d = tree.root().openDir("d", &err);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->numberedEntries(&err), (std::vector<unsigned>{0, 2, 3, 10, 123456789}));
    EXPECT_EQ(err, 0);
}

} // namespace

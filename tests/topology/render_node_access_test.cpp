// Probing a GPU's render node by what the kernel answers: each answer (opened, refused by the
// devices cgroup, no driver, absent and unmakeable, something else at the path) read right, the
// probe node of an absent node removed again, and the node made with /dev/kfd's owner and mode.

#include "topology/render_node_access.h"

#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <set>

namespace {

using testing::HasSubstr;

/// A /dev held in memory and a kernel that answers opens by device number.
class ScriptedNodes final : public topology::DeviceNodeCalls {
public:
    std::map<std::string, struct stat> files;
    std::map<dev_t, int> openErrors; ///< device number -> errno its open fails with
    int mknodError = 0;
    std::vector<std::string> made, unlinked;
    int openFds = 0;

    void addNode(const std::string& path, dev_t rdev, mode_t mode = 0666, uid_t uid = 0,
                 gid_t gid = 0) {
        struct stat st {};
        st.st_mode = S_IFCHR | mode;
        st.st_rdev = rdev;
        st.st_uid = uid;
        st.st_gid = gid;
        files[path] = st;
    }
    int statPath(const std::string& path, struct stat* st) override {
        auto it = files.find(path);
        if (it == files.end())
            return -ENOENT;
        *st = it->second;
        return 0;
    }
    int openNode(const std::string& path) override {
        auto it = files.find(path);
        if (it == files.end())
            return -ENOENT;
        auto err = openErrors.find(it->second.st_rdev);
        if (err != openErrors.end())
            return -err->second;
        ++openFds;
        return 100;
    }
    void closeNode(int) override { --openFds; }
    int makeCharNode(const std::string& path, mode_t mode, dev_t rdev, uid_t uid,
                     gid_t gid) override {
        if (mknodError)
            return -mknodError;
        if (files.count(path))
            return -EEXIST;
        addNode(path, rdev, mode, uid, gid);
        made.push_back(path);
        return 0;
    }
    int unlinkPath(const std::string& path) override {
        if (!files.erase(path))
            return -ENOENT;
        unlinked.push_back(path);
        return 0;
    }
    int makeDir(const std::string&, mode_t) override { return 0; }
};

TEST(RenderNodeAccess, GivenEachKernelAnswer_ThenTheProbeReadsIt) {
    ScriptedNodes dev;
    dev.addNode("/d/dri/renderD128", topology::renderNodeRdev(128));
    dev.addNode("/d/dri/renderD129", topology::renderNodeRdev(129));
    dev.addNode("/d/dri/renderD130", topology::renderNodeRdev(130));
    dev.addNode("/d/dri/renderD131", makedev(1, 3)); // something else at the path
    dev.openErrors[topology::renderNodeRdev(129)] = EPERM;
    dev.openErrors[topology::renderNodeRdev(130)] = ENXIO;

    topology::NodeProbe opens = topology::probeRenderNode(dev, "/d", 128);
    EXPECT_EQ(opens.access, topology::NodeAccess::Opens);
    EXPECT_TRUE(opens.present);
    EXPECT_TRUE(topology::probeAllows(opens, false));
    topology::NodeProbe denied = topology::probeRenderNode(dev, "/d", 129);
    EXPECT_EQ(denied.access, topology::NodeAccess::Denied);
    EXPECT_THAT(denied.detail, HasSubstr("the device cgroup does not give it"));
    EXPECT_FALSE(topology::probeAllows(denied, true));
    topology::NodeProbe noDriver = topology::probeRenderNode(dev, "/d", 130);
    EXPECT_EQ(noDriver.access, topology::NodeAccess::NoDriver);
    EXPECT_FALSE(topology::probeAllows(noDriver, false)) << "a real GPU needs its driver";
    EXPECT_TRUE(topology::probeAllows(noDriver, true)) << "the mock has no driver behind 226";
    topology::NodeProbe other = topology::probeRenderNode(dev, "/d", 131);
    EXPECT_EQ(other.access, topology::NodeAccess::Other);
    EXPECT_THAT(other.detail, HasSubstr("is not the character device 226:131"));
    EXPECT_EQ(dev.openFds, 0) << "a probe left an fd open";
    EXPECT_TRUE(dev.made.empty());
}

TEST(RenderNodeAccess, GivenAnAbsentNode_ThenAProbeNodeAnswersAndIsRemovedUnlessOnlyReported) {
    ScriptedNodes dev;
    dev.openErrors[topology::renderNodeRdev(141)] = EACCES;
    topology::NodeProbe allowed = topology::probeRenderNode(dev, "/d", 140);
    EXPECT_EQ(allowed.access, topology::NodeAccess::Opens);
    EXPECT_FALSE(allowed.present);
    topology::NodeProbe refused = topology::probeRenderNode(dev, "/d", 141);
    EXPECT_EQ(refused.access, topology::NodeAccess::Denied);
    EXPECT_THAT(refused.detail, HasSubstr("/d/dri/renderD141 absent; a node of 226:141 refused"));
    ASSERT_EQ(dev.made.size(), 2u);
    EXPECT_EQ(dev.unlinked, dev.made) << "each probe node removed";
    EXPECT_TRUE(dev.files.empty()) << "a probe node was left";
    topology::NodeProbe reported =
        topology::probeRenderNode(dev, "/d", 140, topology::AbsentNode::Report);
    EXPECT_EQ(reported.access, topology::NodeAccess::Missing);
    EXPECT_EQ(dev.made.size(), 2u) << "a report makes no node";
    dev.mknodError = EPERM;
    topology::NodeProbe unmakeable = topology::probeRenderNode(dev, "/d", 140);
    EXPECT_EQ(unmakeable.access, topology::NodeAccess::Missing);
    EXPECT_THAT(unmakeable.detail, HasSubstr("no node of 226:140 can be made in /d"));
}

TEST(RenderNodeAccess, GivenAnAbsentNode_WhenEnsured_ThenItIsMadeWithKfdsOwnerAndMode) {
    ScriptedNodes dev;
    dev.addNode("/d/kfd", makedev(240, 0), 0660, 0, 44);
    auto made = topology::ensureRenderNode(dev, "/d", 152);
    ASSERT_TRUE(made.ok()) << made.error().describe();
    EXPECT_TRUE(made.value());
    const struct stat& st = dev.files.at("/d/dri/renderD152");
    EXPECT_EQ(st.st_rdev, topology::renderNodeRdev(152));
    EXPECT_EQ(st.st_mode & 07777, 0660u);
    EXPECT_EQ(st.st_gid, 44u);
    auto again = topology::ensureRenderNode(dev, "/d", 152);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again.value()) << "a node that is there is not made again";
    dev.files["/d/dri/renderD153"] = dev.files.at("/d/kfd");
    auto wrong = topology::ensureRenderNode(dev, "/d", 153);
    ASSERT_FALSE(wrong.ok());
    EXPECT_THAT(wrong.error().describe(),
                HasSubstr("/d/dri/renderD153 is not the character device 226:153"));
    dev.mknodError = EROFS;
    auto readOnly = topology::ensureRenderNode(dev, "/d", 154);
    ASSERT_FALSE(readOnly.ok());
    EXPECT_THAT(readOnly.error().describe(),
                HasSubstr("cannot make render node /d/dri/renderD154 (226:154)"));
}

// The system's calls on a real directory: an absent node's probe node is made and removed.
TEST(RenderNodeAccess, GivenTheSystemsCalls_ThenAnAbsentNodesProbeLeavesNothingBehind) {
    testsupport::TempDir dir;
    std::filesystem::create_directories(dir.path() + "/dri");
    topology::NodeProbe probe =
        topology::probeRenderNode(topology::systemDeviceNodeCalls(), dir.path(), 250);
    EXPECT_NE(probe.access, topology::NodeAccess::Missing)
        << probe.detail << " (this test runs as root)";
    size_t entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
        (void)e;
        ++entries;
    }
    EXPECT_EQ(entries, 1u) << "only dri/ is left";
}

// A restored /dev comes from the checkpoint: a dri that is a link is refused, nothing is made
// where it leads, and a kfd that is a link to some file lends no owner or mode.
TEST(RenderNodeAccess, GivenARestoredDevWhoseDriIsALink_WhenEnsured_ThenNothingIsMadeThroughIt) {
    testsupport::TempDir dir;
    std::filesystem::create_directories(dir / "dev");
    std::filesystem::create_directories(dir / "elsewhere");
    std::filesystem::create_directory_symlink(dir / "elsewhere", dir / "dev/dri");
    auto made = topology::ensureRenderNode(topology::systemDeviceNodeCalls(), dir / "dev", 250);
    ASSERT_FALSE(made.ok());
    EXPECT_THAT(made.error().describe(), HasSubstr(dir / "dev/dri is a symbolic link"));
    EXPECT_TRUE(std::filesystem::is_empty(dir / "elsewhere"));
}

TEST(RenderNodeAccess, GivenTheSystemsCalls_WhenAskedThroughALinkedDirectory_ThenTheyRefuse) {
    testsupport::TempDir dir;
    std::filesystem::create_directories(dir / "elsewhere");
    std::filesystem::create_directory_symlink(dir / "elsewhere", dir / "dri");
    topology::DeviceNodeCalls& calls = topology::systemDeviceNodeCalls();
    EXPECT_EQ(calls.makeCharNode(dir / "dri/renderD250", 0666, topology::renderNodeRdev(250), 0, 0),
              -ENOTDIR);
    EXPECT_EQ(calls.makeDir(dir / "dri/sub", 0755), -ENOTDIR);
    EXPECT_TRUE(std::filesystem::is_empty(dir / "elsewhere"));
}

TEST(RenderNodeAccess, GivenAKfdThatIsALinkToAFile_WhenEnsured_ThenTheNodeIsRootsAndWorldUsable) {
    testsupport::TempDir dir;
    testsupport::writeFile(dir / "target", "");
    ASSERT_EQ(chown((dir / "target").c_str(), 1234, 1234), 0);
    ASSERT_EQ(chmod((dir / "target").c_str(), 0604), 0);
    std::filesystem::create_directories(dir / "dev");
    std::filesystem::create_symlink(dir / "target", dir / "dev/kfd");
    auto made = topology::ensureRenderNode(topology::systemDeviceNodeCalls(), dir / "dev", 250);
    ASSERT_TRUE(made.ok()) << made.error().describe() << " (this test runs as root)";
    struct stat st;
    ASSERT_EQ(lstat((dir / "dev/dri/renderD250").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0666u);
    EXPECT_EQ(st.st_uid, 0u);
}

} // namespace

// checkTrustedPath: the rule sshd and sudo apply to their own files, held to paths made here;
// openTrustedPath: the object judged is the one held and read, and nothing is opened to judge it.
#include "base/trusted_path.h"
#include "open_watch.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

class TrustedPathTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/trusted-path-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl; // 0700, ours, under root's sticky /tmp
    }
    void TearDown() override { fs::remove_all(root_); }

    std::string makeFile(const std::string& name, mode_t mode) {
        std::string path = root_ + "/" + name;
        int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
        EXPECT_GE(fd, 0);
        close(fd);
        EXPECT_EQ(chmod(path.c_str(), mode), 0);
        return path;
    }
    std::string makeDir(const std::string& name, mode_t mode) {
        std::string path = root_ + "/" + name;
        EXPECT_EQ(mkdir(path.c_str(), 0700), 0);
        EXPECT_EQ(chmod(path.c_str(), mode), 0);
        return path;
    }

    std::string root_;
};

std::string failure(const base::Result<void>& r) {
    return r.ok() ? "" : r.error().describe();
}

TEST_F(TrustedPathTest, OwnFileWritableOnlyByOwnerIsTrusted) {
    auto file = makeFile("options", 0644);
    EXPECT_TRUE(base::checkTrustedPath(file, "options-file", base::TrustedKind::File).ok());
    auto dir = makeDir("backends", 0755);
    EXPECT_TRUE(base::checkTrustedPath(dir, "backend-dir", base::TrustedKind::Directory).ok());
}

TEST_F(TrustedPathTest, FileWritableByOthersIsRefusedNamingOptionAndMode) {
    auto file = makeFile("options", 0666);
    auto r = base::checkTrustedPath(file, "options-file", base::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::Config);
    EXPECT_NE(failure(r).find("options-file '" + file + "'"), std::string::npos) << failure(r);
    EXPECT_NE(failure(r).find("writable by group or others (mode 0666)"), std::string::npos)
        << failure(r);
    auto groupOnly = makeFile("group", 0620);
    EXPECT_FALSE(base::checkTrustedPath(groupOnly, "config", base::TrustedKind::File).ok());
}

TEST_F(TrustedPathTest, DirectoryAboveWritableByOthersIsRefusedNamingIt) {
    auto open = makeDir("open", 0777);
    auto inner = open + "/backends";
    ASSERT_EQ(mkdir(inner.c_str(), 0755), 0);
    auto r = base::checkTrustedPath(inner, "backend-dir", base::TrustedKind::Directory);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("its directory '" + open + "' is writable by group or others"),
              std::string::npos)
        << failure(r);
}

TEST_F(TrustedPathTest, RootsStickyDirectoryAboveIsAccepted) {
    if (geteuid() != 0)
        GTEST_SKIP() << "a sticky directory owned by root can only be made by root";
    auto sticky = makeDir("sticky", 01777);
    auto file = sticky + "/mock-root";
    ASSERT_EQ(mkdir(file.c_str(), 0755), 0);
    EXPECT_TRUE(base::checkTrustedPath(file, "mock-root", base::TrustedKind::Directory).ok());
}

TEST_F(TrustedPathTest, FileOfAnotherUserIsRefused) {
    if (geteuid() != 0)
        GTEST_SKIP() << "giving a file to another user needs root";
    auto file = makeFile("config.yaml", 0644);
    ASSERT_EQ(chown(file.c_str(), 65534, 65534), 0);
    auto r = base::checkTrustedPath(file, "config", base::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("is owned by uid 65534"), std::string::npos) << failure(r);

    auto dir = makeDir("theirs", 0755);
    ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0);
    auto inside = makeFile("theirs/key.pem", 0600);
    auto nested = base::checkTrustedPath(inside, "content-key", base::TrustedKind::File);
    ASSERT_FALSE(nested.ok());
    EXPECT_NE(failure(nested).find("its directory '" + dir + "' is owned by uid 65534"),
              std::string::npos)
        << failure(nested);
}

TEST_F(TrustedPathTest, LinkIsJudgedByWhatItPointsTo) {
    auto open = makeDir("open", 0777);
    auto target = open + "/backends";
    ASSERT_EQ(mkdir(target.c_str(), 0755), 0);
    auto link = root_ + "/link";
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    auto r = base::checkTrustedPath(link, "backend-dir", base::TrustedKind::Directory);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("backend-dir '" + link + "'"), std::string::npos) << failure(r);
    EXPECT_NE(failure(r).find("'" + open + "'"), std::string::npos) << failure(r);
}

TEST_F(TrustedPathTest, WrongKindAndMissingPathAreRefused) {
    auto file = makeFile("plain", 0644);
    auto notDir = base::checkTrustedPath(file, "backend-dir", base::TrustedKind::Directory);
    ASSERT_FALSE(notDir.ok());
    EXPECT_NE(failure(notDir).find("is not a directory"), std::string::npos) << failure(notDir);
    auto notFile = base::checkTrustedPath(root_, "config", base::TrustedKind::File);
    ASSERT_FALSE(notFile.ok());
    EXPECT_NE(failure(notFile).find("is not a regular file"), std::string::npos);
    auto missing =
        base::checkTrustedPath(root_ + "/absent", "mock-root", base::TrustedKind::Directory);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(failure(missing).find("mock-root '" + root_ + "/absent' cannot be resolved"),
              std::string::npos)
        << failure(missing);
    EXPECT_FALSE(base::checkTrustedPath("", "config", base::TrustedKind::File).ok());
}

TEST_F(TrustedPathTest, LinkInADirectoryOthersMayWriteIsRefusedThoughItsTargetIsTrusted) {
    // Whoever may write the link's directory may point the link elsewhere: judging only where it
    // points now would let them swap it later.
    auto target = makeFile("options", 0644);
    auto open = makeDir("open", 0777);
    auto link = open + "/options";
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    auto r = base::checkTrustedPath(link, "options-file", base::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("options-file '" + link + "': its directory '" + open +
                              "' is writable by group or others (mode 0777)"),
              std::string::npos)
        << failure(r);
}

TEST_F(TrustedPathTest, LinkInADirectoryOfAnotherUserIsRefusedThoughItsTargetIsTrusted) {
    if (geteuid() != 0)
        GTEST_SKIP() << "giving a directory to another user needs root";
    auto target = makeDir("backends", 0755);
    auto theirs = makeDir("theirs", 0755);
    auto link = theirs + "/backends";
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
    auto r = base::checkTrustedPath(link, "backend-dir", base::TrustedKind::Directory);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("its directory '" + theirs + "' is owned by uid 65534"),
              std::string::npos)
        << failure(r);
}

TEST_F(TrustedPathTest, LinkOfAnotherUserInRootsStickyDirectoryIsRefused) {
    if (geteuid() != 0)
        GTEST_SKIP() << "a sticky directory owned by root and a link of another user need root";
    auto target = makeFile("config.yaml", 0644);
    auto sticky = makeDir("sticky", 01777);
    auto link = sticky + "/config.yaml";
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    EXPECT_TRUE(base::checkTrustedPath(link, "config", base::TrustedKind::File).ok());
    ASSERT_EQ(lchown(link.c_str(), 65534, 65534), 0);
    auto r = base::checkTrustedPath(link, "config", base::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(
        failure(r).find("config '" + link + "': its link '" + link + "' is owned by uid 65534"),
        std::string::npos)
        << failure(r);
}

TEST_F(TrustedPathTest, RelativeLinksDotDotAndRelativePathsAreWalked) {
    auto file = makeFile("options", 0644);
    auto dir = makeDir("conf", 0755);
    ASSERT_EQ(symlink("../options", (dir + "/options").c_str()), 0);
    auto viaLink = base::openTrustedPath(dir + "/options", "options-file", base::TrustedKind::File);
    ASSERT_TRUE(viaLink.ok()) << viaLink.error().describe();
    EXPECT_EQ(viaLink->resolved(), file);
    auto viaDotDot =
        base::openTrustedPath(dir + "/../options", "options-file", base::TrustedKind::File);
    ASSERT_TRUE(viaDotDot.ok()) << viaDotDot.error().describe();
    EXPECT_EQ(viaDotDot->resolved(), file);

    char cwd[4096];
    ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
    ASSERT_EQ(chdir(dir.c_str()), 0);
    auto relative = base::openTrustedPath("options", "options-file", base::TrustedKind::File);
    ASSERT_EQ(chdir(cwd), 0);
    ASSERT_TRUE(relative.ok()) << relative.error().describe();
    EXPECT_EQ(relative->resolved(), file);
}

TEST_F(TrustedPathTest, LinksInACircleAreRefused) {
    ASSERT_EQ(symlink("b", (root_ + "/a").c_str()), 0);
    ASSERT_EQ(symlink("a", (root_ + "/b").c_str()), 0);
    auto r = base::checkTrustedPath(root_ + "/a", "config", base::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().sysErrno(), ELOOP) << failure(r);
    EXPECT_NE(failure(r).find("config '" + root_ + "/a' cannot be resolved"), std::string::npos)
        << failure(r);
}

TEST_F(TrustedPathTest, WhatIsReadIsTheObjectCheckedThoughItsNameIsSwappedAfterward) {
    auto checkedFile = makeFile("options", 0644);
    auto other = makeFile("other", 0644);
    ASSERT_EQ(truncate(other.c_str(), 7), 0); // seven zero bytes; "options" stays empty
    auto checked = base::openTrustedPath(checkedFile, "options-file", base::TrustedKind::File);
    ASSERT_TRUE(checked.ok()) << checked.error().describe();

    ASSERT_EQ(rename(other.c_str(), checkedFile.c_str()), 0);
    auto text = base::readTrustedFile(*checked, 100);
    ASSERT_TRUE(text.ok()) << text.error().describe();
    EXPECT_EQ(*text, "");
    EXPECT_EQ(checked->status().st_size, 0);
}

TEST_F(TrustedPathTest, FifoIsRefusedWithoutBeingOpened) {
    auto fifo = root_ + "/options";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    testsupport::OpenWatch watch(root_);
    auto r = base::checkTrustedPath(fifo, "options-file", base::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("options-file '" + fifo + "' is not a regular file (it is a FIFO)"),
              std::string::npos)
        << failure(r);
    EXPECT_FALSE(watch.opened("options"));
}

TEST_F(TrustedPathTest, DeviceNodeIsRefusedWithoutItsDriverBeingOpened) {
    if (geteuid() != 0)
        GTEST_SKIP() << "making a device node needs root";
    auto zero = root_ + "/zero";
    ASSERT_EQ(mknod(zero.c_str(), S_IFCHR | 0644, makedev(1, 5)), 0);
    testsupport::OpenWatch watch(root_);
    auto r = base::checkTrustedPath(zero, "content-key", base::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("is not a regular file (it is a character device)"),
              std::string::npos)
        << failure(r);
    EXPECT_FALSE(watch.opened("zero"));
    // The watch does see a real open of it: the assertion above could fail.
    int fd = open(zero.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    close(fd);
    EXPECT_TRUE(watch.opened("zero"));
}

TEST_F(TrustedPathTest, NullDeviceIsAcceptedOnlyWhereAsked) {
    auto r = base::openTrustedPath("/dev/null", "config", base::TrustedKind::FileOrNullDevice);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->isNullDevice());
    auto text = base::readTrustedFile(*r, 10);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "");
    EXPECT_FALSE(base::checkTrustedPath("/dev/null", "config", base::TrustedKind::File).ok());
}

TEST_F(TrustedPathTest, ReadingStopsOneBytePastTheLimit) {
    auto file = makeFile("big", 0644);
    ASSERT_EQ(truncate(file.c_str(), 100000), 0);
    auto checked = base::openTrustedPath(file, "config", base::TrustedKind::File);
    ASSERT_TRUE(checked.ok()) << checked.error().describe();
    auto text = base::readTrustedFile(*checked, 1000);
    ASSERT_TRUE(text.ok()) << text.error().describe();
    EXPECT_EQ(text->size(), 1001u);
}

} // namespace

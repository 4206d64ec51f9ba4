// checkTrustedPath: the rule sshd and sudo apply to their own files, held to paths made here.
#include "base/trusted_path.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
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

std::string failure(const hal::Result<void>& r) { return r.ok() ? "" : r.error().describe(); }

TEST_F(TrustedPathTest, OwnFileWritableOnlyByOwnerIsTrusted) {
    auto file = makeFile("options", 0644);
    EXPECT_TRUE(hal::checkTrustedPath(file, "options-file", hal::TrustedKind::File).ok());
    auto dir = makeDir("backends", 0755);
    EXPECT_TRUE(hal::checkTrustedPath(dir, "backend-dir", hal::TrustedKind::Directory).ok());
}

TEST_F(TrustedPathTest, FileWritableByOthersIsRefusedNamingOptionAndMode) {
    auto file = makeFile("options", 0666);
    auto r = hal::checkTrustedPath(file, "options-file", hal::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), hal::ErrorCode::Config);
    EXPECT_NE(failure(r).find("options-file '" + file + "'"), std::string::npos) << failure(r);
    EXPECT_NE(failure(r).find("writable by group or others (mode 0666)"), std::string::npos)
        << failure(r);
    auto groupOnly = makeFile("group", 0620);
    EXPECT_FALSE(hal::checkTrustedPath(groupOnly, "config", hal::TrustedKind::File).ok());
}

TEST_F(TrustedPathTest, DirectoryAboveWritableByOthersIsRefusedNamingIt) {
    auto open = makeDir("open", 0777);
    auto inner = open + "/backends";
    ASSERT_EQ(mkdir(inner.c_str(), 0755), 0);
    auto r = hal::checkTrustedPath(inner, "backend-dir", hal::TrustedKind::Directory);
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
    EXPECT_TRUE(hal::checkTrustedPath(file, "mock-root", hal::TrustedKind::Directory).ok());
}

TEST_F(TrustedPathTest, FileOfAnotherUserIsRefused) {
    if (geteuid() != 0)
        GTEST_SKIP() << "giving a file to another user needs root";
    auto file = makeFile("config.yaml", 0644);
    ASSERT_EQ(chown(file.c_str(), 65534, 65534), 0);
    auto r = hal::checkTrustedPath(file, "config", hal::TrustedKind::File);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("is owned by uid 65534"), std::string::npos) << failure(r);

    auto dir = makeDir("theirs", 0755);
    ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0);
    auto inside = makeFile("theirs/key.pem", 0600);
    auto nested = hal::checkTrustedPath(inside, "content-key", hal::TrustedKind::File);
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
    auto r = hal::checkTrustedPath(link, "backend-dir", hal::TrustedKind::Directory);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(failure(r).find("backend-dir '" + link + "'"), std::string::npos) << failure(r);
    EXPECT_NE(failure(r).find("'" + open + "'"), std::string::npos) << failure(r);
}

TEST_F(TrustedPathTest, WrongKindAndMissingPathAreRefused) {
    auto file = makeFile("plain", 0644);
    auto notDir = hal::checkTrustedPath(file, "backend-dir", hal::TrustedKind::Directory);
    ASSERT_FALSE(notDir.ok());
    EXPECT_NE(failure(notDir).find("is not a directory"), std::string::npos) << failure(notDir);
    auto notFile = hal::checkTrustedPath(root_, "config", hal::TrustedKind::File);
    ASSERT_FALSE(notFile.ok());
    EXPECT_NE(failure(notFile).find("is not a regular file"), std::string::npos);
    auto missing = hal::checkTrustedPath(root_ + "/absent", "mock-root", hal::TrustedKind::Directory);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(failure(missing).find("mock-root '" + root_ + "/absent' cannot be resolved"),
              std::string::npos)
        << failure(missing);
    EXPECT_FALSE(hal::checkTrustedPath("", "config", hal::TrustedKind::File).ok());
}

} // namespace

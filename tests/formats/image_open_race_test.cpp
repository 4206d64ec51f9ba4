// openImageFile (formats/image_open.h) against a race: what is read is the inode that was judged
// a regular file, whatever the name names by the time it is opened for reading. The test hook
// (formats/src/same_file_reopen.h) runs between the judgement (on an O_PATH fd) and the reopen
// through /proc/self/fd/N; the reader's O_DIRECT reopen is held to the same file.
#include "formats/image_open.h"
#include "same_file_reopen.h"

#include "formats/image_store.h"
#include "formats/packed_image.h"

#include "bounded_child.h"
#include "page_cache.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

using ::testing::HasSubstr;
using testsupport::TempDir;

const std::string kName = "amdgpu-kfd-1.img";

/// Where the hook finds what to swap in: set by each test before it opens.
std::string gDir;
std::string gSwapIn;

/// Renames gSwapIn over the image's name: the name now names something else.
void renameOver(int) {
    ASSERT_EQ(std::rename(gSwapIn.c_str(), (gDir + "/" + kName).c_str()), 0);
}

/// Puts an O_PATH fd of gSwapIn in place of the judged fd: /proc/self/fd/N reaches it instead.
void replaceTheFd(int pathFd) {
    int other = open(gSwapIn.c_str(), O_PATH | O_CLOEXEC);
    ASSERT_GE(other, 0);
    ASSERT_EQ(dup3(other, pathFd, O_CLOEXEC), pathFd);
    close(other);
}

/// What opening the image says, from a bounded child (a FIFO opened for reading without
/// O_NONBLOCK would wait for a writer): its contents, or the error.
std::string openingWith(const TempDir& tmp, void (*hook)(int), const std::string& swapIn) {
    gDir = tmp / "ck";
    gSwapIn = swapIn;
    return testsupport::runBounded([&]() -> std::string {
        int dir = open(gDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        formats::reopenHook = hook;
        auto fd = formats::openImageFile(dir, kName);
        formats::reopenHook = nullptr;
        close(dir);
        if (!fd.ok())
            return fd.error().message();
        char buf[64] = {};
        ssize_t n = read(*fd, buf, sizeof(buf) - 1);
        close(*fd);
        return n < 0 ? "read failed" : "read: " + std::string(buf, static_cast<size_t>(n));
    });
}

/// The image in `tmp`/ck, its bytes "judged".
void writeImage(const TempDir& tmp) {
    testsupport::writeFile(tmp / "ck/" + kName, "judged");
}

TEST(ImageOpenRace, GivenAFifoRenamedOverTheNameAfterTheCheckWhenOpenedThenTheCheckedFileIsRead) {
    TempDir tmp;
    writeImage(tmp);
    ASSERT_EQ(mkfifo((tmp / "fifo").c_str(), 0600), 0);
    EXPECT_EQ(openingWith(tmp, renameOver, tmp / "fifo"), "read: judged");
}

TEST(ImageOpenRace, GivenADeviceNodeRenamedOverTheNameAfterTheCheckWhenOpenedThenItIsNotOpened) {
    TempDir tmp;
    writeImage(tmp);
    // The tests run as root (scripts/as-root.sh): /dev/zero's number, whose reads would give
    // zeros instead of the judged file's bytes.
    ASSERT_EQ(mknod((tmp / "zero").c_str(), S_IFCHR | 0600, makedev(1, 5)), 0) << strerror(errno);
    EXPECT_EQ(openingWith(tmp, renameOver, tmp / "zero"), "read: judged");
}

TEST(ImageOpenRace, GivenTheReopenReachingAnotherRegularFileWhenOpenedThenItIsRefused) {
    TempDir tmp;
    writeImage(tmp);
    testsupport::writeFile(tmp / "host-secret", "secret");
    std::string says = openingWith(tmp, replaceTheFd, tmp / "host-secret");
    EXPECT_THAT(says, HasSubstr(kName + ": what was opened is not the regular file"));
    EXPECT_THAT(says, ::testing::Not(HasSubstr("secret")));
}

TEST(ImageOpenRace, GivenTheReopenReachingAFifoWhenOpenedThenItIsRefusedWithoutWaiting) {
    TempDir tmp;
    writeImage(tmp);
    ASSERT_EQ(mkfifo((tmp / "fifo").c_str(), 0600), 0);
    std::string says = openingWith(tmp, replaceTheFd, tmp / "fifo");
    EXPECT_THAT(says, HasSubstr(kName + ": what was opened is not the regular file"));
}

/// The second reopen (the reader's O_DIRECT one, after openImageFile's) reaches gSwapIn.
int gReopens = 0;
void replaceTheSecondReopensFd(int fd) {
    if (++gReopens == 2)
        replaceTheFd(fd);
}

/// Whether the reader of a packed file, uncached, hands over an O_DIRECT fd, and of which file.
std::string directFdOf(const TempDir& tmp, void (*hook)(int)) {
    std::string name = formats::packedImageName("amdgpu-drm-pages-1-128-0.img");
    gDir = tmp.path();
    EXPECT_TRUE(testsupport::writeUncached(tmp / name, 4 << 20));
    auto store = formats::openDirectoryStore(tmp.path());
    EXPECT_TRUE(store.ok());
    gReopens = 0;
    formats::reopenHook = hook;
    auto reader = (*store)->openRead(name);
    formats::reopenHook = nullptr;
    if (!reader.ok())
        return reader.error().message();
    formats::ImageReader::Direct direct = (*reader)->takeDirect();
    if (direct.fd < 0)
        return "no direct fd";
    struct stat st, other;
    fstat(direct.fd, &st);
    close(direct.fd);
    if (stat(gSwapIn.c_str(), &other) == 0 && st.st_ino == other.st_ino)
        return "a direct fd of the swapped-in file";
    return "a direct fd of the image";
}

TEST(ImageOpenRace, GivenTheDirectReopenReachingAnotherFileWhenOpenedThenNoDirectFdIsHandedOver) {
    TempDir tmp = testsupport::pageCacheDir();
    ASSERT_TRUE(testsupport::writeUncached(tmp / "host-secret", 4 << 20));
    gSwapIn = tmp / "host-secret";
    ASSERT_EQ(directFdOf(tmp, nullptr), "a direct fd of the image")
        << "the build tree's file system must take O_DIRECT for this test";
    EXPECT_EQ(directFdOf(tmp, replaceTheSecondReopensFd), "no direct fd");
}

} // namespace

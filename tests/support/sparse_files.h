#pragma once
/// \file
/// Files with holes for the tests of zero runs: whether a directory's file system keeps holes,
/// and how many bytes a file has allocated.

#include "formats/image_store.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>

namespace haltest {

/// Bytes the file system has allocated for `path` (st_blocks), -1 when it cannot stat it.
inline int64_t allocatedBytes(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_blocks) * 512 : -1;
}

/// True when files in `dir` keep holes: a file of 1 MiB with one byte written at its end
/// allocates less than its size and SEEK_DATA finds that byte.
inline bool holesSupported(const std::string& dir) {
    std::string path = dir + "/.hole-probe";
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    constexpr off_t kSize = 1 << 20;
    bool ok = pwrite(fd, "x", 1, kSize - 1) == 1 && fsync(fd) == 0 && lseek(fd, 0, SEEK_DATA) > 0;
    close(fd);
    ok = ok && allocatedBytes(path) < kSize;
    unlink(path.c_str());
    return ok;
}

/// A test of a rig (with a TempDir `dir`) whose directory must keep holes: skipped where its
/// file system keeps none; `store_` is a directory store of it.
template <typename Rig> class SparseDirTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!holesSupported(rig_.dir.path()))
            GTEST_SKIP() << "the file system of " << rig_.dir.path() << " keeps no holes";
        auto store = formats::openDirectoryStore(rig_.dir.path());
        ASSERT_TRUE(store.ok()) << store.error().describe();
        store_ = std::move(store).value();
    }
    Rig rig_;
    std::unique_ptr<formats::ImageStore> store_;
};

} // namespace haltest

#include "sparse_image.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

namespace testsupport {

void writeSparseImage(const std::string& path, uint64_t announced, uint64_t contents) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << path;
    EXPECT_EQ(write(fd, &announced, sizeof(announced)), 8) << path;
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(sizeof(announced) + contents)), 0) << path;
    close(fd);
}

} // namespace testsupport

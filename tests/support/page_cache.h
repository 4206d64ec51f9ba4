#pragma once
/// \file
/// The page cache as tests see it: a file's pages dropped from it, and how many of them it holds
/// (mincore), to check what was asked to be fetched ahead of a reader.

#include "temp_dir.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace testsupport {

/// A directory for files whose pages a test drops and counts: under the current directory (the
/// build tree, on a disk), since a tmpfs $TMPDIR keeps every page of its files.
inline TempDir pageCacheDir() {
    return TempDir(std::filesystem::current_path().string());
}

/// Writes `bytes` bytes (none zero) to `path`, then drops its pages from the page cache; false
/// when either fails.
inline bool writeUncached(const std::string& path, uint64_t bytes) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    std::vector<char> block(1 << 20);
    for (size_t i = 0; i < block.size(); ++i)
        block[i] = static_cast<char>(1 + i % 251);
    bool ok = true;
    for (uint64_t at = 0; ok && at < bytes; at += block.size())
        ok = write(fd, block.data(), std::min<uint64_t>(block.size(), bytes - at)) > 0;
    ok = ok && fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    close(fd);
    return ok;
}

/// Bytes of [0, length) of `path` the page cache holds, whole pages counted.
inline uint64_t cachedBytes(const std::string& path, uint64_t length) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    void* map = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return 0;
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident((length + page - 1) / page);
    uint64_t cached = 0;
    if (mincore(map, length, resident.data()) == 0)
        for (unsigned char r : resident)
            cached += (r & 1) ? page : 0;
    munmap(map, length);
    return cached;
}

} // namespace testsupport

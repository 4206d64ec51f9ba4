#include "formats/image_store.h"
#include "formats/packed_image.h"
#include "page_cache_probe.h"
#include "same_file_reopen.h"

#include "content/file_holes.h"
#include "content/read_ahead.h"
#include "content/zero_runs.h"
#include "formats/image_open.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;
using content::dataRanges;
using content::fetchAhead;
using content::FileRange;
using content::FileSpan;
using content::HoleCursor;
using content::kHoleBlock;
using content::kReadAheadStep;
using content::nextReadAhead;

namespace {

/// What zeros are written from.
constexpr size_t kZeroBytes = 64 * 1024;
const std::byte kZeros[kZeroBytes] = {};

} // namespace

Result<void> ImageWriter::writeZeros(uint64_t length) {
    while (length) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(length, kZeroBytes));
        HAL_TRY(write(std::span(kZeros, n)));
        length -= n;
    }
    return success();
}

Result<void> ImageReader::skip(uint64_t length) {
    std::vector<std::byte> dropped(static_cast<size_t>(std::min<uint64_t>(length, 1 << 20)));
    while (length) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(length, dropped.size()));
        HAL_TRY(readExact(std::span(dropped).first(n)));
        length -= n;
    }
    return success();
}

Result<bool> ImageReader::atEnd() {
    std::byte extra;
    auto r = readExact(std::span(&extra, 1));
    if (r.ok())
        return false;
    if (r.error().code() == ErrorCode::Image)
        return true; // the end of the file: nothing beyond
    return std::move(r).error();
}

namespace {

/// read(2) that retries EINTR; returns bytes read, 0 at the end, or -errno.
ssize_t readSome(int fd, std::byte* out, size_t len) {
    for (;;) {
        ssize_t n = ::read(fd, out, len);
        if (n >= 0 || errno != EINTR)
            return n < 0 ? -errno : n;
    }
}

/// pread(2) that retries EINTR; returns bytes read, 0 at the end, or -errno.
ssize_t preadSome(int fd, std::byte* out, size_t len, uint64_t offset) {
    for (;;) {
        ssize_t n = ::pread(fd, out, len, static_cast<off_t>(offset));
        if (n >= 0 || errno != EINTR)
            return n < 0 ? -errno : n;
    }
}

Error truncated(const std::string& name, size_t wanted, uint64_t offset) {
    return makeError(ErrorCode::Image,
                     "image %s is truncated: wanted %zu more bytes at offset %llu", name.c_str(),
                     wanted, static_cast<unsigned long long>(offset));
}

/// Fills `out` from `fd` (-1: an fd at its end); `offset` is where `out` starts in image `name`.
/// `positional`: pread at `offset` instead of read.
Result<void> readFully(int fd, std::span<std::byte> out, const std::string& name, uint64_t offset,
                       bool positional = false) {
    size_t done = 0;
    while (done < out.size()) {
        ssize_t n = fd < 0 ? 0
                    : positional
                        ? preadSome(fd, out.data() + done, out.size() - done, offset + done)
                        : readSome(fd, out.data() + done, out.size() - done);
        if (n < 0)
            return makeErrnoError(ErrorCode::Io, static_cast<int>(-n), "reading image %s",
                                  name.c_str());
        if (n == 0)
            return truncated(name, out.size() - done, offset + done);
        done += static_cast<size_t>(n);
    }
    return success();
}

/// The most one write() call is given. Measured on this project's test machine (ext4, Linux
/// 6.18): 16 MiB write() calls from a 64 MiB staging buffer ran 4 to 8 times slower than 1 MiB
/// calls of the same bytes (`dd bs=16M` against `bs=1M`), which made the I/O stage of a content
/// lane the slowest stage by far.
constexpr size_t kMaxWriteCall = 1 << 20;

/// What a write without the page cache (O_DIRECT) needs its address, length and file offset to be
/// multiples of: a page, which is at least the logical block of every disk we know of. A file
/// system that needs more refuses the first such write (EINVAL), and the writer goes on through
/// the page cache.
constexpr size_t kDirectAlign = 4096;

/// Writes to an fd it owns; on destruction without close() it unlinks the file (if it has one).
/// With `holes` (a file in a directory), zeros given to writeZeros() wait until the next write or
/// the close, and then the whole file blocks among them are seeked over (a hole), or left to the
/// final ftruncate when the file ends with them.
class FdWriter final : public ImageWriter {
public:
    /// `direct`: writeDirect() may write without the page cache.
    FdWriter(int fd, int dirFd, std::string name, bool holes, bool direct)
        : fd_(fd), dirFd_(dirFd), name_(std::move(name)), holes_(holes), direct_(direct) {}
    ~FdWriter() override {
        if (fd_ >= 0) {
            ::close(fd_);
            if (dirFd_ >= 0)
                unlinkat(dirFd_, name_.c_str(), 0);
        }
        if (dirFd_ >= 0)
            ::close(dirFd_);
    }
    Result<void> write(std::span<const std::byte> data) override {
        if (fd_ < 0)
            return makeError(ErrorCode::PhaseOrder, "image %s written after close", name_.c_str());
        HAL_TRY(flushZeros());
        HAL_TRY(setDirect(false));
        return writeBytes(data);
    }
    size_t directAlignment() const override { return direct_ ? kDirectAlign : 0; }
    Result<void> writeDirect(std::span<const std::byte> data) override {
        if (fd_ < 0)
            return makeError(ErrorCode::PhaseOrder, "image %s written after close", name_.c_str());
        HAL_TRY(flushZeros());
        // The bytes up to the next aligned offset, and any after the last aligned one, go through
        // the page cache; the aligned middle without it, when it starts at an aligned address.
        size_t lead =
            std::min(data.size(), (kDirectAlign - written_ % kDirectAlign) % kDirectAlign);
        size_t middle = (data.size() - lead) / kDirectAlign * kDirectAlign;
        bool aligned = reinterpret_cast<uintptr_t>(data.data() + lead) % kDirectAlign == 0;
        if (!direct_ || !middle || !aligned)
            return write(data);
        if (lead)
            HAL_TRY(write(data.first(lead)));
        HAL_TRY(writeUncached(data.subspan(lead, middle)));
        return write(data.subspan(lead + middle));
    }
    Result<void> writeZeros(uint64_t length) override {
        if (!holes_)
            return ImageWriter::writeZeros(length);
        if (fd_ < 0)
            return makeError(ErrorCode::PhaseOrder, "image %s written after close", name_.c_str());
        pendingZeros_ += length;
        return success();
    }
    Result<void> close() override {
        if (fd_ < 0)
            return makeError(ErrorCode::PhaseOrder, "image %s closed twice", name_.c_str());
        if (pendingZeros_) {
            // The file ends with zeros: its length is set, the blocks stay unallocated.
            uint64_t length = written_ + pendingZeros_;
            if (ftruncate(fd_, static_cast<off_t>(length)) != 0)
                return makeErrnoError(ErrorCode::Io, errno,
                                      "setting the length of image %s to %llu bytes", name_.c_str(),
                                      static_cast<unsigned long long>(length));
            written_ = length;
            pendingZeros_ = 0;
        }
        int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0)
            return makeErrnoError(ErrorCode::Io, errno, "closing image %s", name_.c_str());
        return success();
    }
    uint64_t written() const override { return written_ + pendingZeros_; }

private:
    /// Writes the zeros waiting before the next bytes: those in the block the file's end is in,
    /// then a seek over the whole blocks, then those of the block the next bytes start in.
    Result<void> flushZeros() {
        uint64_t zeros = std::exchange(pendingZeros_, 0);
        if (!zeros)
            return success();
        uint64_t head = std::min(zeros, (kHoleBlock - written_ % kHoleBlock) % kHoleBlock);
        HAL_TRY(ImageWriter::writeZeros(head));
        uint64_t skip = (zeros - head) / kHoleBlock * kHoleBlock;
        if (skip && lseek(fd_, static_cast<off_t>(skip), SEEK_CUR) >= 0)
            written_ += skip;
        else if (skip && errno == ESPIPE)
            holes_ = false, skip = 0; // not a file after all: the zeros are written
        else if (skip)
            return makeErrnoError(ErrorCode::Io, errno, "seeking over zeros in image %s",
                                  name_.c_str());
        return ImageWriter::writeZeros(zeros - head - skip);
    }

    /// Sets or clears O_DIRECT on the fd. Setting it fails on a file system without it: then
    /// this writer writes through the page cache from now on (direct_ is false).
    Result<void> setDirect(bool on) {
        if (directSet_ == on)
            return success();
        int flags = fcntl(fd_, F_GETFL);
        if (flags >= 0 && fcntl(fd_, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) == 0) {
            directSet_ = on;
            return success();
        }
        if (on) {
            direct_ = false;
            return success();
        }
        return makeErrnoError(ErrorCode::Io, errno, "writing image %s through the page cache",
                              name_.c_str());
    }

    /// Writes `data` (aligned) with O_DIRECT; through the page cache when the file system takes
    /// neither the flag nor the first such write.
    Result<void> writeUncached(std::span<const std::byte> data) {
        HAL_TRY(setDirect(true));
        if (!direct_)
            return write(data);
        size_t done = 0;
        while (done < data.size()) {
            ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EINVAL && !directWritten_) {
                // The file system wants more alignment than a page, or takes no O_DIRECT write.
                direct_ = false;
                return write(data.subspan(done));
            }
            if (n < 0)
                return makeErrnoError(ErrorCode::Io, errno, "writing image %s", name_.c_str());
            if (n == 0)
                return makeError(ErrorCode::Io, "writing image %s: no progress", name_.c_str());
            directWritten_ = true;
            done += static_cast<size_t>(n);
            written_ += static_cast<uint64_t>(n);
            if (n % kDirectAlign) // a short write left the offset unaligned
                return write(data.subspan(done));
        }
        return success();
    }

    Result<void> writeBytes(std::span<const std::byte> data) {
        size_t done = 0;
        while (done < data.size()) {
            ssize_t n =
                ::write(fd_, data.data() + done, std::min(data.size() - done, kMaxWriteCall));
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return makeErrnoError(ErrorCode::Io, errno, "writing image %s", name_.c_str());
            }
            if (n == 0)
                return makeError(ErrorCode::Io, "writing image %s: no progress", name_.c_str());
            done += static_cast<size_t>(n);
        }
        written_ += done;
        return success();
    }

    int fd_;
    int dirFd_;
    std::string name_;
    bool holes_;
    bool direct_;                ///< writeDirect() may use O_DIRECT (false once it was refused)
    bool directSet_ = false;     ///< O_DIRECT is set on the fd
    bool directWritten_ = false; ///< an O_DIRECT write succeeded
    uint64_t written_ = 0;       ///< the fd's offset
    uint64_t pendingZeros_ = 0;  ///< zeros after it, not yet written
};

/// Reads an fd it owns. A regular file is read with pread, its holes filled with zeros without
/// reading them (content/file_holes.h); anything else (a pipe) with read.
class FdReader final : public ImageReader {
public:
    /// `directFd`: the same file opened with O_DIRECT for takeDirect(), or -1; owned.
    FdReader(int fd, std::string name, int directFd = -1)
        : fd_(fd), name_(std::move(name)), directFd_(directFd), askAhead_(directFd < 0) {
        struct stat st;
        if (fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
            size_ = st.st_size;
            holes_.emplace(fd_, static_cast<uint64_t>(size_));
            ahead_.emplace(fd_, static_cast<uint64_t>(size_));
            // Images are read once, front to back: a larger read-ahead window.
            posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
        }
    }
    ~FdReader() override {
        ::close(fd_);
        if (directFd_ >= 0)
            ::close(directFd_);
    }
    Result<void> readExact(std::span<std::byte> out) override {
        if (!holes_) {
            HAL_TRY(readFully(fd_, out, name_, offset_));
            offset_ += out.size();
            return success();
        }
        askAhead();
        uint64_t size = static_cast<uint64_t>(size_);
        size_t inFile = offset_ >= size ? 0 : std::min<uint64_t>(out.size(), size - offset_);
        for (size_t done = 0; done < inFile;) {
            FileSpan span = holes_->at(offset_ + done);
            size_t n = std::min<uint64_t>(inFile - done, span.end - (offset_ + done));
            if (span.hole)
                memset(out.data() + done, 0, n);
            else
                HAL_TRY(readFully(fd_, out.subspan(done, n), name_, offset_ + done, true));
            done += n;
        }
        if (inFile < out.size())
            return truncated(name_, out.size() - inFile, offset_ + inFile);
        offset_ += out.size();
        return success();
    }
    Result<void> skip(uint64_t length) override {
        if (!holes_)
            return ImageReader::skip(length);
        uint64_t size = static_cast<uint64_t>(size_);
        if (offset_ > size || length > size - offset_)
            return truncated(name_, length - (offset_ >= size ? 0 : size - offset_),
                             std::min(offset_, size));
        offset_ += length;
        return success();
    }
    int64_t size() const override { return size_; }
    const std::string& name() const override { return name_; }
    Direct takeDirect() override {
        if (directFd_ < 0 || !holes_)
            return {};
        return {std::exchange(directFd_, -1), offset_, static_cast<uint64_t>(size_)};
    }
    void resumeReadAhead() override {
        if (directFd_ >= 0)
            ::close(std::exchange(directFd_, -1));
        askAhead_ = true;
    }

private:
    /// Keeps the kernel fetching the data (not the holes) ahead of the reader
    /// (content/read_ahead.h); advice only, so a refusal changes nothing but the speed.
    void askAhead() {
        if (!askAhead_)
            return; // the file is read past the page cache
        if (size_ < static_cast<int64_t>(kReadAheadStep))
            return; // small images: the kernel's own read-ahead is enough
        if (auto range = nextReadAhead(offset_, askedUpTo_, static_cast<uint64_t>(size_))) {
            for (const FileRange& data : dataRanges(*ahead_, *range))
                fetchAhead(fd_, data);
            askedUpTo_ = range->offset + range->length;
        }
    }

    int fd_;
    std::string name_;
    int64_t size_ = -1;
    uint64_t offset_ = 0;
    uint64_t askedUpTo_ = 0;
    std::optional<HoleCursor> holes_; ///< regular files: where the reader is
    std::optional<HoleCursor> ahead_; ///< and where the read-ahead is
    int directFd_;                    ///< for takeDirect(); -1 when none or taken
    bool askAhead_;                   ///< false while the file is read past the page cache
};

/// True when at least a quarter of the file `fd` of `size` bytes is in the page cache: a file
/// copied in or read lately is read faster from there than from the disk, and reading it past
/// the page cache would first write back what of it is dirty.
/// Costs at most a fixed amount whatever the size (page_cache_probe.h).
bool mostlyCached(int fd, uint64_t size) {
    CachedShare share = cachedShare(fd, size);
    return share.cached > 0 && share.cached * 4 >= share.looked;
}

/// The packed file `fd` (`name` in a directory) opened a second time with O_DIRECT, through
/// /proc/self/fd so that it is the same file whatever its name now names; -1 when it is not a
/// packed file, not a regular file, mostly in the page cache already, or its file system takes
/// no O_DIRECT.
int openPastPageCache(int fd, const std::string& name) {
    if (!isPackedImageName(name))
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        mostlyCached(fd, static_cast<uint64_t>(st.st_size)))
        return -1;
    auto direct = reopenSameFile(fd, O_RDONLY | O_DIRECT, st, name);
    return direct ? *direct : -1;
}

class DirectoryStore final : public ImageStore {
public:
    /// Owns `dirFd`; with `newFilesOnly`, openWrite refuses a name that exists.
    DirectoryStore(int dirFd, std::string description, bool newFilesOnly = false)
        : ownedFd_(dirFd), description_(std::move(description)), newFilesOnly_(newFilesOnly) {}
    /// Borrows the fd `provider` returns at each operation.
    DirectoryStore(std::function<int()> provider, std::string description)
        : provider_(std::move(provider)), description_(std::move(description)) {}
    ~DirectoryStore() override {
        if (ownedFd_ >= 0)
            ::close(ownedFd_);
    }

    Result<std::unique_ptr<ImageWriter>> openWrite(const std::string& name) override {
        int dir = dirFd();
        int fd = openat(
            dir, name.c_str(),
            O_WRONLY | O_CREAT | (newFilesOnly_ ? O_EXCL : O_TRUNC) | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            return makeErrnoError(ErrorCode::Io, errno,
                                  "cannot create image %s in %s: it exists (only new files are "
                                  "written there)",
                                  name.c_str(), description_.c_str());
        if (fd < 0)
            return makeErrnoError(ErrorCode::Io, errno, "cannot create image %s in %s",
                                  name.c_str(), description_.c_str());
        // The writer keeps its own directory fd: it may outlive this store.
        int writerDirFd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
        if (writerDirFd < 0) {
            int err = errno;
            ::close(fd);
            unlinkat(dir, name.c_str(), 0);
            return makeErrnoError(ErrorCode::Io, err, "cannot create image %s in %s", name.c_str(),
                                  description_.c_str());
        }
        return std::unique_ptr<ImageWriter>(
            new FdWriter(fd, writerDirFd, name, true, directWrites()));
    }
    Result<std::unique_ptr<ImageReader>> openRead(const std::string& name) override {
        auto fd = openImageFile(dirFd(), name);
        if (!fd)
            return Error(fd.error().code(), fd.error().sysErrno(),
                         strFormat("cannot open image %s in %s: %s", name.c_str(),
                                   description_.c_str(), fd.error().message().c_str()));
        return std::unique_ptr<ImageReader>(new FdReader(*fd, name, openPastPageCache(*fd, name)));
    }
    bool exists(const std::string& name) override {
        struct stat st;
        return fstatat(dirFd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    }
    void readAhead(const std::string& name, uint64_t bytes) override {
        auto fd = openImageFile(dirFd(), name);
        if (!fd)
            return; // the openRead that follows says why
        if (int direct = openPastPageCache(*fd, name); direct >= 0) {
            // It will be read past the page cache: fetching it into the cache reads it twice.
            ::close(direct);
            ::close(*fd);
            return;
        }
        struct stat st;
        if (fstat(*fd, &st) == 0) {
            uint64_t size = static_cast<uint64_t>(st.st_size);
            HoleCursor holes(*fd, size);
            for (const FileRange& data : dataRanges(holes, {0, std::min(bytes, size)}))
                fetchAhead(*fd, data);
        }
        ::close(*fd);
    }
    std::string describe() const override { return description_; }
    Result<std::vector<std::string>> listDirectory(const std::string& dir) override {
        auto opened = openImageDirectory(dirFd(), dir);
        if (!opened)
            return Error(opened.error().code(), opened.error().sysErrno(),
                         strFormat("cannot open directory %s of %s: %s", dir.c_str(),
                                   description_.c_str(), opened.error().message().c_str()));
        int fd = *opened;
        DIR* d = fdopendir(fd);
        if (!d) {
            int err = errno;
            ::close(fd);
            return makeErrnoError(ErrorCode::Io, err, "cannot list directory %s of %s", dir.c_str(),
                                  description_.c_str());
        }
        std::vector<std::string> names;
        while (dirent* e = readdir(d)) {
            struct stat st;
            if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                names.emplace_back(e->d_name);
        }
        closedir(d);
        std::sort(names.begin(), names.end());
        return names;
    }

private:
    int dirFd() const { return provider_ ? provider_() : ownedFd_; }

    int ownedFd_ = -1;
    std::function<int()> provider_;
    std::string description_;
    bool newFilesOnly_ = false;
};

/// An image the streamer served to exists(): its first bytes in memory and, when it was longer
/// than kMaxStreamerPeekBytes, the pipe holding the rest.
struct PeekedImage {
    bool exists = false;
    std::shared_ptr<const std::string> bytes = std::make_shared<const std::string>();
    int restFd = -1;            ///< the unread rest (one reader may take it), -1 when complete
    std::optional<Error> error; ///< the streamer failed while serving it
};

/// Reads a peeked image: its bytes in memory, then the rest from its pipe (taken over).
class PeekedReader final : public ImageReader {
public:
    PeekedReader(std::string name, std::shared_ptr<const std::string> bytes, int restFd)
        : name_(std::move(name)), bytes_(std::move(bytes)), restFd_(restFd) {}
    ~PeekedReader() override {
        if (restFd_ >= 0)
            ::close(restFd_);
    }
    Result<void> readExact(std::span<std::byte> out) override {
        size_t fromMemory =
            pos_ >= bytes_->size() ? 0 : std::min<size_t>(out.size(), bytes_->size() - pos_);
        memcpy(out.data(), bytes_->data() + pos_, fromMemory);
        pos_ += fromMemory;
        HAL_TRY(readFully(restFd_, out.subspan(fromMemory), name_, pos_));
        pos_ += out.size() - fromMemory;
        return success();
    }
    int64_t size() const override {
        return restFd_ < 0 ? static_cast<int64_t>(bytes_->size()) : -1;
    }
    const std::string& name() const override { return name_; }

private:
    std::string name_;
    std::shared_ptr<const std::string> bytes_;
    uint64_t pos_ = 0; ///< bytes consumed (from memory, then from the pipe)
    int restFd_;
};

class StreamerStore final : public ImageStore {
public:
    StreamerStore(StreamerOpenFn open, StreamDirection direction)
        : open_(std::move(open)), direction_(direction) {}
    ~StreamerStore() override {
        for (auto& [name, peeked] : peeked_)
            if (peeked.restFd >= 0)
                ::close(peeked.restFd);
    }
    Result<std::unique_ptr<ImageWriter>> openWrite(const std::string& name) override {
        if (direction_ == StreamDirection::Restore)
            return makeError(ErrorCode::PhaseOrder,
                             "image streamer: %s cannot be written while criu streams a restore",
                             name.c_str());
        int fd = open_(name, true);
        if (fd < 0)
            return makeErrnoError(ErrorCode::Io, -fd, "image streamer: cannot create %s",
                                  name.c_str());
        return std::unique_ptr<ImageWriter>(new FdWriter(fd, -1, name, false, false));
    }
    Result<std::unique_ptr<ImageReader>> openRead(const std::string& name) override {
        if (direction_ == StreamDirection::Dump)
            return makeError(ErrorCode::PhaseOrder,
                             "image streamer: %s cannot be read while criu streams a dump",
                             name.c_str());
        auto it = peeked_.find(name);
        if (it == peeked_.end()) {
            int fd = open_(name, false);
            if (fd < 0)
                return notOpened(name, -fd);
            return std::unique_ptr<ImageReader>(new FdReader(fd, name));
        }
        PeekedImage& p = it->second;
        if (p.error)
            return *p.error;
        if (!p.exists)
            return notOpened(name, ENOENT);
        int rest = std::exchange(p.restFd, -1);
        std::unique_ptr<ImageReader> reader(new PeekedReader(name, p.bytes, rest));
        if (rest >= 0)
            peeked_.erase(it); // the rest of a long image can be read once
        return reader;
    }
    bool exists(const std::string& name) override {
        if (direction_ == StreamDirection::Dump)
            return false;
        auto it = peeked_.find(name);
        if (it != peeked_.end())
            return it->second.exists;
        PeekedImage& p = peeked_[name];
        int fd = open_(name, false);
        if (fd == -ENOENT)
            return false;
        p.exists = true;
        if (fd < 0) {
            p.error =
                makeErrnoError(ErrorCode::Io, -fd, "image streamer: cannot open %s", name.c_str());
            return true; // say so when the image is read
        }
        // The streamer writes the whole image before it serves anything else: take it now.
        auto bytes = std::make_shared<std::string>();
        p.bytes = bytes;
        std::byte chunk[65536];
        for (;;) {
            size_t room = static_cast<size_t>(kMaxStreamerPeekBytes - bytes->size());
            if (room == 0) {
                p.restFd = fd;
                return true;
            }
            ssize_t n = readSome(fd, chunk, std::min(sizeof(chunk), room));
            if (n < 0)
                p.error = makeErrnoError(ErrorCode::Io, static_cast<int>(-n),
                                         "image streamer: reading %s", name.c_str());
            if (n <= 0)
                break;
            bytes->append(reinterpret_cast<const char*>(chunk), static_cast<size_t>(n));
        }
        ::close(fd);
        return true;
    }
    bool rereadable() const override { return false; }
    std::string describe() const override { return "image streamer"; }

private:
    static Error notOpened(const std::string& name, int err) {
        return makeErrnoError(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io, err,
                              "image streamer: cannot open %s", name.c_str());
    }

    StreamerOpenFn open_;
    StreamDirection direction_;
    std::map<std::string, PeekedImage> peeked_;
};

} // namespace

Result<std::vector<std::string>> ImageStore::listDirectory(const std::string& dir) {
    return makeError(ErrorCode::NotSupported,
                     "%s has no directory %s: it holds images by name only", describe().c_str(),
                     dir.c_str());
}

Result<std::unique_ptr<ImageStore>> openDirectoryStore(int dirFd, const std::string& description) {
    int fd = fcntl(dirFd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "cannot use image directory %s",
                              description.c_str());
    return std::unique_ptr<ImageStore>(new DirectoryStore(fd, description));
}

Result<std::unique_ptr<ImageStore>> openNewFilesStore(int dirFd, const std::string& description) {
    int fd = fcntl(dirFd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "cannot use directory %s", description.c_str());
    return std::unique_ptr<ImageStore>(new DirectoryStore(fd, description, true));
}

Result<std::unique_ptr<ImageStore>> openDirectoryStore(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "cannot open image directory %s", path.c_str());
    return std::unique_ptr<ImageStore>(new DirectoryStore(fd, "directory " + path));
}

std::unique_ptr<ImageStore> makeBorrowedDirectoryStore(std::function<int()> dirFd,
                                                       std::string description) {
    return std::unique_ptr<ImageStore>(
        new DirectoryStore(std::move(dirFd), std::move(description)));
}

std::unique_ptr<ImageStore> makeStreamerStore(StreamerOpenFn open, StreamDirection direction) {
    return std::unique_ptr<ImageStore>(new StreamerStore(std::move(open), direction));
}

} // namespace formats

#include "hal/image_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hal {
namespace {

/// Writes to an fd it owns; on destruction without close() it unlinks the file (if it has one).
class FdWriter final : public ImageWriter {
public:
    FdWriter(int fd, int dirFd, std::string name) : fd_(fd), dirFd_(dirFd), name_(std::move(name)) {}
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
        size_t done = 0;
        while (done < data.size()) {
            ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
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
    Result<void> close() override {
        if (fd_ < 0)
            return makeError(ErrorCode::PhaseOrder, "image %s closed twice", name_.c_str());
        int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0)
            return makeErrnoError(ErrorCode::Io, errno, "closing image %s", name_.c_str());
        return success();
    }
    uint64_t written() const override { return written_; }

private:
    int fd_;
    int dirFd_;
    std::string name_;
    uint64_t written_ = 0;
};

class FdReader final : public ImageReader {
public:
    FdReader(int fd, std::string name) : fd_(fd), name_(std::move(name)) {
        struct stat st;
        if (fstat(fd_, &st) == 0 && S_ISREG(st.st_mode))
            size_ = st.st_size;
    }
    ~FdReader() override { ::close(fd_); }
    Result<void> readExact(std::span<std::byte> out) override {
        size_t done = 0;
        while (done < out.size()) {
            ssize_t n = ::read(fd_, out.data() + done, out.size() - done);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return makeErrnoError(ErrorCode::Io, errno, "reading image %s", name_.c_str());
            }
            if (n == 0)
                return makeError(ErrorCode::Image,
                                 "image %s is truncated: wanted %zu more bytes at offset %llu",
                                 name_.c_str(), out.size() - done,
                                 static_cast<unsigned long long>(offset_ + done));
            done += static_cast<size_t>(n);
        }
        offset_ += done;
        return success();
    }
    int64_t size() const override { return size_; }
    const std::string& name() const override { return name_; }

private:
    int fd_;
    std::string name_;
    int64_t size_ = -1;
    uint64_t offset_ = 0;
};

class DirectoryStore final : public ImageStore {
public:
    /// Owns `dirFd`.
    DirectoryStore(int dirFd, std::string description)
        : ownedFd_(dirFd), description_(std::move(description)) {}
    /// Borrows the fd `provider` returns at each operation.
    DirectoryStore(std::function<int()> provider, std::string description)
        : provider_(std::move(provider)), description_(std::move(description)) {}
    ~DirectoryStore() override {
        if (ownedFd_ >= 0)
            ::close(ownedFd_);
    }

    Result<std::unique_ptr<ImageWriter>> openWrite(const std::string& name) override {
        int dir = dirFd();
        int fd = openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            return makeErrnoError(ErrorCode::Io, errno, "cannot create image %s in %s",
                                  name.c_str(), description_.c_str());
        // The writer keeps its own directory fd: it may outlive this store.
        int writerDirFd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
        if (writerDirFd < 0) {
            int err = errno;
            ::close(fd);
            unlinkat(dir, name.c_str(), 0);
            return makeErrnoError(ErrorCode::Io, err, "cannot create image %s in %s",
                                  name.c_str(), description_.c_str());
        }
        return std::unique_ptr<ImageWriter>(new FdWriter(fd, writerDirFd, name));
    }
    Result<std::unique_ptr<ImageReader>> openRead(const std::string& name) override {
        int fd = openat(dirFd(), name.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return makeErrnoError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io, errno,
                                  "cannot open image %s in %s", name.c_str(),
                                  description_.c_str());
        return std::unique_ptr<ImageReader>(new FdReader(fd, name));
    }
    bool exists(const std::string& name) override {
        return faccessat(dirFd(), name.c_str(), F_OK, 0) == 0;
    }
    std::string describe() const override { return description_; }

private:
    int dirFd() const { return provider_ ? provider_() : ownedFd_; }

    int ownedFd_ = -1;
    std::function<int()> provider_;
    std::string description_;
};

class StreamerStore final : public ImageStore {
public:
    explicit StreamerStore(StreamerOpenFn open) : open_(std::move(open)) {}
    Result<std::unique_ptr<ImageWriter>> openWrite(const std::string& name) override {
        int fd = open_(name, true);
        if (fd < 0)
            return makeErrnoError(ErrorCode::Io, -fd, "image streamer: cannot create %s",
                                  name.c_str());
        return std::unique_ptr<ImageWriter>(new FdWriter(fd, -1, name));
    }
    Result<std::unique_ptr<ImageReader>> openRead(const std::string& name) override {
        int fd = open_(name, false);
        if (fd < 0)
            return makeErrnoError(-fd == ENOENT ? ErrorCode::NotFound : ErrorCode::Io, -fd,
                                  "image streamer: cannot open %s", name.c_str());
        return std::unique_ptr<ImageReader>(new FdReader(fd, name));
    }
    bool exists(const std::string&) override {
        // The streamer serves images in the order they were written; existence cannot be asked
        // without consuming one, so callers must open and handle NotFound.
        return true;
    }
    std::string describe() const override { return "image streamer"; }

private:
    StreamerOpenFn open_;
};

} // namespace

Result<std::unique_ptr<ImageStore>> openDirectoryStore(int dirFd, const std::string& description) {
    int fd = fcntl(dirFd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "cannot use image directory %s",
                              description.c_str());
    return std::unique_ptr<ImageStore>(new DirectoryStore(fd, description));
}

Result<std::unique_ptr<ImageStore>> openDirectoryStore(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "cannot open image directory %s",
                              path.c_str());
    return std::unique_ptr<ImageStore>(new DirectoryStore(fd, "directory " + path));
}

std::unique_ptr<ImageStore> makeBorrowedDirectoryStore(std::function<int()> dirFd,
                                                       std::string description) {
    return std::unique_ptr<ImageStore>(new DirectoryStore(std::move(dirFd), std::move(description)));
}

std::unique_ptr<ImageStore> makeStreamerStore(StreamerOpenFn open) {
    return std::unique_ptr<ImageStore>(new StreamerStore(std::move(open)));
}

} // namespace hal

#pragma once
/// \file
/// How the mock backend reaches the bytes of a BO, at dump and at restore alike, and how it names
/// and tells apart the BOs of its render-node images.

#include "mockgpu/bo_export.h"
#include "mockgpu/context.h"

#include "base/log.h"
#include "content/stream.h"
#include "formats/render_node_image.h"

#include <unistd.h>

#include <optional>
#include <string>

namespace mock {

/// A BO through the fd the driver exports for it (the mock's dma-buf): the source of its bytes
/// at dump, their sink at restore. The fd is opened when first needed (or handed in) and closed
/// after the last byte, so a lane holds one BO fd at a time.
class BoFile final : public content::ContentSource, public content::ContentSink {
public:
    /// Opens BO `handle` of `ctx` when first used.
    BoFile(const std::string& root, const Context& ctx, uint32_t handle, uint64_t size,
           bool writable)
        : root_(root), ctx_(ctx), handle_(handle), size_(size), writable_(writable) {}
    /// Uses `fd` (owned), a BO handed over by a restored task.
    BoFile(const std::string& root, int fd, uint32_t handle, uint64_t size)
        : root_(root), handle_(handle), size_(size), writable_(true), fd_(fd) {}
    ~BoFile() override { closeFd(); }

    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        HAL_TRY(openFd());
        HAL_TRY(criuReadBoFd(root_, fd_, offset, out, name()));
        return doneAt(offset + out.size());
    }
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        HAL_TRY(openFd());
        HAL_TRY(criuWriteBoFd(root_, fd_, offset, in, name()));
        return doneAt(offset + in.size());
    }

private:
    std::string name() const { return base::strFormat("mock BO %u", handle_); }
    base::Result<void> openFd() {
        if (fd_ < 0) {
            HAL_TRY_ASSIGN(fd_, criuExportBo(*ctx_, handle_, writable_));
        }
        return base::success();
    }
    base::Result<void> doneAt(uint64_t end) {
        if (end >= size_)
            closeFd();
        return base::success();
    }
    void closeFd() {
        if (fd_ >= 0)
            close(fd_);
        fd_ = -1;
    }

    const std::string& root_;
    std::optional<Context> ctx_;
    uint32_t handle_;
    uint64_t size_;
    bool writable_;
    int fd_ = -1;
};

/// Whether `bo` is restored by importing the memory of the BO that owns its share key.
inline bool isFollower(const formats::DrmBoEntry& bo) {
    return bo.sharing && bo.sharing->follower;
}

/// How messages name a BO of the mock.
inline std::string boWhat(const formats::DrmBoEntry& bo) {
    return base::strFormat("BO %u (%llu bytes)", bo.handle,
                           static_cast<unsigned long long>(bo.size));
}

} // namespace mock

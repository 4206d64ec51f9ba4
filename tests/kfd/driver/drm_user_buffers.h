#pragma once
/// \file
/// The user memory a DRM ioctl of a render node points at, copied from the calling process
/// (process_vm_readv, the kernel's copy_from_user) into the driver before the fake render node
/// runs it, its struct's pointers rewritten to the copies, and the buffers the kernel writes
/// copied back (process_vm_writev) after. The requests served, with what each points at, are
/// those libdrm_amdgpu and Mesa use (drm_user_buffers.cpp); any other is ENOTTY, so the fake
/// never follows a pointer of another process.

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace kfddriver {

/// The request number the kernel's table has for the DRM ioctl `request` (drm_ioctl finds an ioctl
/// by its number alone: libdrm's drmCommandWriteRead asks GEM_VA, which the table declares
/// write-only, as read-write), or 0 for one the driver does not serve.
unsigned long servedDrmRequest(unsigned long request);
/// The request served under `name` (drm.h's or amdgpu_drm.h's name without DRM_IOCTL_ or
/// DRM_IOCTL_AMDGPU_: "GEM_LIST_HANDLES", "CS", "SYNCOBJ_QUERY"), or 0 for none.
unsigned long servedDrmRequestNamed(const std::string& name);

class DrmUserBuffers {
public:
    /// The largest user buffer one ioctl may name (a larger one is ENOMEM).
    static constexpr uint64_t kMaxBuffer = 64ull << 20;

    explicit DrmUserBuffers(pid_t caller) : caller_(caller) {}

    /// Copies in what `arg` (the struct of `request`, in the driver) points at and points it at
    /// the copies: 0, -ENOTTY for a request not served, -EFAULT for memory the caller cannot
    /// read, -ENOMEM for a buffer over kMaxBuffer, -EINVAL for a count the struct cannot mean.
    int copyIn(unsigned long request, void* arg);
    /// Copies back the buffers the kernel writes: 0 or -EFAULT.
    int copyOut() const;
    /// Sets every pointer field copyIn changed back to the caller's pointer (before the struct
    /// goes back to the caller).
    void restorePointers() const;

private:
    /// Copies `bytes` bytes at the user address in the 8-byte pointer field `field` in and sets
    /// the field to the copy (a null pointer or no bytes: left as it is).
    int take(void* field, uint64_t bytes, bool written);
    int takeCsChunks(void* arg);

    struct Buffer {
        uint64_t user = 0;
        void* field = nullptr; ///< the pointer field that pointed at it
        std::vector<char> bytes;
        bool written = false;
    };
    pid_t caller_;
    std::deque<Buffer> buffers_; // a deque: a buffer's copy stays where it is as others come
};

} // namespace kfddriver

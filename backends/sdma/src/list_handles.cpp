#include "gem/list_handles.h"

#include <cerrno>

namespace gem {

base::Result<std::vector<GemListHandlesEntry>> listHandles(const FileIoctl& ioctl) {
    std::vector<GemListHandlesEntry> entries(16);
    for (int round = 0; round < kMaxListRetries; ++round) {
        GemListHandles args;
        args.entries = reinterpret_cast<uintptr_t>(entries.data());
        args.numEntries = static_cast<uint32_t>(entries.size());
        int r = ioctl(kIoctlGemListHandles, &args);
        if (r == -EINVAL || r == -ENOTTY)
            return base::makeErrnoError(base::ErrorCode::NotSupported, -r,
                                        "the kernel lacks GEM_LIST_HANDLES (Linux 6.18+)");
        if (r < 0 && r != -ENOSPC)
            return base::makeErrnoError(base::ErrorCode::Kernel, -r, "GEM_LIST_HANDLES failed");
        if (args.numEntries > entries.size()) {
            entries.resize(args.numEntries);
            continue;
        }
        entries.resize(args.numEntries);
        return entries;
    }
    return base::makeError(base::ErrorCode::Kernel,
                           "GEM_LIST_HANDLES still wants a larger array after %d rounds",
                           kMaxListRetries);
}

} // namespace gem

#include "mockgpu/bo_export.h"

#include "mockgpu/faults.h"

namespace mock {

base::Result<int> criuExportBo(const Context& ctx, uint32_t handle, bool writable) {
    return ctx.openBo(handle, writable);
}

base::Result<void> criuReadBoFd(const std::string& root, int fd, uint64_t offset,
                                std::span<std::byte> out, const std::string& what) {
    if (offset == 0)
        HAL_TRY(checkFault(root, "read-bo"));
    return transferBoAt(fd, offset, out.data(), out.size(), false, what);
}

base::Result<void> criuWriteBoFd(const std::string& root, int fd, uint64_t offset,
                                 std::span<const std::byte> in, const std::string& what) {
    if (offset == 0)
        HAL_TRY(checkFault(root, "write-bo"));
    return transferBoAt(fd, offset, const_cast<std::byte*>(in.data()), in.size(), true, what);
}

} // namespace mock

#include "kfd/vma_records.h"

#include <cstdlib>

namespace kfd {

std::optional<int> vmaDeviceOfPath(const std::string& path) {
    size_t slash = path.rfind('/');
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base == "kfd")
        return kKfdVmaDevice;
    const std::string prefix = "renderD";
    if (base.compare(0, prefix.size(), prefix) != 0 || base.size() == prefix.size())
        return std::nullopt;
    char* end = nullptr;
    long minor = strtol(base.c_str() + prefix.size(), &end, 10);
    if (*end != '\0' || minor < 0 || minor > 0xfffff)
        return std::nullopt;
    return static_cast<int>(minor);
}

void VmaRecords::add(int device, uint64_t addr, uint64_t oldOffset, VmaTarget target) {
    records_[{device, addr, oldOffset}] = target;
}

std::optional<VmaTarget> VmaRecords::find(int device, uint64_t addr, uint64_t oldOffset) const {
    auto it = records_.find({device, addr, oldOffset});
    if (it == records_.end())
        return std::nullopt;
    return it->second;
}

std::optional<VmaRecordAt> VmaRecords::findAt(int device, uint64_t addr) const {
    auto it = records_.lower_bound({device, addr, 0});
    if (it == records_.end() || std::get<0>(it->first) != device || std::get<1>(it->first) != addr)
        return std::nullopt;
    return VmaRecordAt{std::get<2>(it->first), it->second};
}

} // namespace kfd

#pragma once
/// \file
/// The new mmap offsets of restored BOs, keyed by device + address + old offset (CRIU's plugin
/// keyed them by offset alone, which is wrong when a process has several GPUs open).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace kfd {

/// The device of a mapping: /dev/kfd, or the render node of a source GPU (its render minor).
inline constexpr int kKfdVmaDevice = -1;

/// The device a mapping path names: kKfdVmaDevice for ".../kfd", N for ".../renderD<N>",
/// nullopt for anything else.
std::optional<int> vmaDeviceOfPath(const std::string& path);

/// Where a restored BO is to be mapped from now.
struct VmaTarget {
    uint64_t newOffset = 0;
    int fd = -1;       ///< fd to map from (not owned; -1 = keep the file criu restored)
    std::string image; ///< the KFD image that records the BO
};

/// A record found by device and address alone, with the old offset it was recorded under.
struct VmaRecordAt {
    uint64_t oldOffset = 0;
    VmaTarget target;
};

/// Records of restored device mappings.
class VmaRecords {
public:
    /// Records the mapping of `device` at `addr` with old offset `oldOffset`.
    void add(int device, uint64_t addr, uint64_t oldOffset, VmaTarget target);
    /// The record for a mapping, if any.
    std::optional<VmaTarget> find(int device, uint64_t addr, uint64_t oldOffset) const;
    /// The record (the one of lowest old offset) of a mapping of `device` at `addr`, whatever
    /// its old offset.
    std::optional<VmaRecordAt> findAt(int device, uint64_t addr) const;
    /// Number of records.
    size_t size() const { return records_.size(); }

private:
    std::map<std::tuple<int, uint64_t, uint64_t>, VmaTarget> records_;
};

} // namespace kfd

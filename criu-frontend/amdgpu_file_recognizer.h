#pragma once
/// \file
/// Tells AMD GPU device files from every other file without a configuration or a backend. A
/// plugin that could not set itself up (a bad option, a mock root that holds no machine, no
/// backend library) uses it to fail exactly the checkpoints that involve an AMD GPU and to stay
/// out of the way of all others, including other plugins' devices.
///
/// An AMD GPU device file is a character device that is
/// - the KFD node: its major is the one /proc/devices lists as "kfd";
/// - a DRM node (major "drm" in /proc/devices) driven by amdgpu (/sys/dev/char/MAJ:MIN/device/
///   driver names "amdgpu");
/// - a mock GPU device: its path lies under a mock root the configuration names.

#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

namespace frontend {

/// Recognises AMD GPU device files.
class AmdgpuFileRecognizer {
public:
    /// Where the recognizer looks (tests substitute copies).
    struct Paths {
        std::string procDevices = "/proc/devices"; ///< the kernel's list of device majors
        std::string sysDevChar = "/sys/dev/char";  ///< MAJ:MIN links into sysfs
    };

    /// `mockRoots`: the mock GPU roots the configuration names (made absolute and canonical here
    /// when they exist).
    explicit AmdgpuFileRecognizer(std::vector<std::string> mockRoots, Paths paths);
    explicit AmdgpuFileRecognizer(std::vector<std::string> mockRoots = {})
        : AmdgpuFileRecognizer(std::move(mockRoots), Paths()) {}

    /// What the file with stat `st` at `path` is, when it is an AMD GPU device file ("the KFD
    /// device (char 238:0)", "an amdgpu DRM node (char 226:128)", "a mock GPU device under
    /// /var/mock"); "" for any other file.
    std::string recognize(const struct stat& st, const std::string& path) const;

    /// Whether the kernel has a driver that could give AMD GPU files (a "kfd" or "drm" major in
    /// /proc/devices). Without one, only a mock GPU can be served.
    bool kernelHasGpuDriver() const;

private:
    /// The major /proc/devices lists for `name` among character devices; -1 when absent.
    int characterMajor(const char* name) const;

    std::vector<std::string> mockRoots_;
    Paths paths_;
    mutable std::optional<std::string> procDevices_; ///< read once, when first needed
};

} // namespace frontend

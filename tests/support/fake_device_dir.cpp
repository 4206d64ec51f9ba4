#include "fake_device_dir.h"

#include <sys/sysmacros.h>

#include <cerrno>

namespace testsupport {

void FakeDeviceDir::deny(int minor) {
    std::lock_guard<std::mutex> lock(mu_);
    denied_.insert(minor);
}

bool FakeDeviceDir::denied(int minor) const {
    std::lock_guard<std::mutex> lock(mu_);
    return denied_.count(minor) != 0;
}

void FakeDeviceDir::remove(int minor) {
    std::lock_guard<std::mutex> lock(mu_);
    removed_.insert(minor);
}

int FakeDeviceDir::minorOf(const std::string& path) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto made = made_.find(path);
    if (made != made_.end())
        return made->second;
    int minor = minorOfName_(path);
    return minor >= 0 && removed_.count(minor) ? -1 : minor;
}

int FakeDeviceDir::make(const std::string& path, dev_t rdev) {
    if (minorOf(path) >= 0)
        return -EEXIST;
    if (major(rdev) != topology::kDrmCharMajor)
        return -EINVAL; // a fake /dev holds render nodes only
    std::lock_guard<std::mutex> lock(mu_);
    made_[path] = static_cast<int>(minor(rdev));
    return 0;
}

int FakeDeviceDir::unlink(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return made_.erase(path) ? 0 : -ENOENT;
}

std::map<std::string, int> FakeDeviceDir::made() const {
    std::lock_guard<std::mutex> lock(mu_);
    return made_;
}

} // namespace testsupport

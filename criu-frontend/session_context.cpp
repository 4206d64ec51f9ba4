#include "session_context.h"
#include "proc_fd.h"

#include "base/log.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

namespace frontend {

base::Result<formats::ImageStore*> SessionContext::imageStore() {
    if (images)
        return images.get();
    if (!host.services.getImageDir)
        return base::makeError(base::ErrorCode::Internal,
                               "criu does not export criu_get_image_dir");
    int dirFd = host.services.getImageDir();
    if (dirFd < 0)
        return base::makeError(base::ErrorCode::Io, "criu has no image directory open");
    // criu says whether it streams (its --stream); the image directory's names do not.
    bool streaming = host.services.imgStreamerOpen && host.services.streams();
    if (streaming) {
        // img_streamer_open() takes criu's own open modes and aborts criu on any other: O_DUMP
        // (O_WRONLY | O_CREAT | O_TRUNC) in a dump, O_RSTR (O_RDONLY) in a restore. It returns
        // -ENOENT when the streamer has no such image, -1 with errno on other failures.
        auto open = host.services.imgStreamerOpen;
        images = formats::makeStreamerStore(
            [open](const std::string& name, bool forWrite) {
                std::string copy = name;
                errno = 0;
                int fd = open(copy.data(), forWrite ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY);
                if (fd >= 0 || fd == -ENOENT)
                    return fd;
                return errno ? -errno : -EIO;
            },
            stage == kStageDump ? formats::StreamDirection::Dump
                                : formats::StreamDirection::Restore);
    } else {
        images = formats::makeBorrowedDirectoryStore(host.services.getImageDir,
                                                     "criu image directory " + fdPath(dirFd));
    }
    if (device)
        device->setImageStore(images.get());
    return images.get();
}

const AmdgpuFileRecognizer& SessionContext::recognizer() {
    if (!recognizer_)
        recognizer_ = std::make_unique<AmdgpuFileRecognizer>(mockRoots, host.devicePaths);
    return *recognizer_;
}

int SessionContext::fail(const char* hook, base::Error error) {
    HAL_LOG_ERROR("%s (%s backend, %s): %s", kPluginName, backendName.c_str(), hook,
                  error.describe().c_str());
    return error.toNegativeErrno() == -ENOTSUP ? -EIO : error.toNegativeErrno();
}

std::string SessionContext::unservedReason() const {
    if (!setupError.empty())
        return "the plugin could not set itself up: " + setupError;
    return "no backend can serve it here: " + inertReason;
}

int SessionContext::refuseIfAmdgpu(const char* what, const struct stat& st,
                                   const std::string& path) {
    if (stage != kStageDump)
        return -ENOTSUP;
    std::string kind = recognizer().recognize(st, path);
    if (kind.empty())
        return -ENOTSUP;
    HAL_LOG_ERROR("%s: cannot %s %s, %s: %s", kPluginName, what, path.c_str(), kind.c_str(),
                  unservedReason().c_str());
    return setupError.empty() ? -ENODEV : -EINVAL;
}

void SessionContext::registerInInventory() {
    if (inventoryAdded_ || !host.abi.inventory || !host.services.addInventoryPlugin)
        return;
    if (host.services.addInventoryPlugin(kPluginName) != 0)
        HAL_LOG_WARN("%s: could not register in criu's inventory", kPluginName);
    inventoryAdded_ = true;
}

void SessionContext::goInert(const std::string& why, bool inventoryKnown) {
    inertReason =
        inventoryKnown ? "this checkpoint used AMD GPUs, but none can be used here: " + why : why;
    HAL_LOG_DEBUG("%s: inert: %s", kPluginName, why.c_str());
}

void SessionContext::deferSetupError(std::string error) {
    setupError = std::move(error);
    HAL_LOG_WARN("%s: %s (checkpoints of processes that use AMD GPUs will fail until this is "
                 "fixed; others are not affected)",
                 kPluginName, setupError.c_str());
}

} // namespace frontend

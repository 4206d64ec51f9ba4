// A backend for the exception barrier's tests, loaded through the real registry like any backend,
// so its exceptions cross the library boundary as a real backend's would. Its "GPU" is a control
// folder (the mock-root setting): the file `throw-at` there names the step that throws
// (create, pause, pause-int, checkpoint, dump-file, unpause, restore-file, update-vma, resume;
// fail-unpause makes unpausing fail with an error instead),
// files under the folder are its device files, and it leaves a marker file for every pause,
// unpause and aborted restore so that tests can see what was undone. With a file `seized-only`
// there it pauses only seized tasks, as KFD does: a task whose `seized-PID` file is missing is
// refused with EBADF, the kernel's answer to CRIU ops from a process that is not its tracer.

#include "hal/backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace {

/// The step the control folder asks to throw at ("" for none).
std::string throwAt(const std::string& dir) {
    std::ifstream in(dir + "/throw-at");
    std::string step;
    in >> step;
    return step;
}

bool exists(const std::string& path) {
    return access(path.c_str(), F_OK) == 0;
}

void touch(const std::string& path) {
    std::ofstream out(path, std::ios::app);
    out << "x";
}

class ThrowingDevice final : public hal::Device {
public:
    ThrowingDevice(hal::DeviceEnv env, std::string dir)
        : hal::Device("throwing", env), dir_(std::move(dir)) {}
    bool pausesOnlySeizedTasks() const override { return exists(dir_ + "/seized-only"); }

protected:
    void maybeThrow(const char* step) const {
        if (throwAt(dir_) == step)
            throw std::runtime_error(std::string("thrown at ") + step);
    }
    bool underDir(const std::string& path) const {
        return path.compare(0, dir_.size() + 1, dir_ + "/") == 0;
    }

    base::Result<bool> claimFileImpl(const hal::FileRef& file) override {
        return underDir(file.path);
    }
    base::Result<int> processOfFileImpl(const hal::FileRef&) override { return getpid(); }
    base::Result<bool> pauseImpl(int pid) override {
        if (throwAt(dir_) == "pause-int")
            throw 42;
        maybeThrow("pause");
        if (pausesOnlySeizedTasks() && !exists(dir_ + "/seized-" + std::to_string(pid)))
            return base::makeErrnoError(base::ErrorCode::Kernel, EBADF,
                                        "pausing process %d, which this process has not seized",
                                        pid);
        touch(dir_ + "/paused-" + std::to_string(pid));
        return true;
    }
    base::Result<void> collectObjectsImpl(int) override {
        maybeThrow("checkpoint");
        return base::success();
    }
    base::Result<void> streamContentsImpl(int) override { return base::success(); }
    base::Result<void> writeFileImagesImpl(const hal::FileRef&, int) override {
        maybeThrow("dump-file");
        return base::success();
    }
    base::Result<void> unpauseImpl(int pid) override {
        maybeThrow("unpause");
        if (throwAt(dir_) == "fail-unpause")
            return base::makeError(base::ErrorCode::Kernel, "unpausing process %d failed", pid);
        touch(dir_ + "/unpaused-" + std::to_string(pid));
        return base::success();
    }
    base::Result<bool> ownsImageImpl(uint32_t) override { return true; }
    base::Result<int> restoreFileImpl(uint32_t) override {
        maybeThrow("restore-file");
        return open("/dev/null", O_RDWR | O_CLOEXEC);
    }
    base::Result<std::optional<hal::VmaAnswer>> updateVmaMapImpl(const hal::VmaQuery& q) override {
        maybeThrow("update-vma");
        if (!underDir(q.path))
            return std::optional<hal::VmaAnswer>();
        hal::VmaAnswer answer;
        answer.newPgoff = q.oldPgoff + 0x100;
        return std::optional<hal::VmaAnswer>(answer);
    }
    base::Result<bool> resumeImpl(int) override {
        maybeThrow("resume");
        return true;
    }
    base::Result<void> abortRestoreImpl() override {
        touch(dir_ + "/aborted");
        return base::success();
    }
    base::Result<topology::Topology> localTopologyImpl() override { return topology::Topology(); }

private:
    std::string dir_;
};

class ThrowingBackend final : public hal::Backend {
public:
    const char* name() const override { return "throwing"; }
    hal::ProbeAnswer probe(const settings::Settings& settings) override {
        if (settings.mockRoot.empty())
            return hal::ProbeAnswer::notPresent("no control folder (mock-root)");
        hal::ProbeAnswer answer;
        answer.present = true;
        answer.reason = "control folder " + settings.mockRoot;
        return answer;
    }
    base::Result<std::unique_ptr<hal::Device>> createDevice(const hal::DeviceEnv& env) override {
        if (throwAt(env.settings->mockRoot) == "create")
            throw std::runtime_error("thrown at create");
        return std::unique_ptr<hal::Device>(new ThrowingDevice(env, env.settings->mockRoot));
    }
};

} // namespace

CRIU_AMDGPU_DEFINE_BACKEND(ThrowingBackend, "throwing")

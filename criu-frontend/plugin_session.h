#pragma once
/// \file
/// What the plugin does for each criu hook, independent of criu's C ABI: loads the settings,
/// finds and chooses a backend, opens the image store, and turns hal::Result into criu's return
/// codes. Every hook answers -ENOTSUP for what is not its own, and the whole session stays inert
/// (debug logs only) on a machine without an AMD GPU.

#include "criu_abi.h"
#include "criu_services.h"

#include "config/config.h"
#include "hal/device.h"
#include "hal/image_store.h"
#include "hal/registry.h"

#include <memory>
#include <string>

namespace frontend {

/// The plugin's name: CRIU's own AMD plugin's, so inventories and images interoperate.
inline constexpr const char* kPluginName = "amdgpu_plugin";

/// One criu run of the plugin (a dump or a restore).
class PluginSession {
public:
    /// What init needs from its surroundings; tests substitute every part.
    struct Host {
        CriuServices services;
        CriuAbi abi;
        std::string pluginDir;  ///< directory of amdgpu_plugin.so (backends are in ./amdgpu)
        config::Sources sources;
    };

    /// criu's init(stage): 0, or -1 when the configuration is wrong or a checkpoint that needs
    /// this plugin cannot be restored here (the error says why).
    int init(int stage, Host host);
    /// criu's exit(stage, ret): ends the dump (unpausing) or the restore (undoing on failure).
    void exit(int stage, int ret);

    int dumpExtFile(int fd, int id);
    int restoreExtFile(int id);
    int handleDeviceVma(int fd, const struct stat* st);
    int updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff, uint64_t* newPgoff,
                     int* pluginFd);
    int resumeDevicesLate(int pid);
    int pauseDevices(int pid);
    int checkpointDevices(int pid);
    int dumpDevicesLate(int id);
    int postForking();
    int restoreInit();

    /// True when a backend serves this run.
    bool active() const { return device_ != nullptr; }
    /// The chosen backend's name ("" when inert).
    const std::string& backendName() const { return backendName_; }

private:
    int fail(const char* hook, hal::Error error);
    hal::Result<hal::ImageStore*> imageStore();
    /// At restore, the capability the checkpoint asks of the backend ("" when any will do).
    std::string restoreRouting();
    void registerInInventory();

    Host host_;
    int stage_ = -1;
    config::Settings settings_;
    std::unique_ptr<hal::BackendRegistry> registry_;
    std::unique_ptr<hal::ImageStore> images_;
    std::unique_ptr<hal::Device> device_;
    std::string backendName_;
    std::string inertReason_;
    bool inventoryAdded_ = false;
    bool dumpFinished_ = false;
    bool resumeFailed_ = false;
};

} // namespace frontend

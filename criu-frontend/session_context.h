#pragma once
/// \file
/// What a dump session and a restore session both need from one criu run of the plugin: criu's
/// services, the settings, the chosen backend's device, the image store and the recogniser of
/// AMD GPU files, with the helpers every hook uses on them. PluginSession owns it and sets it up
/// at init; DumpSession and RestoreSession work through it.

#include "amdgpu_file_recognizer.h"
#include "criu_abi.h"
#include "criu_services.h"

#include "config/config.h"
#include "formats/image_store.h"
#include "hal/device.h"

#include <memory>
#include <string>
#include <vector>

struct stat;

namespace frontend {

/// The plugin's name: CRIU's own AMD plugin's, so inventories and images interoperate.
inline constexpr const char* kPluginName = "amdgpu_plugin";

/// What init needs from its surroundings; tests substitute every part.
struct SessionHost {
    CriuServices services;
    CriuAbi abi;
    std::string pluginDir; ///< directory of amdgpu_plugin.so (backends are in ./amdgpu)
    config::Sources sources;
    AmdgpuFileRecognizer::Paths devicePaths; ///< where AMD GPU files are recognised
    /// Where the dump's guardian (dump_guardian.h) keeps its record and log; "": no guardian is
    /// started.
    std::string guardianDir;
};

/// The state of one criu run shared by its hooks.
class SessionContext {
public:
    SessionHost host;
    int stage = -1;
    settings::Settings settings;
    std::unique_ptr<formats::ImageStore> images;
    std::unique_ptr<hal::Device> device; ///< the chosen backend's; null when inert
    std::vector<std::string> mockRoots;  ///< named by the configuration, even a broken one
    std::string backendName;
    std::string setupError;  ///< why the plugin could not set itself up ("" when it could)
    std::string inertReason; ///< why no backend serves this run ("" when one does)

    /// criu's image directory (or its image streamer), opened at the first call and handed to
    /// the device.
    base::Result<formats::ImageStore*> imageStore();
    const AmdgpuFileRecognizer& recognizer();
    /// Logs `error` of `hook` and turns it into criu's return code.
    int fail(const char* hook, base::Error error);
    /// Why no backend serves this run, for errors about AMD GPU files.
    std::string unservedReason() const;
    /// Without a device, at dump: the error for `what` when the file (stat and path) is an AMD
    /// GPU device that this plugin cannot serve; -ENOTSUP for any other file.
    int refuseIfAmdgpu(const char* what, const struct stat& st, const std::string& path);
    /// No backend serves this run, for `why`; when criu's inventory says the checkpoint used this
    /// plugin (`inventoryKnown`), AMD GPU files of the checkpoint fail with that reason.
    void goInert(const std::string& why, bool inventoryKnown);
    /// Remembers why the plugin cannot serve AMD GPUs in this run, and warns once.
    void deferSetupError(std::string error);
    /// The dump used this plugin: criu lists it in its inventory (once).
    void registerInInventory();

private:
    std::unique_ptr<AmdgpuFileRecognizer> recognizer_;
    bool inventoryAdded_ = false;
};

} // namespace frontend

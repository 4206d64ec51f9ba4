#pragma once
/// \file
/// The actions of `criu-amdgpu image show|verify|check|flatten` (cmd_image.cpp declares their
/// command lines). Each returns the command's exit status, documented in its --help.

#include <string>

namespace tools::image {

/// Exit status: the checkpoint has a problem (show, verify) or would not restore (check).
inline constexpr int kExitProblem = 2;

/// `image show DIR [--json]`.
int runShow(const std::string& dir, bool json);
/// `image verify DIR [--key PRIVATE_KEY] [--json]`.
int runVerify(const std::string& dir, bool json, const std::string& key = "");
/// `image check DIR [--topology SYSFS_DIR] [--dev DEV_DIR] [--backend-dir DIR] [--json]`.
struct CheckArgs {
    std::string dir;
    std::string topology;   ///< another machine's KFD sysfs tree; "" = this machine
    std::string backendDir; ///< replaces the configured backend directory when not empty
    /// The device directory the restored process will see (a new pod's /dev); "" = as configured
    std::string dev;
    /// The private key that opens an encrypted checkpoint (content-private-key); "" = as configured
    std::string key;
    bool json = false;
};
int runCheck(const CheckArgs& args);
/// `image flatten DIR OUT`: an incremental checkpoint made self-contained in OUT.
int runFlatten(const std::string& dir, const std::string& out);

} // namespace tools::image

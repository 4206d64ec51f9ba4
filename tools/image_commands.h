#pragma once
/// \file
/// The actions of `criu-amdgpu image show|verify|check|flatten|sign` (cmd_image.cpp declares their
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
/// `image sign DIR [--key KEY] [--cert CERT]`: the checkpoint signed as a dump with option
/// checkpoint-signing-key signs it (image_sign.cpp).
int runSign(const std::string& dir, const std::string& key, const std::string& certificate);

/// What `verify` and `check` say of a checkpoint's signature (option trusted-certificates).
struct SignatureVerdict {
    bool required = false; ///< the option is set
    std::string refusal;   ///< why the checkpoint is refused ("" when it is accepted)
    std::string summary;   ///< who signed it and what was checked, when accepted
};
/// The check a restore makes of `dir` against the certificates `trusted` (a file or directory;
/// "" = signatures not required).
SignatureVerdict checkSignature(const std::string& dir, const std::string& trusted);

} // namespace tools::image

#include "dump_session.h"
#include "proc_fd.h"
#include "restore_session.h"

#include "base/log.h"
#include "formats/checkpoint_signing.h"

#include <unistd.h>

#include <cerrno>

// Signed checkpoints (formats/checkpoint_signing.h): the dump signs its image directory at
// DUMP_FINISH (criu 4.3+), after criu has written its images; the restore checks it in the
// plugin's init, the first thing criu runs of the plugin at restore (criu 4.1+ has read its
// inventory image by then, and nothing else).

namespace frontend {

bool RestoreSession::signatureAccepted(const settings::Settings& settings) {
    if (settings.trustedCertificates.empty())
        return true;
    auto refuse = [](const std::string& why) {
        HAL_LOG_ERROR("%s: restore refused (option trusted-certificates): %s", kPluginName,
                      why.c_str());
        return false;
    };
    if (!ctx_.host.services.getImageDir || ctx_.host.services.getImageDir() < 0)
        return refuse("criu has no image directory open to check");
    if (ctx_.host.services.imgStreamerOpen && ctx_.host.services.streams())
        return refuse("criu streams the images (--stream): a signed checkpoint is a directory");
    auto trust = formats::TrustedSigners::load(settings.trustedCertificates);
    if (!trust.ok())
        return refuse(trust.error().describe());
    int dirFd = ctx_.host.services.getImageDir();
    auto checked = formats::verifyCheckpoint(dirFd, fdPath(dirFd), *trust);
    if (!checked.ok())
        return refuse(checked.error().describe());
    HAL_LOG_INFO("%s: the checkpoint is signed by a trusted certificate (%s): %zu files, %llu "
                 "bytes, %zu level(s) checked",
                 kPluginName, checked->signer.c_str(), checked->entries,
                 static_cast<unsigned long long>(checked->bytes), checked->levels);
    return true;
}

void DumpSession::warnIfCannotSign() {
    if (ctx_.settings.checkpointSigningKey.empty() || ctx_.host.abi.has(kDumpFinish))
        return;
    HAL_LOG_WARN("%s: checkpoint-signing-key is set, but this criu (%s) has no DUMP_FINISH hook, "
                 "the only one that runs after criu's images are written: the checkpoint will "
                 "not be signed (sign it with `criu-amdgpu image sign DIR --key KEY --cert "
                 "CERT`)",
                 kPluginName, ctx_.host.abi.release.c_str());
}

int DumpSession::signAtDumpFinish(int ret) {
    if (ctx_.settings.checkpointSigningKey.empty() &&
        ctx_.settings.checkpointSigningCertificate.empty())
        return 0;
    int dirFd = ctx_.host.services.getImageDir ? ctx_.host.services.getImageDir() : -1;
    if (ret != 0) {
        // criu failed the dump after this plugin signed it (another plugin's DUMP_FINISH).
        if (manifestWritten_ && dirFd >= 0)
            unlinkat(dirFd, formats::kManifestImageName, 0);
        manifestWritten_ = false;
        return 0;
    }
    if (manifestWritten_)
        return 0;
    auto fail = [](const std::string& why) {
        HAL_LOG_ERROR("%s: cannot sign the checkpoint (option checkpoint-signing-key): %s",
                      kPluginName, why.c_str());
        return -EIO;
    };
    if (dirFd < 0)
        return fail("criu has no image directory open");
    if (ctx_.host.services.imgStreamerOpen && ctx_.host.services.streams())
        return fail("criu streams the images (--stream): only a directory can be signed");
    auto signer = formats::ManifestSigner::load(ctx_.settings.checkpointSigningKey,
                                                ctx_.settings.checkpointSigningCertificate);
    if (!signer.ok())
        return fail(signer.error().describe());
    auto made = formats::signCheckpoint(dirFd, fdPath(dirFd), *signer);
    if (!made.ok())
        return fail(made.error().describe());
    manifestWritten_ = true;
    HAL_LOG_INFO("%s: signed the checkpoint with %s (%s): %zu files, %llu bytes", kPluginName,
                 formats::schemeName(signer->scheme()), made->signer.c_str(), made->entries,
                 static_cast<unsigned long long>(made->bytes));
    return 0;
}

} // namespace frontend

// criu-amdgpu image sign: a checkpoint directory signed as a dump with checkpoint-signing-key
// signs it (formats/checkpoint_signing.h); and the check of a signature that image verify and
// image check make where the option trusted-certificates is set.
#include "image_commands.h"
#include "printable.h"

#include "command.h"

#include "config/config.h"
#include "config/sources.h"
#include "formats/checkpoint_signing.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace tools::image {
namespace {

int fail(const std::string& message) {
    fprintf(stderr, "criu-amdgpu image sign: %s\n", printable(message).c_str());
    return kExitBadInput;
}

/// The checkpoint directory `dir` opened read-only, or an error naming it.
base::Result<int> openCheckpointDir(const std::string& dir) {
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::NotFound, errno, "%s: not a directory to open",
                                    dir.c_str());
    return fd;
}

} // namespace

SignatureVerdict checkSignature(const std::string& dir, const std::string& trusted) {
    SignatureVerdict v;
    v.required = !trusted.empty();
    if (!v.required)
        return v;
    auto trust = formats::TrustedSigners::load(trusted);
    if (!trust) {
        v.refusal = trust.error().describe();
        return v;
    }
    auto fd = openCheckpointDir(dir);
    if (!fd) {
        v.refusal = fd.error().describe();
        return v;
    }
    auto checked = formats::verifyCheckpoint(*fd, dir, *trust);
    close(*fd);
    if (!checked)
        v.refusal = checked.error().describe();
    else
        v.summary =
            base::strFormat("signed by a trusted certificate (%s): %zu files, %llu bytes, "
                            "%zu level(s) checked",
                            checked->signer.c_str(), checked->entries,
                            static_cast<unsigned long long>(checked->bytes), checked->levels);
    return v;
}

int runSign(const std::string& dir, const std::string& key, const std::string& certificate) {
    auto settings = config::loadSettings(config::Sources::fromProcessEnvironment());
    if (!settings)
        return fail(settings.error().describe());
    std::string k = key.empty() ? settings->checkpointSigningKey : key;
    std::string c = certificate.empty() ? settings->checkpointSigningCertificate : certificate;
    if (k.empty() || c.empty())
        return fail("give the signing key and its certificate (--key and --cert, or the options "
                    "checkpoint-signing-key and checkpoint-signing-certificate)");
    auto signer = formats::ManifestSigner::load(k, c);
    if (!signer)
        return fail(signer.error().describe());
    auto fd = openCheckpointDir(dir);
    if (!fd)
        return fail(fd.error().describe());
    auto made = formats::signCheckpoint(*fd, dir, *signer);
    close(*fd);
    if (!made)
        return fail(made.error().describe());
    printf("signed %s with %s (%s): %zu files, %llu bytes, in %s\n", printable(dir).c_str(),
           formats::schemeName(signer->scheme()), made->signer.c_str(), made->entries,
           static_cast<unsigned long long>(made->bytes), formats::kManifestImageName);
    return 0;
}

} // namespace tools::image

#include "formats/checkpoint_signing.h"

#include "formats/image_chain.h"
#include "formats/image_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <utility>

namespace formats {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::strFormat;

namespace {

/// Where the manifest is written before it is renamed into place (outsideManifest leaves it out
/// of nothing: a leftover one makes a check fail, naming it).
constexpr const char* kTemporaryName = ".amdgpu-manifest.img.tmp";
/// The most differences one error lists.
constexpr size_t kMaxListed = 20;

struct Fd {
    int fd = -1;
    explicit Fd(int f) : fd(f) {}
    Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    ~Fd() {
        if (fd >= 0)
            close(fd);
    }
};

uint64_t bytesOf(const Manifest& m) {
    uint64_t n = 0;
    for (const ManifestEntry& e : m.entries)
        n += e.size;
    return n;
}

Result<std::string> readManifest(int dirFd, const std::string& file) {
    auto opened = openImageFile(dirFd, kManifestImageName);
    if (!opened.ok() && opened.error().code() == ErrorCode::NotFound)
        return makeError(ErrorCode::Image,
                         "%s: missing: the checkpoint is not signed (a restore "
                         "with trusted-certificates accepts signed ones only; "
                         "criu-amdgpu image sign signs one)",
                         file.c_str());
    if (!opened.ok())
        return std::move(opened).error();
    Fd fd(*opened);
    std::string bytes;
    char block[65536];
    for (;;) {
        ssize_t n = read(fd.fd, block, sizeof block);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return makeErrnoError(ErrorCode::Io, errno, "%s: cannot read it", file.c_str());
        if (n == 0)
            break;
        bytes.append(block, static_cast<size_t>(n));
        if (bytes.size() > kMaxManifestBytes)
            return makeError(ErrorCode::Image, "%s: over %llu bytes, not a manifest", file.c_str(),
                             static_cast<unsigned long long>(kMaxManifestBytes));
    }
    return bytes;
}

/// Checks one level: its manifest, read, trusted and compared with the directory; `signer` is
/// set to who signed it.
Result<Manifest> verifyLevel(int dirFd, const std::string& dirName, const TrustedSigners& trust,
                             std::string& signer) {
    std::string file = dirName + "/" + kManifestImageName;
    HAL_TRY_ASSIGN(std::string bytes, readManifest(dirFd, file));
    HAL_TRY_ASSIGN(SignedManifest stored, decodeSignedManifest(bytes, file));
    HAL_TRY(trust.verify(stored, file));
    HAL_TRY_ASSIGN(Manifest listed, decodeManifestBody(stored.body, file));
    HAL_TRY_ASSIGN(Manifest now, scanCheckpointDirectory(dirFd, dirName));
    std::vector<std::string> differences = manifestDifferences(listed, now);
    if (!differences.empty()) {
        std::string text;
        for (size_t i = 0; i < differences.size() && i < kMaxListed; ++i)
            text += (i ? "; " : "") + differences[i];
        if (differences.size() > kMaxListed)
            text += strFormat("; and %zu more", differences.size() - kMaxListed);
        return makeError(ErrorCode::Image, "%s: does not hold what its signed manifest lists: %s",
                         dirName.c_str(), text.c_str());
    }
    signer = TrustedSigners::describeCertificate(stored.certificate);
    return listed;
}

const ManifestEntry* parentLinkOf(const Manifest& m) {
    for (const ManifestEntry& e : m.entries)
        if (e.name == "parent" && e.kind == ManifestEntry::Kind::Link)
            return &e;
    return nullptr;
}

} // namespace

Result<CheckpointSignature> signCheckpoint(int dirFd, const std::string& dirName,
                                           const ManifestSigner& signer) {
    unlinkat(dirFd, kTemporaryName, 0); // one a failed signing left
    HAL_TRY_ASSIGN(Manifest manifest, scanCheckpointDirectory(dirFd, dirName));
    SignedManifest stored;
    stored.scheme = signer.scheme();
    stored.body = encodeManifestBody(manifest);
    stored.certificate = signer.certificate();
    HAL_TRY_ASSIGN(stored.signature, signer.sign(signedPart(stored)));
    std::string bytes = encodeSignedManifest(stored);

    std::string file = dirName + "/" + kManifestImageName;
    Fd fd(
        openat(dirFd, kTemporaryName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "%s/%s: cannot create it", dirName.c_str(),
                              kTemporaryName);
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = write(fd.fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            unlinkat(dirFd, kTemporaryName, 0);
            return makeErrnoError(ErrorCode::Io, err, "%s: cannot write it", file.c_str());
        }
        done += static_cast<size_t>(n);
    }
    if (fsync(fd.fd) != 0 || renameat(dirFd, kTemporaryName, dirFd, kManifestImageName) != 0) {
        int err = errno;
        unlinkat(dirFd, kTemporaryName, 0);
        return makeErrnoError(ErrorCode::Io, err, "%s: cannot write it", file.c_str());
    }
    CheckpointSignature out;
    out.entries = manifest.entries.size();
    out.bytes = bytesOf(manifest);
    out.levels = 1;
    out.signer = TrustedSigners::describeCertificate(stored.certificate);
    return out;
}

Result<CheckpointSignature> verifyCheckpoint(int dirFd, const std::string& dirName,
                                             const TrustedSigners& trust) {
    CheckpointSignature out;
    std::set<std::pair<dev_t, ino_t>> seen;
    std::vector<Fd> held; // the levels' directories, open while their parents are opened
    int at = dirFd;
    std::string name = dirName;
    for (;;) {
        struct stat st {};
        if (fstat(at, &st) != 0)
            return makeErrnoError(ErrorCode::Io, errno, "%s", name.c_str());
        if (!seen.insert({st.st_dev, st.st_ino}).second)
            return makeError(ErrorCode::Image, "%s: already in the chain (a loop of parent links)",
                             name.c_str());
        std::string signer;
        HAL_TRY_ASSIGN(Manifest level, verifyLevel(at, name, trust, signer));
        if (out.levels++ == 0)
            out.signer = signer;
        out.entries += level.entries.size();
        out.bytes += bytesOf(level);
        const ManifestEntry* parent = parentLinkOf(level);
        if (!parent)
            return out;
        if (out.levels >= kMaxChainDepth)
            return makeError(ErrorCode::Image, "%s: a chain of parent links deeper than %zu",
                             dirName.c_str(), kMaxChainDepth);
        std::string parentName = name + "/parent (" + escapeName(parent->target) + ")";
        auto opened = openImageDirectory(at, "parent");
        if (!opened.ok())
            return std::move(opened.error().addContext("while checking the signed parent of " +
                                                       name + " (its manifest lists it)"));
        held.emplace_back(*opened);
        at = held.back().fd;
        name = parentName;
    }
}

} // namespace formats

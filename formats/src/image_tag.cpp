#include "formats/image_tag.h"

#include "little_endian.h"

#include "formats/content_keys.h"
#include "formats/image_names.h"

#include "base/log.h"

#include <gnutls/gnutls.h>

#include <cstring>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;

namespace {

constexpr char kMagic[4] = {'A', 'G', 'I', 'T'};
constexpr uint32_t kVersion = 1;
constexpr size_t kTagFileBytes = sizeof kMagic + 4 + sizeof(ImageTag);

/// The id of the checkpoint in `parentDir`, when given: null without one. An encrypted
/// checkpoint's parent is encrypted (ContentKeys::prepareDump), so one without keys is an error.
Result<std::optional<CheckpointId>> parentIdOf(ImageStore& store, const std::string& name,
                                               const std::optional<std::string>& parentDir) {
    if (!parentDir)
        return std::optional<CheckpointId>();
    HAL_TRY_ASSIGN(std::shared_ptr<const SealKeys> parent,
                   store.contentKeys().keysOf(store, *parentDir));
    if (!parent)
        return makeError(ErrorCode::Image,
                         "%s: an encrypted checkpoint's record names the parent %s, which is not "
                         "encrypted (an encrypted chain is encrypted throughout)",
                         name.c_str(), parentDir->c_str());
    return std::optional<CheckpointId>(parent->id());
}

/// The two tags compared in a time that does not tell where they differ (GnuTLS's, the library
/// that made them).
bool sameTag(const ImageTag& a, const ImageTag& b) {
    return gnutls_memcmp(a.data(), b.data(), a.size()) == 0;
}

/// The tag in the tag file `tagName`; errors name it.
Result<ImageTag> readTagFile(ImageStore& store, const std::string& tagName) {
    HAL_TRY_ASSIGN(std::unique_ptr<ImageReader> in, store.openRead(tagName));
    std::array<std::byte, kTagFileBytes> bytes{};
    HAL_TRY_CONTEXT(in->readExact(bytes), "reading the image tag %s", tagName.c_str());
    HAL_TRY_ASSIGN(bool end, in->atEnd());
    if (!end)
        return makeError(ErrorCode::Image, "%s: bytes after its tag", tagName.c_str());
    if (memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return makeError(ErrorCode::Image, "%s: its magic is not \"AGIT\"", tagName.c_str());
    uint32_t version = le::get<uint32_t>(bytes.data() + sizeof kMagic);
    if (version != kVersion)
        return makeError(ErrorCode::Image, "%s: version %u (this build reads %u)", tagName.c_str(),
                         version, kVersion);
    ImageTag tag{};
    memcpy(tag.data(), bytes.data() + sizeof kMagic + 4, tag.size());
    return tag;
}

} // namespace

std::string imageTagName(const std::string& name) {
    size_t slash = name.rfind('/');
    std::string dir = slash == std::string::npos ? std::string() : name.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? name : name.substr(slash + 1);
    std::string tagged = withOurPrefix(base, "amdgpu-tag-");
    if (tagged == base) // not a name of ours: tests and tools name images freely
        tagged = "amdgpu-tag-" + base;
    return dir + tagged;
}

Result<void> writeImageTag(ImageStore& store, const std::string& name,
                           std::span<const std::byte> bytes,
                           const std::optional<std::string>& parentDir) {
    HAL_TRY_ASSIGN(std::shared_ptr<const SealKeys> keys, store.contentKeys().dumpKeys(store));
    if (!keys)
        return success();
    HAL_TRY_ASSIGN(std::optional<CheckpointId> parent, parentIdOf(store, name, parentDir));
    ImageTag tag = keys->imageTag(name, bytes, parent ? &*parent : nullptr);
    std::string out(kMagic, sizeof kMagic);
    le::append<uint32_t>(out, kVersion);
    out.append(reinterpret_cast<const char*>(tag.data()), tag.size());
    std::string tagName = imageTagName(name);
    HAL_TRY_ASSIGN(std::unique_ptr<ImageWriter> writer, store.openWrite(tagName));
    HAL_TRY(writer->write(std::as_bytes(std::span(out.data(), out.size()))));
    return writer->close();
}

Result<void> checkImageTag(ImageStore& store, const std::string& name,
                           std::span<const std::byte> bytes,
                           const std::optional<std::string>& parentDir) {
    ContentKeys& contentKeys = store.contentKeys();
    SealOptions options = contentKeys.options();
    if (options.privateKey.empty())
        return success(); // nothing to check with (see the header)
    HAL_TRY_ASSIGN(std::shared_ptr<const SealKeys> keys,
                   contentKeys.keysOf(store, directoryOf(name)));
    if (!keys)
        return success(); // in the clear, and content-allow-plaintext accepts that
    std::string tagName = imageTagName(name);
    if (!store.exists(tagName)) {
        if (options.allowPlaintext) {
            HAL_LOG_WARN("%s: no image tag (%s): read unauthenticated, as "
                         "content-allow-plaintext accepts",
                         name.c_str(), tagName.c_str());
            return success();
        }
        return makeError(ErrorCode::Image,
                         "%s: its tag %s is missing, and every image of ours in an encrypted "
                         "checkpoint is tagged under its key (a checkpoint made before image "
                         "tags, or one whose tag was removed; set content-allow-plaintext to read "
                         "checkpoints without them)",
                         name.c_str(), tagName.c_str());
    }
    HAL_TRY_ASSIGN(ImageTag recorded, readTagFile(store, tagName));
    HAL_TRY_ASSIGN(std::optional<CheckpointId> parent, parentIdOf(store, name, parentDir));
    if (!sameTag(recorded, keys->imageTag(name, bytes, parent ? &*parent : nullptr)))
        return makeError(ErrorCode::Image,
                         "%s: does not match its tag %s under the checkpoint's key: the image was "
                         "changed after the dump, or comes from another checkpoint%s",
                         name.c_str(), tagName.c_str(),
                         parentDir ? strFormat(", or its parent %s is not the checkpoint it was "
                                               "dumped against",
                                               parentDir->c_str())
                                         .c_str()
                                   : "");
    return success();
}

} // namespace formats

#include "formats/content_keys.h"

#include "formats/image_chain.h"

#include "base/log.h"

#include <filesystem>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;

namespace {

/// The bytes of a key image before its wrapped key.
constexpr size_t kSealFixed = 8 + 4 + 4 + kCheckpointIdBytes + 32 + 32 + kKeyCheckBytes + 4;

} // namespace

std::shared_ptr<ContentKeys> makeContentKeys() {
    return std::make_shared<ContentKeys>();
}

std::string sealImageNameIn(const std::string& dir) {
    return dir.empty() ? std::string(kSealImageName) : dir + "/" + kSealImageName;
}

std::string directoryOf(const std::string& name) {
    size_t slash = name.rfind('/');
    return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

Result<std::optional<SealImage>> readSealImage(ImageStore& store, const std::string& name) {
    if (!store.exists(name))
        return std::optional<SealImage>();
    HAL_TRY_ASSIGN(std::unique_ptr<ImageReader> in, store.openRead(name));
    std::string bytes(kSealFixed, '\0');
    HAL_TRY_CONTEXT(in->readExact(std::as_writable_bytes(std::span(bytes.data(), bytes.size()))),
                    "reading the key image %s", name.c_str());
    uint32_t length = 0;
    for (size_t i = 0; i < 4; ++i)
        length |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[kSealFixed - 4 + i]))
                  << (8 * i);
    if (length == 0 || length > kMaxWrappedKey)
        return makeError(ErrorCode::Image, "%s: a wrapped key of %u bytes (1 to %u)", name.c_str(),
                         length, kMaxWrappedKey);
    bytes.resize(kSealFixed + length);
    HAL_TRY_CONTEXT(
        in->readExact(std::as_writable_bytes(std::span(bytes.data() + kSealFixed, length))),
        "reading the key image %s", name.c_str());
    HAL_TRY_ASSIGN(bool end, in->atEnd());
    if (!end)
        return makeError(ErrorCode::Image, "%s: bytes after its wrapped key", name.c_str());
    HAL_TRY_ASSIGN(SealImage image, decodeSealImage(bytes, name));
    return std::optional<SealImage>(std::move(image));
}

void ContentKeys::configure(SealOptions options) {
    std::lock_guard lock(mu_);
    if (options.privateKey != options_.privateKey)
        privateKey_.reset();
    options_ = std::move(options);
}

SealOptions ContentKeys::options() const {
    std::lock_guard lock(mu_);
    return options_;
}

Result<std::shared_ptr<const SealKeys>>
ContentKeys::prepareDump(ImageStore& store, const std::optional<std::string>& parentDir) {
    std::lock_guard preparing(prepareMu_);
    {
        std::lock_guard lock(mu_);
        if (dumpPrepared_ && dumpKeys_ && parentDir && !dumpHasParent_)
            // A chain shares its parent's key: images of ours written before the parent was
            // known would be sealed or tagged under a key of their own.
            return makeError(ErrorCode::Internal,
                             "the checkpoint's key was made before its parent %s was known",
                             parentDir->c_str());
        if (dumpPrepared_)
            return dumpKeys_;
    }
    SealOptions options = this->options();
    if (parentDir && options.cipher == Cipher::None && store.exists(sealImageNameIn(*parentDir)))
        return makeError(ErrorCode::Config,
                         "content-encryption none: the parent checkpoint %s is encrypted, so this "
                         "one must be too (set content-encryption, content-certificate and the "
                         "content-private-key that opens the parent)",
                         parentDir->c_str());
    std::shared_ptr<const SealKeys> parent;
    if (parentDir && options.cipher != Cipher::None) {
        if (store.exists(sealImageNameIn(*parentDir))) {
            HAL_TRY_ASSIGN(parent, keysOf(store, *parentDir));
        }
        if (!parent)
            return makeError(ErrorCode::Config,
                             "content-encryption %s: the parent checkpoint %s is not encrypted; an "
                             "encrypted chain starts with an encrypted full checkpoint (unset "
                             "parent-images or make a full one)",
                             cipherName(options.cipher), parentDir->c_str());
    }
    std::shared_ptr<const SealKeys> keys;
    if (options.cipher != Cipher::None) {
        HAL_TRY_ASSIGN(Certificate cert,
                       loadCertificate(options.certificate, "content-certificate"));
        HAL_TRY_ASSIGN(Secret<MasterKey> master, Secret<MasterKey>::make());
        if (parent)
            *master = parent->master();
        else
            HAL_TRY(randomBytes(*master));
        CheckpointId id{};
        HAL_TRY(randomBytes(id));
        HAL_TRY_ASSIGN(keys, SealKeys::derive(options.cipher, *master, id));
        SealImage image;
        image.cipher = options.cipher;
        image.id = id;
        image.certificate = cert.fingerprint;
        image.keyId = cert.keyId;
        image.check = keys->keyCheck();
        HAL_TRY_ASSIGN(image.wrapped, wrapKey(cert, *master));
        std::string bytes = encodeSealImage(image);
        HAL_TRY_ASSIGN(std::unique_ptr<ImageWriter> out, store.openWrite(kSealImageName));
        HAL_TRY(out->write(std::as_bytes(std::span(bytes.data(), bytes.size()))));
        HAL_TRY(out->close());
        HAL_LOG_INFO("BO contents encrypted with %s, key wrapped for the certificate %s%s",
                     cipherName(options.cipher), hexOf(cert.fingerprint).c_str(),
                     parent ? " (the parent checkpoint's key)" : "");
    }
    std::lock_guard lock(mu_);
    if (!dumpPrepared_) {
        dumpPrepared_ = true;
        dumpHasParent_ = parentDir.has_value();
        dumpKeys_ = std::move(keys);
    }
    return dumpKeys_;
}

Result<std::shared_ptr<const SealKeys>> ContentKeys::dumpKeys(ImageStore& store) {
    {
        std::lock_guard lock(mu_);
        if (dumpPrepared_)
            return dumpKeys_;
    }
    // The same parent IncrementalDump::open finds, whichever image of ours is written first.
    std::optional<std::string> parent;
    if (store.rereadable()) {
        HAL_TRY_ASSIGN(parent, parentDirectory(store, options().parentImages));
    }
    return prepareDump(store, parent);
}

Result<std::shared_ptr<const SealKeys>> ContentKeys::keysOf(ImageStore& store,
                                                            const std::string& dir) {
    std::string key = std::filesystem::path(dir).lexically_normal().string();
    if (key == ".")
        key.clear();
    // Lanes restoring at once ask together; the first reads (one request to an image streamer,
    // one unwrap with the private key) while the others wait for its answer.
    std::lock_guard reading(readMu_);
    {
        std::lock_guard lock(mu_);
        auto it = read_.find(key);
        if (it != read_.end())
            return it->second;
    }
    HAL_TRY_ASSIGN(std::shared_ptr<const SealKeys> keys, readKeys(store, key));
    std::lock_guard lock(mu_);
    return read_.emplace(key, std::move(keys)).first->second;
}

Result<std::shared_ptr<const SealKeys>> ContentKeys::readKeys(ImageStore& store,
                                                              const std::string& dir) {
    std::string name = sealImageNameIn(dir);
    HAL_TRY_ASSIGN(std::optional<SealImage> image, readSealImage(store, name));
    if (!image) {
        std::lock_guard lock(mu_);
        if (options_.privateKey.empty() || options_.allowPlaintext)
            return std::shared_ptr<const SealKeys>();
        return makeError(ErrorCode::Image,
                         "%s is missing, and content-private-key is set: this node restores only "
                         "encrypted checkpoints, and every checkpoint of a chain holds its key "
                         "image (a checkpoint in the clear, or one whose encryption was stripped; "
                         "set content-allow-plaintext to read checkpoints in the clear too)",
                         name.c_str());
    }
    std::unique_lock lock(mu_);
    if (options_.privateKey.empty())
        return makeError(ErrorCode::Config,
                         "%s: the checkpoint's GPU contents are encrypted (%s), and no "
                         "content-private-key is given to open them",
                         name.c_str(), cipherName(image->cipher));
    if (!privateKey_) {
        HAL_TRY_ASSIGN(PrivateKey loaded,
                       PrivateKey::load(options_.privateKey, "content-private-key"));
        privateKey_ = std::move(loaded);
    }
    HAL_TRY_ASSIGN(Secret<MasterKey> master,
                   privateKey_->unwrap(*image, name, options_.legacyKeyWrap));
    lock.unlock();
    return SealKeys::derive(image->cipher, *master, image->id);
}

} // namespace formats

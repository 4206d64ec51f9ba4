#pragma once
/// \file
/// The keys of the encrypted contents of a checkpoint and of its parents (issue 35), as an
/// image store holds them (ImageStore::contentKeys()): configured from the options
/// `content-encryption`, `content-certificate` and `content-private-key`, then asked by the
/// contents files (formats/packed_image.h) and the chunk records (datapath/image_increment.h).
///
/// At dump, the first image of ours (or the incremental dump's open) makes the checkpoint's keys:
/// a fresh checkpoint id, a fresh master key, or, when the dump has a parent, the parent's master
/// key, unwrapped with `content-private-key` (a child's chunk identities must compare with its
/// parent's, so a chain shares one master key; the dump node then needs the private key too), and
/// writes the key image (formats/seal_image.h) with the master key wrapped for
/// `content-certificate`. A parent that is encrypted while the dump is not, or the other way
/// round, is refused, naming the option: a chain is encrypted throughout or not at all.
///
/// At restore (and in the tool), a directory of the chain is encrypted when it holds a key image;
/// its keys are unwrapped once with `content-private-key` and kept. A key image without a private
/// key given, or with one that does not open it, is an error naming the file and the option.
///
/// No downgrade (issue 52). Where `content-private-key` is set, the node expects sealed contents:
/// the key in its configuration is the record of that which no one who writes a checkpoint can
/// change. Every directory of a chain must then hold a key image (a missing one is an error
/// naming the file and the option), and so contents that are never sealed (CRIU's pages files,
/// opened through openContentsImage too) are refused, unless `content-allow-plaintext` says to
/// read checkpoints in the clear too.

#include "base/result.h"
#include "formats/content_cipher.h"
#include "formats/image_store.h"
#include "formats/seal_image.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace formats {

using base::Result;

/// What the options ask for.
struct SealOptions {
    Cipher cipher = Cipher::None;
    std::string certificate; ///< dump: whose public key wraps the master key
    std::string privateKey;  ///< restore, and a dump against an encrypted parent
    /// content-allow-plaintext: with a private key, still read checkpoints in the clear.
    bool allowPlaintext = false;
    /// content-legacy-key-wrap: read key images wrapped with RSA PKCS#1 v1.5 (version 1).
    bool legacyKeyWrap = false;
    /// parent-images: the parent a dump's keys come from (formats/image_chain.h,
    /// parentDirectory), whichever image of the dump asks for them first.
    std::string parentImages;
};

class ContentKeys {
public:
    /// Sets the options; keys made before are kept (a checkpoint is sealed once).
    void configure(SealOptions options);
    SealOptions options() const;

    /// Dump: makes the checkpoint's keys and writes its key image when the options ask for
    /// encryption (null when not), against the parent in directory `parentDir` of the store (see
    /// above). Done once; later calls return the same keys.
    Result<std::shared_ptr<const SealKeys>>
    prepareDump(ImageStore& store, const std::optional<std::string>& parentDir);
    /// Dump: the keys the contents and image tags are sealed with (prepareDump against the parent
    /// of the options' parentImages, or criu's parent link, when not done).
    Result<std::shared_ptr<const SealKeys>> dumpKeys(ImageStore& store);

    /// The keys of the checkpoint in directory `dir` of the store ("" for its own), null when it
    /// holds no key image and that is allowed (see above: with a private key set, an error
    /// naming the key image and the options).
    Result<std::shared_ptr<const SealKeys>> keysOf(ImageStore& store, const std::string& dir);

private:
    Result<std::shared_ptr<const SealKeys>> readKeys(ImageStore& store, const std::string& dir);

    mutable std::mutex mu_;
    std::mutex prepareMu_; ///< one dump makes one key, however many lanes ask at once
    std::mutex readMu_; ///< a checkpoint's key image is read once, however many lanes ask at once
    SealOptions options_;
    bool dumpPrepared_ = false;
    bool dumpHasParent_ = false; ///< the dump's keys were made against a parent
    std::shared_ptr<const SealKeys> dumpKeys_;
    std::map<std::string, std::shared_ptr<const SealKeys>> read_; ///< by directory
    std::optional<PrivateKey> privateKey_;
};

/// The name of the key image of directory `dir` of a store ("" for its own).
std::string sealImageNameIn(const std::string& dir);
/// The directory part of an image name ("../ck1/amdgpu-x.img" -> "../ck1"; "" when none).
std::string directoryOf(const std::string& name);

/// The key image `name` of `store`, or nullopt when there is none; errors name the file.
Result<std::optional<SealImage>> readSealImage(ImageStore& store, const std::string& name);

} // namespace formats

#pragma once
/// \file
/// Signing a checkpoint directory and checking one (formats/checkpoint_manifest.h for what a
/// manifest covers, formats/manifest_signature.h for who signs and whom a restore trusts).
///
/// A checkpoint is accepted when its `amdgpu-manifest.img` is there, is signed by a trusted
/// certificate, and the directory holds exactly what it lists (no file changed, added or
/// removed, no link leading elsewhere). When it lists criu's `parent` link (an incremental dump),
/// the directory the link leads to is checked the same way, and so on up the chain (at most
/// kMaxChainDepth levels, none twice): every level must be signed by a trusted certificate.
/// A chain made with the option `parent-images` instead of criu's link is not followed: the
/// child's signature covers its own chunk record, which names the parent's and its checksum,
/// not the parent's files.

#include "formats/checkpoint_manifest.h"
#include "formats/manifest_signature.h"

#include "base/result.h"

#include <cstdint>
#include <string>

namespace formats {

using base::Result;

/// What a signing or a check went over.
struct CheckpointSignature {
    size_t entries = 0; ///< files and links listed (over every level of a chain, for a check)
    uint64_t bytes = 0; ///< their bytes
    size_t levels = 0;  ///< directories checked (1 + the parents)
    std::string signer; ///< the (first level's) signer's fingerprint and subject
};

/// Writes the signed manifest of directory `dirFd` (`dirName` in errors) into it: every entry
/// hashed, the manifest signed with `signer`, written to a temporary file and renamed over any
/// earlier `amdgpu-manifest.img`.
Result<CheckpointSignature> signCheckpoint(int dirFd, const std::string& dirName,
                                           const ManifestSigner& signer);

/// Checks directory `dirFd` (and its chain, above) against `trust`: an Image error naming the
/// directory and everything that differs (a missing manifest, a signer not trusted, a signature
/// that does not verify, each file changed, added or removed, names escaped).
Result<CheckpointSignature> verifyCheckpoint(int dirFd, const std::string& dirName,
                                             const TrustedSigners& trust);

} // namespace formats

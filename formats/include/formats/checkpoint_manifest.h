#pragma once
/// \file
/// The manifest of a signed checkpoint (options `checkpoint-signing-key`, `trusted-certificates`):
/// every entry of the checkpoint directory with its name, its size and its SHA-256 (criu's
/// images and ours alike), and how the manifest is stored, signed, in `amdgpu-manifest.img`.
///
/// What a manifest leaves out (outsideManifest): the manifest itself, criu's logs (`*.log`: criu
/// writes them in its working directory, the image directory unless `-W` moves it, during the
/// dump and the restore, and never reads them) and criu's statistics (`stats-dump`, written
/// after the plugins' last hook; `stats-restore`). A regular file is listed with its bytes; a
/// symbolic link (criu's `parent` link of an incremental dump) with its target's text, never
/// followed. Anything else (a directory, a FIFO, a device node) cannot be in a signed
/// checkpoint: scanning one is an error naming it.
///
/// The body (signed) is text, one entry a line, sorted by name, names and targets escaped
/// (escapeName):
///   criu-amdgpu checkpoint manifest 1
///   file SIZE SHA256-HEX NAME
///   link SIZE SHA256-HEX TARGET NAME      (SIZE and SHA-256 of the target's text)
/// The file `amdgpu-manifest.img`, little-endian: "AMDGPUMF" (8 bytes), version u32 (1), the
/// signature scheme u8 (1 RSA-PSS with SHA-256, 2 ECDSA with SHA-256), reserved u8 x3 (0), the
/// body's length u32, the signer's certificate's length u32 (DER), the signature's length u32,
/// then the body, the certificate and the signature, nothing after. The signature covers every
/// byte before it, its own length counted as 0 (signedPart).

#include "base/result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace formats {

using base::Result;

/// The signed manifest's name in the checkpoint directory.
inline constexpr const char* kManifestImageName = "amdgpu-manifest.img";
/// The largest manifest file read (a body of about 100 bytes per file).
inline constexpr uint64_t kMaxManifestBytes = 64ull << 20;

using Sha256 = std::array<std::byte, 32>;

/// How a manifest is signed (the key type of the signer's certificate decides it).
enum class SignatureScheme : uint8_t { RsaPssSha256 = 1, EcdsaSha256 = 2 };
/// "RSA-PSS with SHA-256" or "ECDSA with SHA-256".
const char* schemeName(SignatureScheme scheme);

/// One entry of a checkpoint directory.
struct ManifestEntry {
    enum class Kind : uint8_t { File, Link };
    std::string name;
    Kind kind = Kind::File;
    uint64_t size = 0;  ///< a file's bytes; a link's target's length
    Sha256 sha256{};    ///< of a file's bytes; of a link's target
    std::string target; ///< a link's target
    bool operator==(const ManifestEntry&) const = default;
};

/// Every entry of a checkpoint directory, sorted by name.
struct Manifest {
    std::vector<ManifestEntry> entries;
    bool operator==(const Manifest&) const = default;
};

/// The stored form: the body (encodeManifestBody), who signed it and the signature.
struct SignedManifest {
    SignatureScheme scheme = SignatureScheme::RsaPssSha256;
    std::string body;
    std::vector<std::byte> certificate; ///< DER
    std::vector<std::byte> signature;
};

/// Whether the entry `name` of a checkpoint directory is left out of its manifest (above).
bool outsideManifest(std::string_view name);

/// `name` with every byte outside printable ASCII, space and '%' written as %XX: how names
/// appear in a manifest's body and in every message about one.
std::string escapeName(std::string_view name);

/// Lists and hashes every entry of the directory `dirFd` (not left out by outsideManifest), as
/// hostile input (formats/image_open.h: no link followed, no FIFO or device opened). `dirName`
/// names the directory in errors, with the entry at fault.
Result<Manifest> scanCheckpointDirectory(int dirFd, const std::string& dirName);

std::string encodeManifestBody(const Manifest& manifest);
/// The manifest in `body`; an Image error naming `file` and the line for anything malformed.
Result<Manifest> decodeManifestBody(std::string_view body, const std::string& file);

/// The bytes a signature covers: the file up to the signature, the signature's length as 0.
std::string signedPart(const SignedManifest& manifest);
std::string encodeSignedManifest(const SignedManifest& manifest);
/// The signed manifest in `bytes`; an Image error naming `file` and the field.
Result<SignedManifest> decodeSignedManifest(std::string_view bytes, const std::string& file);

/// What differs between the manifest that was signed and the directory now, one line each
/// ("pages-1.img: changed since the checkpoint was signed (SHA-256 differs)", "x: added after
/// ...", "y: removed after ..."), in name order; empty when they are the same.
std::vector<std::string> manifestDifferences(const Manifest& signedManifest, const Manifest& now);

} // namespace formats

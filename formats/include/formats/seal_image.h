#pragma once
/// \file
/// The key image of an encrypted checkpoint (`amdgpu-seal.img`, ours alone): which cipher seals
/// its contents, its checkpoint id, who can open it, and its master key wrapped with the public
/// key of the certificate given at dump (option `content-certificate`; RSA, as criu's own image
/// encryption wraps its key, PKCS#1 v1.5 as GnuTLS's gnutls_pubkey_encrypt_data does). The
/// private key given at restore (option `content-private-key`) unwraps it. Little-endian:
///   "AMDGPUSK" (8 bytes), version u32 (1), cipher u8 (1 or 2, formats/content_cipher.h),
///   reserved u8 x3 (0), checkpoint id (16 bytes), the certificate's SHA-256 fingerprint (32
///   bytes, of its DER form, as `openssl x509 -fingerprint -sha256` and `certtool -i` print it),
///   its public key's SHA-256 key id (32 bytes, GnuTLS's), the key check (16 bytes), wrapped key
///   length u32 (1 to 1024) and its bytes, nothing after.
/// Every field but the wrapped key is in the clear: none tells anything of the contents.

#include "base/result.h"
#include "formats/content_cipher.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hal {

/// The key image's name.
inline constexpr const char* kSealImageName = "amdgpu-seal.img";
/// The longest wrapped key (an RSA key of 8192 bits wraps into 1024 bytes).
inline constexpr uint32_t kMaxWrappedKey = 1024;

using Fingerprint = std::array<std::byte, 32>;

struct SealImage {
    Cipher cipher = Cipher::Aes256Gcm;
    CheckpointId id{};
    Fingerprint certificate{}; ///< SHA-256 of the certificate's DER
    Fingerprint keyId{};       ///< SHA-256 key id of its public key
    KeyCheck check{};
    std::vector<std::byte> wrapped;
    bool operator==(const SealImage&) const = default;
};

std::string encodeSealImage(const SealImage& image);
/// The key image in `bytes`; an Image error naming `file` and the field for anything malformed.
Result<SealImage> decodeSealImage(std::string_view bytes, const std::string& file);

/// A certificate read from a trusted path (base/trusted_path.h, named after `option`): its
/// fingerprint, its key id and its public key, which must be RSA.
struct Certificate {
    Fingerprint fingerprint{};
    Fingerprint keyId{};
    std::vector<std::byte> der; ///< kept to wrap with
};
Result<Certificate> loadCertificate(const std::string& path, const char* option);

/// `master` wrapped with the certificate's public key.
Result<std::vector<std::byte>> wrapKey(const Certificate& certificate, const MasterKey& master);

/// A private key read from a trusted path, PEM or DER (PKCS#1 or PKCS#8, unencrypted).
class PrivateKey {
public:
    static Result<PrivateKey> load(const std::string& path, const char* option);
    /// Its public key's SHA-256 key id.
    const Fingerprint& keyId() const { return keyId_; }
    /// The master key of `image` (read from `file`): an Image error naming the file when this
    /// key is not the one the checkpoint was wrapped for or the wrapped key does not unwrap to
    /// the key the key check names.
    Result<MasterKey> unwrap(const SealImage& image, const std::string& file) const;
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::vector<std::byte> bytes_; ///< the file, imported at each unwrap
    Fingerprint keyId_{};
};

} // namespace hal

#pragma once
/// \file
/// The key image of an encrypted checkpoint (`amdgpu-seal.img`, ours alone): which cipher seals
/// its contents, its checkpoint id, who can open it, and its master key wrapped with the RSA
/// public key of the certificate given at dump (option `content-certificate`). The private key
/// given at restore (option `content-private-key`) unwraps it. Little-endian:
///   "AMDGPUSK" (8 bytes), version u32 (2), cipher u8 (1 or 2, formats/content_cipher.h), key
///   wrap u8 (1: RSA-OAEP with SHA-256 and MGF1-SHA-256), reserved u16 (0), checkpoint id (16
///   bytes), the certificate's SHA-256 fingerprint (32 bytes, of its DER form, as `openssl x509
///   -fingerprint -sha256` and `certtool -i` print it), its public key's SHA-256 key id (32
///   bytes, GnuTLS's), the key check (16 bytes), wrapped key length u32 (1 to 1024) and its
///   bytes, nothing after.
/// Version 1 (written before issue 52) has the same fields with the key wrap byte and the
/// reserved ones zero, and wraps with RSA PKCS#1 v1.5 (as GnuTLS's gnutls_pubkey_encrypt_data
/// does): its errors told a wrong padding from a wrong key, an oracle against any checkpoint's
/// wrapped key. A restore reads it only with `content-legacy-key-wrap` set; without, a version
/// 1 image is refused naming the option, so an attacker cannot move a checkpoint back to it.
/// Every failure to unwrap (the key is not the one the checkpoint names, the padding, the
/// length, the key check) gives one error, the same words and code (unwrapFailure).
/// Every field but the wrapped key is in the clear: none tells anything of the contents.

#include "base/result.h"
#include "formats/content_cipher.h"
#include "formats/secret_bytes.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace formats {

using base::Error;
using base::Result;

/// The key image's name.
inline constexpr const char* kSealImageName = "amdgpu-seal.img";
/// The longest wrapped key (an RSA key of 8192 bits wraps into 1024 bytes).
inline constexpr uint32_t kMaxWrappedKey = 1024;

using Fingerprint = std::array<std::byte, 32>;

/// How the master key is wrapped, as the key image records it.
enum class KeyWrap : uint8_t {
    RsaPkcs1v15 = 0,   ///< version 1 images only (content-legacy-key-wrap)
    RsaOaepSha256 = 1, ///< every image written now
};
/// "RSA-OAEP-SHA256", "RSA PKCS#1 v1.5".
const char* keyWrapName(KeyWrap wrap);

/// The smallest RSA key, in bits, a certificate or private key may have.
inline constexpr unsigned kMinRsaBits = 2048;

struct SealImage {
    Cipher cipher = Cipher::Aes256Gcm;
    KeyWrap wrap = KeyWrap::RsaOaepSha256;
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
/// fingerprint, its key id and its public key, which must be RSA of kMinRsaBits or more.
struct Certificate {
    Fingerprint fingerprint{};
    Fingerprint keyId{};
    std::vector<std::byte> der; ///< kept to wrap with
};
Result<Certificate> loadCertificate(const std::string& path, const char* option);

/// `master` wrapped with the certificate's public key, with `wrap` (RSA PKCS#1 v1.5 only to
/// make a checkpoint as versions before issue 52 did, for tests).
Result<std::vector<std::byte>> wrapKey(const Certificate& certificate, const MasterKey& master,
                                       KeyWrap wrap = KeyWrap::RsaOaepSha256);

/// The one error of every failure to unwrap the key image `file` with the private key at `path`
/// (ErrorCode::Image): the same words whatever went wrong, so that they tell nothing of the
/// wrapped key.
Error unwrapFailure(const std::string& file, const std::string& path);

/// A private key read from a trusted path, PEM or DER (PKCS#1 or PKCS#8, unencrypted), RSA of
/// kMinRsaBits or more, in a file that no one but its owner may read or write (mode 0600 or
/// 0400). Its bytes are key material (formats/secret_bytes.h).
class PrivateKey {
public:
    static Result<PrivateKey> load(const std::string& path, const char* option);
    /// Its public key's SHA-256 key id.
    const Fingerprint& keyId() const { return keyId_; }
    /// The master key of `image` (read from `file`). unwrapFailure when it does not unwrap, for
    /// whatever reason; a version 1 image (RSA PKCS#1 v1.5) is read only with `legacyKeyWrap`
    /// (option content-legacy-key-wrap), else refused naming the option.
    Result<Secret<MasterKey>> unwrap(const SealImage& image, const std::string& file,
                                     bool legacyKeyWrap = false) const;
    const std::string& path() const { return path_; }

private:
    std::string path_;
    SecretBytes bytes_; ///< the file, imported at each unwrap
    Fingerprint keyId_{};
};

} // namespace formats

#include "formats/seal_image.h"

#include "libcrypto_on_demand.h"
#include "little_endian.h"
#include "rsa_oaep.h"

#include "base/trusted_path.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::openTrustedPath;
using base::readTrustedFile;
using base::Result;
using base::strFormat;
using base::success;
using base::TrustedKind;
using base::TrustedPath;

namespace {

constexpr char kMagic[8] = {'A', 'M', 'D', 'G', 'P', 'U', 'S', 'K'};
/// Version 2: the key wrap byte, RSA-OAEP. Version 1: RSA PKCS#1 v1.5 (seal_image.h).
constexpr uint32_t kVersion = 2;
constexpr uint32_t kLegacyVersion = 1;
/// The largest key or certificate file read.
constexpr size_t kMaxKeyFile = 1 << 20;

template <typename T> void put(std::string& out, T value) {
    le::append(out, value);
}

template <size_t N> void putBytes(std::string& out, const std::array<std::byte, N>& bytes) {
    out.append(reinterpret_cast<const char*>(bytes.data()), N);
}

Error bad(const std::string& file, const std::string& what) {
    return makeError(ErrorCode::Image, "%s: %s", file.c_str(), what.c_str());
}

gnutls_datum_t datumOf(std::span<const std::byte> bytes) {
    return {reinterpret_cast<unsigned char*>(const_cast<std::byte*>(bytes.data())),
            static_cast<unsigned>(bytes.size())};
}

Error keyError(const std::string& path, const char* option, const char* what, int rc) {
    return makeError(ErrorCode::Config, "%s %s: %s (%s)", option, path.c_str(), what,
                     gnutls_strerror(rc));
}

/// The file at `path`, after checking that the path may be trusted: read through the fd that was
/// judged (a regular file; a FIFO or device is refused without being opened). `ownerOnly`: a
/// private key, which no one but its owner may read or write, judged on that same fd. The
/// reader's own copy is wiped.
Result<std::vector<std::byte>> readKeyFile(const std::string& path, const char* option,
                                           bool ownerOnly = false) {
    if (path.empty())
        return makeError(ErrorCode::Config, "%s is not set", option);
    HAL_TRY_ASSIGN(TrustedPath file, openTrustedPath(path, option, TrustedKind::File));
    mode_t mode = file.status().st_mode;
    if (ownerOnly && (mode & (S_IRWXG | S_IRWXO)))
        return makeError(ErrorCode::Config,
                         "%s %s: mode %04o lets others than its owner read or write the private "
                         "key (chmod 600 it)",
                         option, path.c_str(), static_cast<unsigned>(mode & 07777));
    auto text = readTrustedFile(file, kMaxKeyFile);
    if (!text.ok())
        return makeErrnoError(ErrorCode::Config, text.error().sysErrno(), "%s %s: cannot read it",
                              option, path.c_str());
    auto raw = std::as_writable_bytes(std::span(text->data(), text->size()));
    std::vector<std::byte> bytes;
    if (text->size() <= kMaxKeyFile)
        bytes.assign(raw.begin(), raw.end());
    wipeSecret(raw);
    if (text->size() > kMaxKeyFile)
        return makeError(ErrorCode::Config, "%s %s: over %zu bytes, not a key or certificate",
                         option, path.c_str(), kMaxKeyFile);
    return bytes;
}

bool looksPem(std::span<const std::byte> bytes) {
    static const char kPem[] = "-----BEGIN";
    std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return text.find(kPem) != std::string_view::npos;
}

template <typename T, void (*Free)(T)> struct Owned {
    T value = nullptr;
    ~Owned() {
        if (value)
            Free(value);
    }
};

/// An RSA public key of at least kMinRsaBits, or a Config error naming the file and its size.
Result<void> checkRsaSize(gnutls_pubkey_t pub, const std::string& path, const char* option,
                          const char* what) {
    unsigned bits = 0;
    if (gnutls_pubkey_get_pk_algorithm(pub, &bits) != GNUTLS_PK_RSA)
        return makeError(ErrorCode::Config,
                         "%s %s: %s is not RSA (the key is wrapped with RSA, as criu's own image "
                         "encryption does)",
                         option, path.c_str(), what);
    if (bits < kMinRsaBits)
        return makeError(ErrorCode::Config, "%s %s: %s is RSA of %u bits; at least %u are needed",
                         option, path.c_str(), what, bits, kMinRsaBits);
    return success();
}

Result<Fingerprint> keyIdOf(gnutls_pubkey_t pub, const std::string& path, const char* option) {
    Fingerprint id{};
    size_t size = id.size();
    int rc = gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256,
                                      reinterpret_cast<unsigned char*>(id.data()), &size);
    if (rc < 0 || size != id.size())
        return keyError(path, option, "no SHA-256 key id", rc < 0 ? rc : GNUTLS_E_INTERNAL_ERROR);
    return id;
}

} // namespace

const char* keyWrapName(KeyWrap wrap) {
    return wrap == KeyWrap::RsaPkcs1v15 ? "RSA PKCS#1 v1.5" : "RSA-OAEP-SHA256";
}

std::string encodeSealImage(const SealImage& image) {
    std::string out(kMagic, sizeof kMagic);
    bool legacy = image.wrap == KeyWrap::RsaPkcs1v15;
    put<uint32_t>(out, legacy ? kLegacyVersion : kVersion);
    put<uint8_t>(out, static_cast<uint8_t>(image.cipher));
    put<uint8_t>(out, static_cast<uint8_t>(image.wrap));
    put<uint16_t>(out, 0);
    putBytes(out, image.id);
    putBytes(out, image.certificate);
    putBytes(out, image.keyId);
    putBytes(out, image.check);
    put<uint32_t>(out, static_cast<uint32_t>(image.wrapped.size()));
    out.append(reinterpret_cast<const char*>(image.wrapped.data()), image.wrapped.size());
    return out;
}

Result<SealImage> decodeSealImage(std::string_view bytes, const std::string& file) {
    constexpr size_t kFixed = 8 + 4 + 4 + kCheckpointIdBytes + 32 + 32 + kKeyCheckBytes + 4;
    if (bytes.size() < sizeof kMagic || memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return bad(file, "not a key image (its first 8 bytes are not \"AMDGPUSK\")");
    if (bytes.size() < kFixed)
        return bad(file, strFormat("%zu bytes, shorter than the %zu of its fixed fields",
                                   bytes.size(), kFixed));
    const auto* at = reinterpret_cast<const std::byte*>(bytes.data()) + sizeof kMagic;
    auto take = [&](size_t n) {
        const std::byte* here = at;
        at += n;
        return here;
    };
    auto number = [&](size_t n) {
        uint64_t v = 0;
        const std::byte* p = take(n);
        for (size_t i = 0; i < n; ++i)
            v |= static_cast<uint64_t>(p[i]) << (8 * i);
        return v;
    };
    uint64_t version = number(4);
    if (version != kVersion && version != kLegacyVersion)
        return bad(file,
                   strFormat("version %llu, this build reads versions %u and %u",
                             static_cast<unsigned long long>(version), kLegacyVersion, kVersion));
    SealImage image;
    uint64_t cipher = number(1);
    if (cipher != static_cast<uint8_t>(Cipher::Aes256Gcm) &&
        cipher != static_cast<uint8_t>(Cipher::Chacha20Poly1305))
        return bad(file, strFormat("cipher %llu (1: aes-256-gcm, 2: chacha20-poly1305)",
                                   static_cast<unsigned long long>(cipher)));
    image.cipher = static_cast<Cipher>(cipher);
    uint64_t wrap = number(1);
    if (version == kLegacyVersion ? wrap != 0
                                  : wrap != static_cast<uint8_t>(KeyWrap::RsaOaepSha256))
        return bad(file, strFormat("key wrap %llu; version %llu records %s",
                                   static_cast<unsigned long long>(wrap),
                                   static_cast<unsigned long long>(version),
                                   version == kLegacyVersion ? "0 (RSA PKCS#1 v1.5)"
                                                             : "1 (RSA-OAEP-SHA256)"));
    image.wrap = version == kLegacyVersion ? KeyWrap::RsaPkcs1v15 : KeyWrap::RsaOaepSha256;
    if (number(2) != 0)
        return bad(file, "its reserved bytes are not zero");
    memcpy(image.id.data(), take(image.id.size()), image.id.size());
    memcpy(image.certificate.data(), take(32), 32);
    memcpy(image.keyId.data(), take(32), 32);
    memcpy(image.check.data(), take(image.check.size()), image.check.size());
    uint64_t length = number(4);
    size_t left = bytes.size() - kFixed;
    if (length == 0 || length > kMaxWrappedKey || length != left)
        return bad(file, strFormat("a wrapped key of %llu bytes (1 to %u), and %zu bytes follow",
                                   static_cast<unsigned long long>(length), kMaxWrappedKey, left));
    image.wrapped.assign(at, at + length);
    return image;
}

Result<Certificate> loadCertificate(const std::string& path, const char* option) {
    HAL_TRY_ASSIGN(std::vector<std::byte> bytes, readKeyFile(path, option));
    Owned<gnutls_x509_crt_t, gnutls_x509_crt_deinit> crt;
    int rc = gnutls_x509_crt_init(&crt.value);
    if (rc < 0)
        return keyError(path, option, "no certificate object", rc);
    gnutls_datum_t datum = datumOf(bytes);
    rc = gnutls_x509_crt_import(crt.value, &datum,
                                looksPem(bytes) ? GNUTLS_X509_FMT_PEM : GNUTLS_X509_FMT_DER);
    if (rc < 0)
        return keyError(path, option, "not an X.509 certificate", rc);
    Certificate cert;
    size_t size = cert.fingerprint.size();
    rc = gnutls_x509_crt_get_fingerprint(crt.value, GNUTLS_DIG_SHA256, cert.fingerprint.data(),
                                         &size);
    if (rc < 0)
        return keyError(path, option, "no SHA-256 fingerprint", rc);
    gnutls_datum_t der{};
    rc = gnutls_x509_crt_export2(crt.value, GNUTLS_X509_FMT_DER, &der);
    if (rc < 0)
        return keyError(path, option, "cannot export it", rc);
    cert.der.assign(reinterpret_cast<std::byte*>(der.data),
                    reinterpret_cast<std::byte*>(der.data) + der.size);
    gnutls_free(der.data);
    Owned<gnutls_pubkey_t, gnutls_pubkey_deinit> pub;
    if ((rc = gnutls_pubkey_init(&pub.value)) < 0 ||
        (rc = gnutls_pubkey_import_x509(pub.value, crt.value, 0)) < 0)
        return keyError(path, option, "no public key", rc);
    HAL_TRY(checkRsaSize(pub.value, path, option, "its public key"));
    HAL_TRY_ASSIGN(cert.keyId, keyIdOf(pub.value, path, option));
    return cert;
}

Result<std::vector<std::byte>> wrapKey(const Certificate& certificate, const MasterKey& master,
                                       KeyWrap wrap) {
    if (wrap == KeyWrap::RsaOaepSha256) {
        HAL_TRY_ASSIGN(std::vector<std::byte> out, rsaOaepWrap(certificate.der, master));
        if (out.empty() || out.size() > kMaxWrappedKey)
            return makeError(ErrorCode::Config,
                             "the certificate's RSA key wraps into %zu bytes (at most %u)",
                             out.size(), kMaxWrappedKey);
        return out;
    }
    Owned<gnutls_x509_crt_t, gnutls_x509_crt_deinit> crt;
    Owned<gnutls_pubkey_t, gnutls_pubkey_deinit> pub;
    gnutls_datum_t der = datumOf(certificate.der);
    int rc;
    if ((rc = gnutls_x509_crt_init(&crt.value)) < 0 ||
        (rc = gnutls_x509_crt_import(crt.value, &der, GNUTLS_X509_FMT_DER)) < 0 ||
        (rc = gnutls_pubkey_init(&pub.value)) < 0 ||
        (rc = gnutls_pubkey_import_x509(pub.value, crt.value, 0)) < 0)
        return makeError(ErrorCode::Internal, "wrapping the content key: %s", gnutls_strerror(rc));
    gnutls_datum_t plain{reinterpret_cast<unsigned char*>(const_cast<std::byte*>(master.data())),
                         static_cast<unsigned>(master.size())};
    gnutls_datum_t wrapped{};
    rc = gnutls_pubkey_encrypt_data(pub.value, 0, &plain, &wrapped);
    if (rc < 0)
        return makeError(ErrorCode::Internal, "wrapping the content key: %s", gnutls_strerror(rc));
    std::vector<std::byte> out(reinterpret_cast<std::byte*>(wrapped.data),
                               reinterpret_cast<std::byte*>(wrapped.data) + wrapped.size);
    gnutls_free(wrapped.data);
    if (out.empty() || out.size() > kMaxWrappedKey)
        return makeError(ErrorCode::Config,
                         "the certificate's RSA key wraps into %zu bytes (at most %u)", out.size(),
                         kMaxWrappedKey);
    return out;
}

namespace {

/// Imports `bytes` as a private key; the caller owns the result.
Result<gnutls_privkey_t> importPrivateKey(const SecretBytes& bytes, const std::string& path,
                                          const char* option) {
    gnutls_privkey_t key = nullptr;
    int rc = gnutls_privkey_init(&key);
    if (rc < 0)
        return keyError(path, option, "no private key object", rc);
    gnutls_datum_t datum = datumOf(bytes.bytes());
    rc = gnutls_privkey_import_x509_raw(
        key, &datum, looksPem(bytes.bytes()) ? GNUTLS_X509_FMT_PEM : GNUTLS_X509_FMT_DER, nullptr,
        0);
    if (rc < 0) {
        gnutls_privkey_deinit(key);
        return keyError(path, option, "not an unencrypted private key", rc);
    }
    return key;
}

} // namespace

Error unwrapFailure(const std::string& file, const std::string& path) {
    return makeError(ErrorCode::Image,
                     "%s: the checkpoint's key does not unwrap with the content-private-key %s "
                     "(it is not the key the checkpoint was made for, or the key image is damaged "
                     "or forged)",
                     file.c_str(), path.c_str());
}

namespace {

/// The file at `path` in key material's memory; the copy readKeyFile made is wiped.
Result<SecretBytes> readSecretFile(const std::string& path, const char* option) {
    HAL_TRY_ASSIGN(std::vector<std::byte> read, readKeyFile(path, option, true));
    auto bytes = SecretBytes::allocate(read.size());
    if (bytes.ok() && !read.empty())
        memcpy(bytes->data(), read.data(), read.size());
    wipeSecret(read);
    return bytes;
}

} // namespace

Result<PrivateKey> PrivateKey::load(const std::string& path, const char* option) {
    PrivateKey key;
    key.path_ = path;
    HAL_TRY_ASSIGN(key.bytes_, readSecretFile(path, option));
    HAL_TRY_ASSIGN(gnutls_privkey_t imported, importPrivateKey(key.bytes_, path, option));
    Owned<gnutls_privkey_t, gnutls_privkey_deinit> priv{imported};
    Owned<gnutls_pubkey_t, gnutls_pubkey_deinit> pub;
    int rc;
    if ((rc = gnutls_pubkey_init(&pub.value)) < 0 ||
        (rc = gnutls_pubkey_import_privkey(pub.value, priv.value, 0, 0)) < 0)
        return keyError(path, option, "no public key in it", rc);
    HAL_TRY(checkRsaSize(pub.value, path, option, "the key"));
    HAL_TRY_ASSIGN(key.keyId_, keyIdOf(pub.value, path, option));
    return key;
}

Result<Secret<MasterKey>> PrivateKey::unwrap(const SealImage& image, const std::string& file,
                                             bool legacyKeyWrap) const {
    if (image.wrap == KeyWrap::RsaPkcs1v15 && !legacyKeyWrap)
        return makeError(ErrorCode::Config,
                         "%s: the checkpoint's key is wrapped with RSA PKCS#1 v1.5 (a checkpoint "
                         "written before RSA-OAEP, or one moved back to it), which is read only "
                         "with the option content-legacy-key-wrap (set it for checkpoints of "
                         "your own made before, then dump them again)",
                         file.c_str());
    HAL_TRY_ASSIGN(Secret<MasterKey> master, Secret<MasterKey>::make());
    bool opened = image.keyId == keyId_;
    if (opened && image.wrap == KeyWrap::RsaOaepSha256) {
        HAL_TRY(requireLibcrypto("content-private-key"));
        opened = rsaOaepUnwrap(bytes_.bytes(), image.wrapped, *master);
    } else if (opened) {
        auto imported = importPrivateKey(bytes_, path_, "content-private-key");
        if (!imported.ok())
            return std::move(imported).error();
        Owned<gnutls_privkey_t, gnutls_privkey_deinit> priv{*imported};
        gnutls_datum_t wrapped = datumOf(image.wrapped);
        // Constant time, and only a key of exactly the master's size is taken.
        opened = gnutls_privkey_decrypt_data2(priv.value, 0, &wrapped,
                                              reinterpret_cast<unsigned char*>(master->data()),
                                              master->size()) == 0;
    }
    if (opened) {
        HAL_TRY_ASSIGN(KeyCheck check, keyCheckOf(image.cipher, *master, image.id));
        opened = check == image.check;
    }
    if (!opened)
        return unwrapFailure(file, path_);
    return master;
}

} // namespace formats

#include "formats/seal_image.h"

#include "little_endian.h"

#include "base/trusted_path.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <cstring>
#include <memory>

namespace hal {
namespace {

constexpr char kMagic[8] = {'A', 'M', 'D', 'G', 'P', 'U', 'S', 'K'};
constexpr uint32_t kVersion = 1;
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

gnutls_datum_t datumOf(const std::vector<std::byte>& bytes) {
    return {reinterpret_cast<unsigned char*>(const_cast<std::byte*>(bytes.data())),
            static_cast<unsigned>(bytes.size())};
}

Error keyError(const std::string& path, const char* option, const char* what, int rc) {
    return makeError(ErrorCode::Config, "%s %s: %s (%s)", option, path.c_str(), what,
                     gnutls_strerror(rc));
}

/// The file at `path`, after checking that the path may be trusted: read through the fd that was
/// judged (a regular file; a FIFO or device is refused without being opened).
Result<std::vector<std::byte>> readKeyFile(const std::string& path, const char* option) {
    if (path.empty())
        return makeError(ErrorCode::Config, "%s is not set", option);
    HAL_TRY_ASSIGN(TrustedPath file, openTrustedPath(path, option, TrustedKind::File));
    auto text = readTrustedFile(file, kMaxKeyFile);
    if (!text.ok())
        return makeErrnoError(ErrorCode::Config, text.error().sysErrno(), "%s %s: cannot read it",
                              option, path.c_str());
    if (text->size() > kMaxKeyFile)
        return makeError(ErrorCode::Config, "%s %s: over %zu bytes, not a key or certificate",
                         option, path.c_str(), kMaxKeyFile);
    const auto* begin = reinterpret_cast<const std::byte*>(text->data());
    return std::vector<std::byte>(begin, begin + text->size());
}

bool looksPem(const std::vector<std::byte>& bytes) {
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

std::string encodeSealImage(const SealImage& image) {
    std::string out(kMagic, sizeof kMagic);
    put<uint32_t>(out, kVersion);
    put<uint8_t>(out, static_cast<uint8_t>(image.cipher));
    put<uint8_t>(out, 0);
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
    if (version != kVersion)
        return bad(file, strFormat("version %llu, this build reads version %u",
                                   static_cast<unsigned long long>(version), kVersion));
    SealImage image;
    uint64_t cipher = number(1);
    if (cipher != static_cast<uint8_t>(Cipher::Aes256Gcm) &&
        cipher != static_cast<uint8_t>(Cipher::Chacha20Poly1305))
        return bad(file, strFormat("cipher %llu (1: aes-256-gcm, 2: chacha20-poly1305)",
                                   static_cast<unsigned long long>(cipher)));
    image.cipher = static_cast<Cipher>(cipher);
    if (number(3) != 0)
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
    if (gnutls_pubkey_get_pk_algorithm(pub.value, nullptr) != GNUTLS_PK_RSA)
        return makeError(ErrorCode::Config,
                         "%s %s: its public key is not RSA (the key is wrapped with RSA, as "
                         "criu's own image encryption does)",
                         option, path.c_str());
    HAL_TRY_ASSIGN(cert.keyId, keyIdOf(pub.value, path, option));
    return cert;
}

Result<std::vector<std::byte>> wrapKey(const Certificate& certificate, const MasterKey& master) {
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
Result<gnutls_privkey_t> importPrivateKey(const std::vector<std::byte>& bytes,
                                          const std::string& path, const char* option) {
    gnutls_privkey_t key = nullptr;
    int rc = gnutls_privkey_init(&key);
    if (rc < 0)
        return keyError(path, option, "no private key object", rc);
    gnutls_datum_t datum = datumOf(bytes);
    rc = gnutls_privkey_import_x509_raw(
        key, &datum, looksPem(bytes) ? GNUTLS_X509_FMT_PEM : GNUTLS_X509_FMT_DER, nullptr, 0);
    if (rc < 0) {
        gnutls_privkey_deinit(key);
        return keyError(path, option, "not an unencrypted private key", rc);
    }
    return key;
}

} // namespace

Result<PrivateKey> PrivateKey::load(const std::string& path, const char* option) {
    PrivateKey key;
    key.path_ = path;
    HAL_TRY_ASSIGN(key.bytes_, readKeyFile(path, option));
    HAL_TRY_ASSIGN(gnutls_privkey_t imported, importPrivateKey(key.bytes_, path, option));
    Owned<gnutls_privkey_t, gnutls_privkey_deinit> priv{imported};
    Owned<gnutls_pubkey_t, gnutls_pubkey_deinit> pub;
    int rc;
    if ((rc = gnutls_pubkey_init(&pub.value)) < 0 ||
        (rc = gnutls_pubkey_import_privkey(pub.value, priv.value, 0, 0)) < 0)
        return keyError(path, option, "no public key in it", rc);
    HAL_TRY_ASSIGN(key.keyId_, keyIdOf(pub.value, path, option));
    return key;
}

Result<MasterKey> PrivateKey::unwrap(const SealImage& image, const std::string& file) const {
    if (image.keyId != keyId_)
        return makeError(ErrorCode::Image,
                         "%s: the checkpoint's key is wrapped for the public key %s, and the "
                         "private key %s is of %s: it does not open this checkpoint",
                         file.c_str(), hexOf(image.keyId).c_str(), path_.c_str(),
                         hexOf(keyId_).c_str());
    HAL_TRY_ASSIGN(gnutls_privkey_t imported,
                   importPrivateKey(bytes_, path_, "content-private-key"));
    Owned<gnutls_privkey_t, gnutls_privkey_deinit> priv{imported};
    gnutls_datum_t wrapped = datumOf(image.wrapped);
    gnutls_datum_t plain{};
    int rc = gnutls_privkey_decrypt_data(priv.value, 0, &wrapped, &plain);
    if (rc < 0)
        return makeError(ErrorCode::Image, "%s: its wrapped key does not unwrap with %s (%s)",
                         file.c_str(), path_.c_str(), gnutls_strerror(rc));
    MasterKey master{};
    bool sized = plain.size == master.size();
    if (sized)
        memcpy(master.data(), plain.data, master.size());
    gnutls_memset(plain.data, 0, plain.size);
    gnutls_free(plain.data);
    if (!sized)
        return makeError(ErrorCode::Image, "%s: its wrapped key unwraps to %u bytes, not %zu",
                         file.c_str(), plain.size, master.size());
    HAL_TRY_ASSIGN(KeyCheck check, keyCheckOf(image.cipher, master, image.id));
    if (check != image.check)
        return makeError(ErrorCode::Image,
                         "%s: the key unwrapped with %s is not the one its key check names",
                         file.c_str(), path_.c_str());
    return master;
}

} // namespace hal

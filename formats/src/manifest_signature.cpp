#include "formats/manifest_signature.h"

#include "libcrypto_on_demand.h"

#include "base/trusted_path.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace formats {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::openTrustedPath;
using base::openTrustedPathAt;
using base::readTrustedFile;
using base::Result;
using base::strFormat;
using base::success;
using base::TrustedKind;
using base::TrustedPath;

namespace {

constexpr const char* kKeyOption = "checkpoint-signing-key";
constexpr const char* kCertOption = "checkpoint-signing-certificate";
constexpr const char* kTrustOption = "trusted-certificates";
/// The largest key, certificate or certificate list read.
constexpr size_t kMaxKeyFile = 1 << 20;
constexpr int kMinRsaBits = 2048;

/// OpenSSL's last error, for messages.
std::string sslError() {
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (!e)
        return "OpenSSL gave no reason";
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    return text;
}

/// The bytes of the trusted file `file` (shown as `shownAs`, named by `option` in errors), read
/// through the fd the trusted-path check judged (base/trusted_path.h); a secret must also be
/// readable by its owner alone.
Result<std::string> readKeyMaterial(const TrustedPath& file, const std::string& shownAs,
                                    const char* option, bool secret) {
    mode_t mode = file.status().st_mode;
    if (secret && (mode & 077))
        return makeError(ErrorCode::Config,
                         "%s %s: a private key readable by others than its owner (mode %03o; "
                         "chmod 600 it)",
                         option, shownAs.c_str(), static_cast<unsigned>(mode & 0777));
    HAL_TRY_ASSIGN(std::string bytes, readTrustedFile(file, kMaxKeyFile));
    if (bytes.size() > kMaxKeyFile)
        return makeError(ErrorCode::Config, "%s %s: over %zu bytes, not a key or certificate",
                         option, shownAs.c_str(), kMaxKeyFile);
    return bytes;
}

/// The file at `path` (named by `option` in errors), after checking that the path may be trusted;
/// the one place here that asks the trusted-path rule of a single file.
Result<std::string> readKeyMaterial(const std::string& path, const char* option, bool secret) {
    if (path.empty())
        return makeError(ErrorCode::Config, "%s is not set", option);
    HAL_TRY_ASSIGN(TrustedPath file, openTrustedPath(path, option, TrustedKind::File));
    return readKeyMaterial(file, path, option, secret);
}

struct BioFree {
    void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
    void operator()(X509* x) const { X509_free(x); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;

Bio memoryBio(const std::string& bytes) {
    return Bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
}

bool looksPem(const std::string& bytes) {
    return bytes.find("-----BEGIN") != std::string::npos;
}

/// Every certificate in `bytes`: any number in PEM, or one in DER.
std::vector<Cert> parseCertificates(const std::string& bytes) {
    std::vector<Cert> out;
    if (!looksPem(bytes)) {
        const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
        Cert one(d2i_X509(nullptr, &p, static_cast<long>(bytes.size())));
        if (one && p == reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size())
            out.push_back(std::move(one));
        ERR_clear_error();
        return out;
    }
    Bio bio = memoryBio(bytes);
    while (bio) {
        Cert next(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
        if (!next)
            break;
        out.push_back(std::move(next));
    }
    ERR_clear_error();
    return out;
}

std::vector<std::byte> derOf(X509* cert) {
    unsigned char* der = nullptr;
    int n = i2d_X509(cert, &der);
    if (n <= 0)
        return {};
    std::vector<std::byte> out(reinterpret_cast<std::byte*>(der),
                               reinterpret_cast<std::byte*>(der) + n);
    OPENSSL_free(der);
    return out;
}

/// The scheme a key signs with; an error naming `what` for a key type this does not take.
Result<SignatureScheme> schemeOf(EVP_PKEY* key, const std::string& what) {
    int type = EVP_PKEY_get_base_id(key);
    if (type == EVP_PKEY_EC)
        return SignatureScheme::EcdsaSha256;
    if (type != EVP_PKEY_RSA)
        return makeError(ErrorCode::Config, "%s: a %s key, neither RSA nor EC", what.c_str(),
                         OBJ_nid2sn(type));
    if (EVP_PKEY_get_bits(key) < kMinRsaBits)
        return makeError(ErrorCode::Config, "%s: an RSA key of %d bits, below %d", what.c_str(),
                         EVP_PKEY_get_bits(key), kMinRsaBits);
    return SignatureScheme::RsaPssSha256;
}

/// A context that signs or verifies with SHA-256 and `key`'s scheme.
Result<std::unique_ptr<EVP_MD_CTX, MdCtxFree>> digestContext(EVP_PKEY* key, SignatureScheme scheme,
                                                             bool signing) {
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
    EVP_PKEY_CTX* pctx = nullptr;
    int rc = !ctx      ? 0
             : signing ? EVP_DigestSignInit(ctx.get(), &pctx, EVP_sha256(), nullptr, key)
                       : EVP_DigestVerifyInit(ctx.get(), &pctx, EVP_sha256(), nullptr, key);
    if (rc == 1 && scheme == SignatureScheme::RsaPssSha256)
        rc = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
             EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1 &&
             EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) == 1;
    if (rc != 1)
        return makeError(ErrorCode::Internal, "OpenSSL cannot %s with %s: %s",
                         signing ? "sign" : "verify", schemeName(scheme), sslError().c_str());
    return ctx;
}

std::string hexColons(const unsigned char* bytes, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i)
        out += strFormat("%s%02X", i ? ":" : "", bytes[i]);
    return out;
}

} // namespace

Result<ManifestSigner> ManifestSigner::load(const std::string& keyPath,
                                            const std::string& certPath) {
    HAL_TRY(requireLibcrypto(kKeyOption));
    HAL_TRY_ASSIGN(std::string keyBytes, readKeyMaterial(keyPath, kKeyOption, true));
    HAL_TRY_ASSIGN(std::string certBytes, readKeyMaterial(certPath, kCertOption, false));
    EVP_PKEY* key = nullptr;
    if (looksPem(keyBytes)) {
        Bio bio = memoryBio(keyBytes);
        key = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
    } else {
        const auto* p = reinterpret_cast<const unsigned char*>(keyBytes.data());
        key = d2i_AutoPrivateKey(nullptr, &p, static_cast<long>(keyBytes.size()));
    }
    OPENSSL_cleanse(keyBytes.data(), keyBytes.size());
    if (!key)
        return makeError(ErrorCode::Config, "%s %s: not an unencrypted private key (%s)",
                         kKeyOption, keyPath.c_str(), sslError().c_str());
    ManifestSigner signer;
    signer.key_.reset(key, EVP_PKEY_free);
    std::vector<Cert> certs = parseCertificates(certBytes);
    if (certs.size() != 1)
        return makeError(ErrorCode::Config, "%s %s: %zu certificates, not one", kCertOption,
                         certPath.c_str(), certs.size());
    if (X509_check_private_key(certs[0].get(), key) != 1) {
        ERR_clear_error();
        return makeError(ErrorCode::Config, "%s %s is not the key of %s %s", kKeyOption,
                         keyPath.c_str(), kCertOption, certPath.c_str());
    }
    HAL_TRY_ASSIGN(signer.scheme_, schemeOf(key, std::string(kKeyOption) + " " + keyPath));
    signer.certificate_ = derOf(certs[0].get());
    return signer;
}

Result<std::vector<std::byte>> ManifestSigner::sign(std::string_view data) const {
    HAL_TRY_ASSIGN(auto ctx, digestContext(key_.get(), scheme_, true));
    size_t n = 0;
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    if (EVP_DigestSign(ctx.get(), nullptr, &n, bytes, data.size()) != 1)
        return makeError(ErrorCode::Internal, "signing the manifest: %s", sslError().c_str());
    std::vector<std::byte> signature(n);
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &n, bytes,
                       data.size()) != 1)
        return makeError(ErrorCode::Internal, "signing the manifest: %s", sslError().c_str());
    signature.resize(n);
    return signature;
}

Result<TrustedSigners> TrustedSigners::load(const std::string& path) {
    TrustedSigners trust;
    trust.path_ = path;
    if (path.empty())
        return makeError(ErrorCode::Config, "%s is not set", kTrustOption);
    HAL_TRY(requireLibcrypto(kTrustOption));
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        return makeErrnoError(ErrorCode::Config, errno, "%s %s", kTrustOption, path.c_str());
    // Each certificate file is read through the fd its check judged; a directory's files are
    // found and judged from the directory's own fd.
    std::vector<std::pair<TrustedPath, std::string>> files;
    if (S_ISDIR(st.st_mode)) {
        HAL_TRY_ASSIGN(TrustedPath dir,
                       openTrustedPath(path, kTrustOption, TrustedKind::Directory));
        int listFd = openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (listFd < 0)
            return makeErrnoError(ErrorCode::Config, errno, "%s %s", kTrustOption, path.c_str());
        std::unique_ptr<DIR, int (*)(DIR*)> listing(fdopendir(listFd), closedir);
        if (!listing) {
            close(listFd);
            return makeErrnoError(ErrorCode::Config, errno, "%s %s", kTrustOption, path.c_str());
        }
        std::vector<std::string> names;
        while (struct dirent* d = readdir(listing.get())) {
            struct stat fst {};
            if (d->d_name[0] != '.' &&
                fstatat(dir.fd(), d->d_name, &fst, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISREG(fst.st_mode))
                names.push_back(d->d_name);
        }
        std::sort(names.begin(), names.end());
        for (const std::string& name : names) {
            std::string shown = path + "/" + name;
            HAL_TRY_ASSIGN(TrustedPath file,
                           openTrustedPathAt(dir, name, shown, kTrustOption, TrustedKind::File));
            files.emplace_back(std::move(file), shown);
        }
    } else {
        HAL_TRY_ASSIGN(TrustedPath file, openTrustedPath(path, kTrustOption, TrustedKind::File));
        files.emplace_back(std::move(file), path);
    }
    for (const auto& [file, shown] : files) {
        HAL_TRY_ASSIGN(std::string bytes, readKeyMaterial(file, shown, kTrustOption, false));
        std::vector<Cert> certs = parseCertificates(bytes);
        if (certs.empty())
            return makeError(ErrorCode::Config, "%s %s: no certificate in it", kTrustOption,
                             shown.c_str());
        for (Cert& c : certs)
            trust.certificates_.push_back(derOf(c.get()));
    }
    if (trust.certificates_.empty())
        return makeError(ErrorCode::Config, "%s %s: no certificate in it", kTrustOption,
                         path.c_str());
    return trust;
}

std::string TrustedSigners::describeCertificate(const std::vector<std::byte>& der) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_Digest(der.data(), der.size(), digest, &n, EVP_sha256(), nullptr);
    std::string out = "SHA-256 fingerprint " + hexColons(digest, n);
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    Cert cert(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
    if (!cert) {
        ERR_clear_error();
        return out + ", not a certificate OpenSSL can read";
    }
    Bio bio(BIO_new(BIO_s_mem()));
    // XN_FLAG_ONELINE escapes control characters and bytes above 0x7f.
    if (bio &&
        X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert.get()), 0, XN_FLAG_ONELINE) >= 0) {
        char* text = nullptr;
        long len = BIO_get_mem_data(bio.get(), &text);
        out += ", subject " + std::string(text, static_cast<size_t>(std::max(len, 0L)));
    }
    return out;
}

Result<void> TrustedSigners::verify(const SignedManifest& manifest, const std::string& file) const {
    auto trusted = std::find(certificates_.begin(), certificates_.end(), manifest.certificate);
    if (trusted == certificates_.end())
        return makeError(ErrorCode::Image,
                         "%s: signed by a certificate that is not trusted (%s; none of the %zu of "
                         "%s %s)",
                         file.c_str(), describeCertificate(manifest.certificate).c_str(),
                         certificates_.size(), kTrustOption, path_.c_str());
    const auto* p = reinterpret_cast<const unsigned char*>(trusted->data());
    Cert cert(d2i_X509(nullptr, &p, static_cast<long>(trusted->size())));
    std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> key(cert ? X509_get_pubkey(cert.get()) : nullptr,
                                                       EVP_PKEY_free);
    if (!key)
        return makeError(ErrorCode::Config,
                         "%s %s: a certificate without a public key OpenSSL "
                         "reads (%s)",
                         kTrustOption, path_.c_str(), sslError().c_str());
    HAL_TRY_ASSIGN(SignatureScheme scheme, schemeOf(key.get(), file + ": its signer's key"));
    if (scheme != manifest.scheme)
        return makeError(ErrorCode::Image,
                         "%s: says it is signed with %s, its certificate's key "
                         "signs with %s",
                         file.c_str(), schemeName(manifest.scheme), schemeName(scheme));
    HAL_TRY_ASSIGN(auto ctx, digestContext(key.get(), scheme, false));
    std::string data = signedPart(manifest);
    int rc = EVP_DigestVerify(ctx.get(),
                              reinterpret_cast<const unsigned char*>(manifest.signature.data()),
                              manifest.signature.size(),
                              reinterpret_cast<const unsigned char*>(data.data()), data.size());
    ERR_clear_error();
    if (rc != 1)
        return makeError(ErrorCode::Image,
                         "%s: its signature does not verify with the trusted certificate it names "
                         "(%s): the manifest was changed after it was signed, or not signed by "
                         "that certificate's key",
                         file.c_str(), describeCertificate(manifest.certificate).c_str());
    return success();
}

} // namespace formats

#include "rsa_oaep.h"

#include "formats/secret_bytes.h"
#include "libcrypto_on_demand.h"

#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <memory>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;

namespace {

struct PkeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct PkeyCtxFree {
    void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct X509Free {
    void operator()(X509* x) const { X509_free(x); }
};
struct DecoderFree {
    void operator()(OSSL_DECODER_CTX* d) const { OSSL_DECODER_CTX_free(d); }
};
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;

/// OAEP with SHA-256 for both the label hash and MGF1 on `ctx`, after its init.
bool oaepSha256(EVP_PKEY_CTX* ctx) {
    return EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
           EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) > 0 &&
           EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) > 0;
}

/// No passphrase is ever given: an encrypted key fails instead of asking a terminal.
int noPassphrase(char*, int, int, void*) {
    return -1;
}

/// The private key in `file`, or null.
std::unique_ptr<EVP_PKEY, PkeyFree> privateKeyOf(std::span<const std::byte> file) {
    EVP_PKEY* key = nullptr;
    std::unique_ptr<OSSL_DECODER_CTX, DecoderFree> decoder(OSSL_DECODER_CTX_new_for_pkey(
        &key, nullptr, nullptr, "RSA", OSSL_KEYMGMT_SELECT_PRIVATE_KEY, nullptr, nullptr));
    if (!decoder || OSSL_DECODER_CTX_set_pem_password_cb(decoder.get(), noPassphrase, nullptr) != 1)
        return nullptr;
    const auto* data = reinterpret_cast<const unsigned char*>(file.data());
    size_t left = file.size();
    if (OSSL_DECODER_from_data(decoder.get(), &data, &left) != 1) {
        EVP_PKEY_free(key);
        return nullptr;
    }
    return std::unique_ptr<EVP_PKEY, PkeyFree>(key);
}

} // namespace

Result<std::vector<std::byte>> rsaOaepWrap(std::span<const std::byte> der,
                                           std::span<const std::byte> plain) {
    HAL_TRY(requireLibcrypto("content-certificate"));
    const auto* at = reinterpret_cast<const unsigned char*>(der.data());
    std::unique_ptr<X509, X509Free> cert(d2i_X509(nullptr, &at, static_cast<long>(der.size())));
    EVP_PKEY* pub = cert ? X509_get0_pubkey(cert.get()) : nullptr;
    PkeyCtx ctx(pub ? EVP_PKEY_CTX_new(pub, nullptr) : nullptr);
    size_t size = 0;
    const auto* in = reinterpret_cast<const unsigned char*>(plain.data());
    bool ready = ctx && EVP_PKEY_encrypt_init(ctx.get()) > 0 && oaepSha256(ctx.get()) &&
                 EVP_PKEY_encrypt(ctx.get(), nullptr, &size, in, plain.size()) > 0;
    std::vector<std::byte> out(size);
    if (!ready || EVP_PKEY_encrypt(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &size,
                                   in, plain.size()) <= 0) {
        char reason[256] = "no reason given";
        if (unsigned long code = ERR_get_error())
            ERR_error_string_n(code, reason, sizeof reason);
        ERR_clear_error();
        return makeError(ErrorCode::Internal, "wrapping the content key with RSA-OAEP: %s", reason);
    }
    out.resize(size);
    return out;
}

bool rsaOaepUnwrap(std::span<const std::byte> keyFile, std::span<const std::byte> wrapped,
                   std::span<std::byte> out) {
    auto key = privateKeyOf(keyFile);
    PkeyCtx ctx(key ? EVP_PKEY_CTX_new(key.get(), nullptr) : nullptr);
    size_t room = 0;
    const auto* in = reinterpret_cast<const unsigned char*>(wrapped.data());
    bool ready = ctx && EVP_PKEY_decrypt_init(ctx.get()) > 0 && oaepSha256(ctx.get()) &&
                 EVP_PKEY_decrypt(ctx.get(), nullptr, &room, in, wrapped.size()) > 0;
    // Room for what the key can hold, in key material's memory: what comes out is the master key.
    auto plain = SecretBytes::allocate(ready ? room : 0);
    size_t length = plain.ok() ? room : 0;
    bool opened = ready && plain.ok() && !plain->empty() &&
                  EVP_PKEY_decrypt(ctx.get(), reinterpret_cast<unsigned char*>(plain->data()),
                                   &length, in, wrapped.size()) > 0 &&
                  length == out.size();
    ERR_clear_error();
    if (opened)
        std::copy(plain->data(), plain->data() + length, out.data());
    else
        wipeSecret(out);
    return opened;
}

} // namespace formats

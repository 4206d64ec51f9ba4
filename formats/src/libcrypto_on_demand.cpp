#include "libcrypto_on_demand.h"

#include "on_demand_library.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <cstddef>

// Every OpenSSL function formats/ calls: X(return type, name, (parameters), (arguments)). A
// function missing here is an undefined symbol when a module links (--no-undefined); a prototype
// that differs from OpenSSL's header does not compile.
#define HAL_LIBCRYPTO_FUNCTIONS(X)                                                                 \
    X(long, BIO_ctrl, (BIO * bp, int cmd, long larg, void* parg), (bp, cmd, larg, parg))           \
    X(int, BIO_free, (BIO * a), (a))                                                               \
    X(BIO*, BIO_new, (const BIO_METHOD* type), (type))                                             \
    X(BIO*, BIO_new_mem_buf, (const void* buf, int len), (buf, len))                               \
    X(const BIO_METHOD*, BIO_s_mem, (void), ())                                                    \
    X(void, CRYPTO_free, (void* ptr, const char* file, int line), (ptr, file, line))               \
    X(void, ERR_clear_error, (void), ())                                                           \
    X(void, ERR_error_string_n, (unsigned long e, char* buf, size_t len), (e, buf, len))           \
    X(unsigned long, ERR_get_error, (void), ())                                                    \
    X(int, EVP_CIPHER_CTX_ctrl, (EVP_CIPHER_CTX * ctx, int type, int arg, void* ptr),              \
      (ctx, type, arg, ptr))                                                                       \
    X(void, EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX * c), (c))                                        \
    X(EVP_CIPHER_CTX*, EVP_CIPHER_CTX_new, (void), ())                                             \
    X(int, EVP_CipherFinal_ex, (EVP_CIPHER_CTX * ctx, unsigned char* outm, int* outl),             \
      (ctx, outm, outl))                                                                           \
    X(int, EVP_CipherInit_ex,                                                                      \
      (EVP_CIPHER_CTX * ctx, const EVP_CIPHER* cipher, ENGINE* impl, const unsigned char* key,     \
       const unsigned char* iv, int enc),                                                          \
      (ctx, cipher, impl, key, iv, enc))                                                           \
    X(int, EVP_CipherUpdate,                                                                       \
      (EVP_CIPHER_CTX * ctx, unsigned char* out, int* outl, const unsigned char* in, int inl),     \
      (ctx, out, outl, in, inl))                                                                   \
    X(int, EVP_Digest,                                                                             \
      (const void* data, size_t count, unsigned char* md, unsigned int* size, const EVP_MD* type,  \
       ENGINE* impl),                                                                              \
      (data, count, md, size, type, impl))                                                         \
    X(int, EVP_DigestFinal_ex, (EVP_MD_CTX * ctx, unsigned char* md, unsigned int* s),             \
      (ctx, md, s))                                                                                \
    X(int, EVP_DigestInit_ex, (EVP_MD_CTX * ctx, const EVP_MD* type, ENGINE* impl),                \
      (ctx, type, impl))                                                                           \
    X(int, EVP_DigestSign,                                                                         \
      (EVP_MD_CTX * ctx, unsigned char* sigret, size_t* siglen, const unsigned char* tbs,          \
       size_t tbslen),                                                                             \
      (ctx, sigret, siglen, tbs, tbslen))                                                          \
    X(int, EVP_DigestSignInit,                                                                     \
      (EVP_MD_CTX * ctx, EVP_PKEY_CTX * *pctx, const EVP_MD* type, ENGINE* e, EVP_PKEY* pkey),     \
      (ctx, pctx, type, e, pkey))                                                                  \
    X(int, EVP_DigestUpdate, (EVP_MD_CTX * ctx, const void* d, size_t cnt), (ctx, d, cnt))         \
    X(int, EVP_DigestVerify,                                                                       \
      (EVP_MD_CTX * ctx, const unsigned char* sigret, size_t siglen, const unsigned char* tbs,     \
       size_t tbslen),                                                                             \
      (ctx, sigret, siglen, tbs, tbslen))                                                          \
    X(int, EVP_DigestVerifyInit,                                                                   \
      (EVP_MD_CTX * ctx, EVP_PKEY_CTX * *pctx, const EVP_MD* type, ENGINE* e, EVP_PKEY* pkey),     \
      (ctx, pctx, type, e, pkey))                                                                  \
    X(void, EVP_MD_CTX_free, (EVP_MD_CTX * ctx), (ctx))                                            \
    X(EVP_MD_CTX*, EVP_MD_CTX_new, (void), ())                                                     \
    X(void, EVP_PKEY_CTX_free, (EVP_PKEY_CTX * ctx), (ctx))                                        \
    X(EVP_PKEY_CTX*, EVP_PKEY_CTX_new, (EVP_PKEY * pkey, ENGINE * e), (pkey, e))                   \
    X(int, EVP_PKEY_CTX_set_rsa_mgf1_md, (EVP_PKEY_CTX * ctx, const EVP_MD* md), (ctx, md))        \
    X(int, EVP_PKEY_CTX_set_rsa_oaep_md, (EVP_PKEY_CTX * ctx, const EVP_MD* md), (ctx, md))        \
    X(int, EVP_PKEY_CTX_set_rsa_padding, (EVP_PKEY_CTX * ctx, int pad_mode), (ctx, pad_mode))      \
    X(int, EVP_PKEY_CTX_set_rsa_pss_saltlen, (EVP_PKEY_CTX * ctx, int saltlen), (ctx, saltlen))    \
    X(int, EVP_PKEY_decrypt,                                                                       \
      (EVP_PKEY_CTX * ctx, unsigned char* out, size_t* outlen, const unsigned char* in,            \
       size_t inlen),                                                                              \
      (ctx, out, outlen, in, inlen))                                                               \
    X(int, EVP_PKEY_decrypt_init, (EVP_PKEY_CTX * ctx), (ctx))                                     \
    X(int, EVP_PKEY_encrypt,                                                                       \
      (EVP_PKEY_CTX * ctx, unsigned char* out, size_t* outlen, const unsigned char* in,            \
       size_t inlen),                                                                              \
      (ctx, out, outlen, in, inlen))                                                               \
    X(int, EVP_PKEY_encrypt_init, (EVP_PKEY_CTX * ctx), (ctx))                                     \
    X(void, EVP_PKEY_free, (EVP_PKEY * pkey), (pkey))                                              \
    X(int, EVP_PKEY_get_base_id, (const EVP_PKEY* pkey), (pkey))                                   \
    X(int, EVP_PKEY_get_bits, (const EVP_PKEY* pkey), (pkey))                                      \
    X(const EVP_CIPHER*, EVP_aes_256_gcm, (void), ())                                              \
    X(const EVP_CIPHER*, EVP_chacha20_poly1305, (void), ())                                        \
    X(const EVP_MD*, EVP_sha256, (void), ())                                                       \
    X(const char*, OBJ_nid2sn, (int n), (n))                                                       \
    X(void, OPENSSL_cleanse, (void* ptr, size_t len), (ptr, len))                                  \
    X(void, OSSL_DECODER_CTX_free, (OSSL_DECODER_CTX * ctx), (ctx))                                \
    X(OSSL_DECODER_CTX*, OSSL_DECODER_CTX_new_for_pkey,                                            \
      (EVP_PKEY * *pkey, const char* input_type, const char* input_struct, const char* keytype,    \
       int selection, OSSL_LIB_CTX* libctx, const char* propquery),                                \
      (pkey, input_type, input_struct, keytype, selection, libctx, propquery))                     \
    X(int, OSSL_DECODER_CTX_set_pem_password_cb,                                                   \
      (OSSL_DECODER_CTX * ctx, pem_password_cb * cb, void* cbarg), (ctx, cb, cbarg))               \
    X(int, OSSL_DECODER_from_data,                                                                 \
      (OSSL_DECODER_CTX * ctx, const unsigned char** pdata, size_t* pdata_len),                    \
      (ctx, pdata, pdata_len))                                                                     \
    X(EVP_PKEY*, PEM_read_bio_PrivateKey,                                                          \
      (BIO * out, EVP_PKEY * *x, pem_password_cb * cb, void* u), (out, x, cb, u))                  \
    X(X509*, PEM_read_bio_X509, (BIO * out, X509 * *x, pem_password_cb * cb, void* u),             \
      (out, x, cb, u))                                                                             \
    X(int, X509_NAME_print_ex, (BIO * out, const X509_NAME* nm, int indent, unsigned long flags),  \
      (out, nm, indent, flags))                                                                    \
    X(int, X509_check_private_key, (const X509* x509, const EVP_PKEY* pkey), (x509, pkey))         \
    X(void, X509_free, (X509 * a), (a))                                                            \
    X(EVP_PKEY*, X509_get0_pubkey, (const X509* x), (x))                                           \
    X(EVP_PKEY*, X509_get_pubkey, (X509 * x), (x))                                                 \
    X(X509_NAME*, X509_get_subject_name, (const X509* a), (a))                                     \
    X(EVP_PKEY*, d2i_AutoPrivateKey, (EVP_PKEY * *a, const unsigned char** pp, long length),       \
      (a, pp, length))                                                                             \
    X(X509*, d2i_X509, (X509 * *a, const unsigned char** in, long len), (a, in, len))              \
    X(int, i2d_X509, (const X509* a, unsigned char** out), (a, out))

namespace formats {

using base::Result;

const char* const kLibcryptoName = HAL_ON_DEMAND_SONAME("libcrypto.so.", OPENSSL_VERSION_MAJOR);

namespace {

enum Function : size_t { HAL_LIBCRYPTO_FUNCTIONS(HAL_ON_DEMAND_INDEX) kFunctionCount };

constexpr const char* kFunctionNames[] = {HAL_LIBCRYPTO_FUNCTIONS(HAL_ON_DEMAND_NAME)};

/// Debian's package of libcrypto (bookworm's; trixie's is libssl3t64).
constexpr const char* kPackage = "libssl3";

const LoadedLibrary& loaded() {
    static const LoadedLibrary once = loadLibrary(kLibcryptoName, kFunctionNames);
    return once;
}

void* function(Function index) {
    return loadedFunction(loaded(), index, kFunctionNames, kLibcryptoName);
}

} // namespace

Result<void> requireLibcrypto(const char* neededBy) {
    return libraryLoaded(loaded(), kLibcryptoName, neededBy, kPackage);
}

Result<void> probeLibcrypto(const char* name, const char* neededBy) {
    return libraryLoaded(loadLibrary(name, kFunctionNames), name, neededBy, kPackage);
}

} // namespace formats

// The forwards (on_demand_library.h).
HAL_LIBCRYPTO_FUNCTIONS(HAL_ON_DEMAND_FORWARD)

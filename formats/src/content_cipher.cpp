#include "formats/content_cipher.h"

#include "libcrypto_on_demand.h"
#include "little_endian.h"

#include "formats/chunk_map.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;

namespace {

constexpr char kMagic[4] = {'A', 'G', 'S', 'F'};
constexpr uint8_t kVersion = 1;

using le::get;
using le::put;

using le::append;

void appendBytes(std::string& out, std::span<const std::byte> bytes) {
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Error gnutlsError(const char* what, int rc) {
    return makeError(ErrorCode::Internal, "%s: %s", what, gnutls_strerror(rc));
}

const EVP_CIPHER* algorithmOf(Cipher cipher) {
    return cipher == Cipher::Chacha20Poly1305 ? EVP_chacha20_poly1305() : EVP_aes_256_gcm();
}

/// OpenSSL's reason for the last failure on this thread, for a message.
std::string opensslReason() {
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0)
        return "no reason given";
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    return text;
}

Error opensslError(const char* what) {
    return makeError(ErrorCode::Internal, "%s: %s", what, opensslReason().c_str());
}

/// Starts sealing (`encrypt`) or opening with `cipher`'s key and a frame's nonce on `ctx`.
bool startFrame(EVP_CIPHER_CTX* ctx, Cipher cipher, std::span<const std::byte> key,
                std::span<const std::byte> nonce, bool encrypt) {
    const auto* k = reinterpret_cast<const unsigned char*>(key.data());
    const auto* iv = reinterpret_cast<const unsigned char*>(nonce.data());
    return EVP_CipherInit_ex(ctx, algorithmOf(cipher), nullptr, k, iv, encrypt ? 1 : 0) == 1;
}

/// HKDF-SHA256 expand of `master` with `info` into `out`.
Result<void> expand(const MasterKey& master, const std::string& info, std::span<std::byte> out) {
    gnutls_datum_t key{reinterpret_cast<unsigned char*>(const_cast<std::byte*>(master.data())),
                       static_cast<unsigned>(master.size())};
    gnutls_datum_t infoDatum{reinterpret_cast<unsigned char*>(const_cast<char*>(info.data())),
                             static_cast<unsigned>(info.size())};
    int rc = gnutls_hkdf_expand(GNUTLS_MAC_SHA256, &key, &infoDatum, out.data(), out.size());
    if (rc < 0)
        return gnutlsError("HKDF-SHA256", rc);
    return success();
}

/// HMAC-SHA256 of `data` under `key`.
std::array<std::byte, 32> hmac(std::span<const std::byte> key, std::string_view data) {
    std::array<std::byte, 32> out{};
    // Cannot fail for SHA-256 with a key of any length but on a broken library, which the
    // derivation of the keys would have found first.
    (void)gnutls_hmac_fast(GNUTLS_MAC_SHA256, key.data(), key.size(), data.data(), data.size(),
                           out.data());
    return out;
}

std::string_view baseName(const std::string& name) {
    size_t slash = name.rfind('/');
    return std::string_view(name).substr(slash == std::string::npos ? 0 : slash + 1);
}

} // namespace

Result<Cipher> parseCipher(std::string_view text) {
    for (Cipher c : {Cipher::None, Cipher::Aes256Gcm, Cipher::Chacha20Poly1305})
        if (text == cipherName(c))
            return c;
    return makeError(ErrorCode::Config, "content-encryption: '%.*s' is not a cipher (accepted: %s)",
                     static_cast<int>(text.size()), text.data(), kCipherForms);
}

const char* cipherName(Cipher cipher) {
    switch (cipher) {
    case Cipher::None:
        return "none";
    case Cipher::Aes256Gcm:
        return "aes-256-gcm";
    case Cipher::Chacha20Poly1305:
        return "chacha20-poly1305";
    }
    return "?";
}

Result<void> randomBytes(std::span<std::byte> out) {
    int rc = gnutls_rnd(GNUTLS_RND_KEY, out.data(), out.size());
    if (rc < 0)
        return gnutlsError("random bytes", rc);
    return success();
}

Result<KeyCheck> keyCheckOf(Cipher cipher, const MasterKey& master, const CheckpointId& id) {
    std::string info = "criu-amdgpu key check v1";
    appendBytes(info, id);
    append<uint8_t>(info, static_cast<uint8_t>(cipher));
    KeyCheck check{};
    HAL_TRY(expand(master, info, check));
    return check;
}

Result<std::shared_ptr<const SealKeys>> SealKeys::derive(Cipher cipher, const MasterKey& master,
                                                         const CheckpointId& id) {
    if (cipher == Cipher::None)
        return makeError(ErrorCode::Internal, "sealing keys for no cipher");
    auto keys = std::make_shared<SealKeys>();
    keys->cipher_ = cipher;
    HAL_TRY_ASSIGN(keys->secret_, Secret<Material>::make());
    Material& secret = *keys->secret_;
    secret.master = master;
    keys->id_ = id;
    std::string aeadInfo = "criu-amdgpu aead v1";
    appendBytes(aeadInfo, id);
    HAL_TRY(expand(master, aeadInfo, secret.aead));
    HAL_TRY(expand(master, "criu-amdgpu chunk id v1", secret.identity));
    HAL_TRY(expand(master, "criu-amdgpu checksum v1", secret.checksum));
    std::string tagInfo = "criu-amdgpu image tag v1";
    appendBytes(tagInfo, id);
    HAL_TRY(expand(master, tagInfo, secret.tag));
    HAL_TRY_ASSIGN(keys->check_, keyCheckOf(cipher, master, id));
    return std::shared_ptr<const SealKeys>(std::move(keys));
}

ChunkSum SealKeys::chunkIdentity(const ChunkSum& plain) const {
    std::string data;
    append<uint64_t>(data, plain.low);
    append<uint64_t>(data, plain.high);
    auto mac = hmac(secret_->identity, data);
    return ChunkSum{get<uint64_t>(mac.data()), get<uint64_t>(mac.data() + 8)};
}

uint64_t SealKeys::keyedChecksum(const std::string& file, uint64_t plain) const {
    std::string data;
    appendBytes(data, id_);
    std::string_view name = baseName(file);
    append<uint32_t>(data, static_cast<uint32_t>(name.size()));
    data += name;
    append<uint64_t>(data, plain);
    return get<uint64_t>(hmac(secret_->checksum, data).data());
}

ImageTag SealKeys::imageTag(const std::string& file, std::span<const std::byte> bytes,
                            const CheckpointId* parent) const {
    static const CheckpointId kNoParent{};
    std::string head = "criu-amdgpu image tag v1";
    std::string_view name = baseName(file);
    append<uint32_t>(head, static_cast<uint32_t>(name.size()));
    head += name;
    appendBytes(head, parent ? *parent : kNoParent);
    append<uint64_t>(head, bytes.size());
    ImageTag out{};
    // As hmac(): cannot fail for SHA-256 on a library that derived the keys. A context that is
    // not made leaves a tag of zeros, which no image's tag is.
    gnutls_hmac_hd_t mac = nullptr;
    if (gnutls_hmac_init(&mac, GNUTLS_MAC_SHA256, secret_->tag.data(), secret_->tag.size()) < 0)
        return out;
    (void)gnutls_hmac(mac, head.data(), head.size());
    (void)gnutls_hmac(mac, bytes.data(), bytes.size());
    gnutls_hmac_deinit(mac, out.data());
    return out;
}

Result<SealHeader> readSealHeader(std::span<const std::byte> bytes, size_t maxSealed) {
    auto bad = [](const std::string& what) {
        return makeError(ErrorCode::Image, "sealed frame: %s", what.c_str());
    };
    if (bytes.size() < kSealHeader)
        return bad(
            strFormat("%zu bytes, shorter than its %zu-byte header", bytes.size(), kSealHeader));
    if (memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return bad("its magic is not \"AGSF\" (a frame that is not encrypted, in an encrypted "
                   "checkpoint)");
    uint8_t version = get<uint8_t>(bytes.data() + 4);
    if (version != kVersion)
        return bad(strFormat("version %u, this build reads version %u", version, kVersion));
    uint8_t cipher = get<uint8_t>(bytes.data() + 5);
    if (cipher != static_cast<uint8_t>(Cipher::Aes256Gcm) &&
        cipher != static_cast<uint8_t>(Cipher::Chacha20Poly1305))
        return bad(strFormat("cipher %u (1: aes-256-gcm, 2: chacha20-poly1305)", cipher));
    uint16_t flags = get<uint16_t>(bytes.data() + 6);
    if (flags != 0)
        return bad(strFormat("flags 0x%x, none are defined", flags));
    SealHeader h;
    h.cipher = static_cast<Cipher>(cipher);
    h.sealedSize = get<uint32_t>(bytes.data() + 8);
    memcpy(h.nonce.data(), bytes.data() + 12, kNonceBytes);
    if (h.sealedSize < kTagBytes || h.sealedSize > maxSealed)
        return bad(
            strFormat("sealed size %u is not from %zu to %zu", h.sealedSize, kTagBytes, maxSealed));
    return h;
}

Result<std::unique_ptr<Aead>> Aead::make(std::shared_ptr<const SealKeys> keys) {
    HAL_TRY(requireLibcrypto("content-encryption (an encrypted checkpoint's BO contents)"));
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    if (!ctx)
        return opensslError(cipherName(keys->cipher()));
    return std::unique_ptr<Aead>(new Aead(std::move(keys), ctx));
}

Aead::~Aead() {
    EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(handle_)); // clears the key schedule
}

std::string Aead::associatedData(const FramePlace& place) const {
    std::string ad = "criu-amdgpu sealed frame v1";
    appendBytes(ad, keys_->id());
    std::string_view name = baseName(place.file);
    append<uint32_t>(ad, static_cast<uint32_t>(name.size()));
    ad += name;
    append<uint64_t>(ad, place.rawSize);
    append<uint64_t>(ad, place.index);
    append<uint64_t>(ad, place.count);
    return ad;
}

Result<std::span<const std::byte>>
Aead::seal(const FramePlace& place, std::span<const std::byte> frame, std::span<std::byte> out) {
    return seal(place, frame, {}, out);
}

Result<std::span<const std::byte>> Aead::seal(const FramePlace& place,
                                              std::span<const std::byte> head,
                                              std::span<const std::byte> body,
                                              std::span<std::byte> out) {
    size_t frameSize = head.size() + body.size();
    size_t sealedSize = frameSize + kTagBytes;
    if (out.size() < kSealHeader + sealedSize || sealedSize > UINT32_MAX)
        return makeError(ErrorCode::InvalidArgument,
                         "a sealing buffer of %zu bytes for a frame of %zu", out.size(), frameSize);
    memcpy(out.data(), kMagic, sizeof kMagic);
    put<uint8_t>(out.data() + 4, kVersion);
    put<uint8_t>(out.data() + 5, static_cast<uint8_t>(keys_->cipher()));
    put<uint16_t>(out.data() + 6, 0);
    put<uint32_t>(out.data() + 8, static_cast<uint32_t>(sealedSize));
    std::span<std::byte> nonce = out.subspan(12, kNonceBytes);
    int rc = gnutls_rnd(GNUTLS_RND_NONCE, nonce.data(), nonce.size());
    if (rc < 0)
        return gnutlsError("a nonce", rc);
    if (frameSize > INT_MAX - kTagBytes)
        return makeError(ErrorCode::InvalidArgument, "a frame of %zu bytes to seal", frameSize);
    std::string ad = associatedData(place);
    auto* ctx = static_cast<EVP_CIPHER_CTX*>(handle_);
    auto* sealed = reinterpret_cast<unsigned char*>(out.data() + kSealHeader);
    // The two parts go through the cipher one after the other, as one stream: the sealed bytes
    // are those of sealing head + body copied together, without that copy.
    int n = 0, headOut = 0, bodyOut = 0, last = 0;
    auto update = [&](unsigned char* to, std::span<const std::byte> part, int* outLength) {
        *outLength = 0;
        return part.empty() || EVP_CipherUpdate(ctx, to, outLength,
                                                reinterpret_cast<const unsigned char*>(part.data()),
                                                static_cast<int>(part.size())) == 1;
    };
    bool ok = startFrame(ctx, keys_->cipher(), keys_->aeadKey(), nonce, true) &&
              EVP_CipherUpdate(ctx, nullptr, &n, reinterpret_cast<const unsigned char*>(ad.data()),
                               static_cast<int>(ad.size())) == 1 &&
              update(sealed, head, &headOut) && update(sealed + headOut, body, &bodyOut) &&
              EVP_CipherFinal_ex(ctx, sealed + headOut + bodyOut, &last) == 1 &&
              EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagBytes),
                                  sealed + frameSize) == 1;
    if (!ok)
        return opensslError(cipherName(keys_->cipher()));
    if (static_cast<size_t>(headOut + bodyOut + last) != frameSize)
        return makeError(ErrorCode::Internal, "%s sealed %zu bytes into %d",
                         cipherName(keys_->cipher()), frameSize, headOut + bodyOut + last);
    return std::span<const std::byte>(out.first(kSealHeader + sealedSize));
}

Result<size_t> Aead::open(const FramePlace& place, std::span<const std::byte> sealed,
                          std::span<std::byte> out) {
    return open(place, sealed, out, 0, nullptr);
}

Result<size_t> Aead::open(const FramePlace& place, std::span<const std::byte> sealed,
                          std::span<std::byte> out, size_t head, const RestPlace& restTo) {
    HAL_TRY_ASSIGN(SealHeader h, readSealHeader(sealed, sealed.size()));
    if (h.frameSize() != sealed.size())
        return makeError(ErrorCode::Image,
                         "sealed frame: sealed size %u, and %zu bytes follow its header",
                         h.sealedSize, sealed.size() - kSealHeader);
    if (h.cipher != keys_->cipher())
        return makeError(ErrorCode::Image,
                         "sealed frame: cipher %s, the checkpoint's key is for %s",
                         cipherName(h.cipher), cipherName(keys_->cipher()));
    size_t plain = h.sealedSize - kTagBytes;
    if (plain > out.size())
        return makeError(ErrorCode::Image,
                         "sealed frame: %zu bytes, over the %zu a frame has room for", plain,
                         out.size());
    head = std::min(head, plain);
    std::string ad = associatedData(place);
    auto* ctx = static_cast<EVP_CIPHER_CTX*>(handle_);
    const auto* body = reinterpret_cast<const unsigned char*>(sealed.data() + kSealHeader);
    auto* tag = const_cast<unsigned char*>(body + plain); // OpenSSL's SET_TAG takes void*
    auto* opened = reinterpret_cast<unsigned char*>(out.data());
    int n = 0, headOut = 0, restOut = 0, last = 0;
    bool started =
        startFrame(ctx, keys_->cipher(), keys_->aeadKey(), h.nonce, false) &&
        EVP_CipherUpdate(ctx, nullptr, &n, reinterpret_cast<const unsigned char*>(ad.data()),
                         static_cast<int>(ad.size())) == 1 &&
        (head == 0 || EVP_CipherUpdate(ctx, opened, &headOut, body, static_cast<int>(head)) == 1);
    if (!started)
        return opensslError(cipherName(keys_->cipher()));
    std::span<std::byte> rest = out.subspan(static_cast<size_t>(headOut), plain - head);
    if (restTo) {
        std::span<std::byte> to = restTo(std::span<const std::byte>(out.first(head)), plain - head);
        if (!to.empty()) {
            if (to.size() < plain - head)
                return makeError(ErrorCode::Internal, "%zu bytes of room for the %zu of a frame",
                                 to.size(), plain - head);
            rest = to.first(plain - head);
        }
    }
    auto* restAt = reinterpret_cast<unsigned char*>(rest.data());
    bool opening =
        (rest.empty() || EVP_CipherUpdate(ctx, restAt, &restOut, body + head,
                                          static_cast<int>(rest.size())) == 1) &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagBytes), tag) == 1;
    if (!opening)
        return opensslError(cipherName(keys_->cipher()));
    if (EVP_CipherFinal_ex(ctx, restAt + restOut, &last) != 1) {
        ERR_clear_error();
        // What was decrypted is not the frame: nothing of it is served.
        memset(out.data(), 0, head);
        memset(rest.data(), 0, rest.size());
        return makeError(ErrorCode::Image,
                         "sealed frame %llu of %llu does not authenticate: it is not the frame "
                         "this checkpoint wrote there, or the key is not this checkpoint's",
                         static_cast<unsigned long long>(place.index),
                         static_cast<unsigned long long>(place.count));
    }
    size_t length = static_cast<size_t>(headOut + restOut + last);
    if (length != plain)
        return makeError(ErrorCode::Internal, "%s opened %zu bytes of %zu",
                         cipherName(keys_->cipher()), length, plain);
    return length;
}

std::string hexOf(std::span<const std::byte> bytes) {
    static const char kDigits[] = "0123456789abcdef";
    std::string out;
    for (std::byte b : bytes) {
        out.push_back(kDigits[static_cast<unsigned>(b) >> 4]);
        out.push_back(kDigits[static_cast<unsigned>(b) & 15]);
    }
    return out;
}

} // namespace formats

#include "formats/content_cipher.h"

#include "little_endian.h"

#include "formats/chunk_map.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <cstring>

namespace hal {
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

gnutls_cipher_algorithm_t algorithmOf(Cipher cipher) {
    return cipher == Cipher::Chacha20Poly1305 ? GNUTLS_CIPHER_CHACHA20_POLY1305
                                              : GNUTLS_CIPHER_AES_256_GCM;
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
    keys->master_ = master;
    keys->id_ = id;
    std::string aeadInfo = "criu-amdgpu aead v1";
    appendBytes(aeadInfo, id);
    HAL_TRY(expand(master, aeadInfo, keys->aead_));
    HAL_TRY(expand(master, "criu-amdgpu chunk id v1", keys->identity_));
    HAL_TRY(expand(master, "criu-amdgpu checksum v1", keys->checksum_));
    HAL_TRY_ASSIGN(keys->check_, keyCheckOf(cipher, master, id));
    return std::shared_ptr<const SealKeys>(std::move(keys));
}

ChunkSum SealKeys::chunkIdentity(const ChunkSum& plain) const {
    std::string data;
    append<uint64_t>(data, plain.low);
    append<uint64_t>(data, plain.high);
    auto mac = hmac(identity_, data);
    return ChunkSum{get<uint64_t>(mac.data()), get<uint64_t>(mac.data() + 8)};
}

uint64_t SealKeys::keyedChecksum(const std::string& file, uint64_t plain) const {
    std::string data;
    appendBytes(data, id_);
    std::string_view name = baseName(file);
    append<uint32_t>(data, static_cast<uint32_t>(name.size()));
    data += name;
    append<uint64_t>(data, plain);
    return get<uint64_t>(hmac(checksum_, data).data());
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
    gnutls_aead_cipher_hd_t handle = nullptr;
    auto key = keys->aeadKey();
    gnutls_datum_t datum{reinterpret_cast<unsigned char*>(const_cast<std::byte*>(key.data())),
                         static_cast<unsigned>(key.size())};
    int rc = gnutls_aead_cipher_init(&handle, algorithmOf(keys->cipher()), &datum);
    if (rc < 0)
        return gnutlsError(cipherName(keys->cipher()), rc);
    return std::unique_ptr<Aead>(new Aead(std::move(keys), handle));
}

Aead::~Aead() {
    gnutls_aead_cipher_deinit(static_cast<gnutls_aead_cipher_hd_t>(handle_));
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
    size_t sealedSize = frame.size() + kTagBytes;
    if (out.size() < kSealHeader + sealedSize || sealedSize > UINT32_MAX)
        return makeError(ErrorCode::InvalidArgument,
                         "a sealing buffer of %zu bytes for a frame of %zu", out.size(),
                         frame.size());
    memcpy(out.data(), kMagic, sizeof kMagic);
    put<uint8_t>(out.data() + 4, kVersion);
    put<uint8_t>(out.data() + 5, static_cast<uint8_t>(keys_->cipher()));
    put<uint16_t>(out.data() + 6, 0);
    put<uint32_t>(out.data() + 8, static_cast<uint32_t>(sealedSize));
    std::span<std::byte> nonce = out.subspan(12, kNonceBytes);
    int rc = gnutls_rnd(GNUTLS_RND_NONCE, nonce.data(), nonce.size());
    if (rc < 0)
        return gnutlsError("a nonce", rc);
    std::string ad = associatedData(place);
    size_t written = sealedSize;
    rc = gnutls_aead_cipher_encrypt(static_cast<gnutls_aead_cipher_hd_t>(handle_), nonce.data(),
                                    nonce.size(), ad.data(), ad.size(), kTagBytes, frame.data(),
                                    frame.size(), out.data() + kSealHeader, &written);
    if (rc < 0)
        return gnutlsError(cipherName(keys_->cipher()), rc);
    if (written != sealedSize)
        return makeError(ErrorCode::Internal, "%s sealed %zu bytes into %zu",
                         cipherName(keys_->cipher()), frame.size(), written);
    return std::span<const std::byte>(out.first(kSealHeader + sealedSize));
}

Result<size_t> Aead::open(const FramePlace& place, std::span<const std::byte> sealed,
                          std::span<std::byte> out) {
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
    std::string ad = associatedData(place);
    size_t length = out.size();
    int rc = gnutls_aead_cipher_decrypt(
        static_cast<gnutls_aead_cipher_hd_t>(handle_), h.nonce.data(), h.nonce.size(), ad.data(),
        ad.size(), kTagBytes, sealed.data() + kSealHeader, h.sealedSize, out.data(), &length);
    if (rc < 0)
        return makeError(ErrorCode::Image,
                         "sealed frame %llu of %llu does not authenticate (%s): it is not the "
                         "frame this checkpoint wrote there, or the key is not this checkpoint's",
                         static_cast<unsigned long long>(place.index),
                         static_cast<unsigned long long>(place.count), gnutls_strerror(rc));
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

} // namespace hal

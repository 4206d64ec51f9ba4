#pragma once
/// \file
/// The key wrap of the key images written now (formats/seal_image.h): RSA-OAEP with SHA-256
/// and MGF1-SHA-256, OpenSSL 3's EVP. Internal to formats/src (seal_image.cpp).

#include "base/result.h"

#include <cstddef>
#include <span>
#include <vector>

namespace formats {

using base::Result;

/// `plain` wrapped for the RSA public key of the certificate `der` (DER).
Result<std::vector<std::byte>> rsaOaepWrap(std::span<const std::byte> der,
                                           std::span<const std::byte> plain);

/// `wrapped` unwrapped with the private key whose file (PEM or DER, PKCS#1 or PKCS#8,
/// unencrypted) is `keyFile`, into `out`; true only when it unwraps to exactly out.size() bytes.
/// Nothing tells one failure from another (the caller gives one error for all), and `out` holds
/// zeros after one.
bool rsaOaepUnwrap(std::span<const std::byte> keyFile, std::span<const std::byte> wrapped,
                   std::span<std::byte> out);

} // namespace formats

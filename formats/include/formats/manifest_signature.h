#pragma once
/// \file
/// Who signs a checkpoint's manifest and whom a restore trusts to have signed it (OpenSSL's EVP,
/// EVP_DigestSign and EVP_DigestVerify over SHA-256): an RSA key (2048 bits or more) signs with
/// RSA-PSS (MGF1 with SHA-256, a salt as long as the digest), an EC key with ECDSA; no other key
/// type is taken. Trust is a list of certificates, each the signer's own (no chain to a CA is
/// followed, no validity date is checked): a manifest is trusted when its certificate is,
/// byte for byte, one of the list, and its signature verifies with that certificate's key.
///
/// Every key, certificate and list is read from a path that may be trusted
/// (base/trusted_path.h: root's, and writable by nobody else, as every directory above it); the
/// private key must in addition be readable by its owner alone.

#include "formats/checkpoint_manifest.h"

#include "base/result.h"

#include <openssl/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace formats {

using base::Result;

/// The key and certificate a dump signs with (options `checkpoint-signing-key` and
/// `checkpoint-signing-certificate`).
class ManifestSigner {
public:
    /// Reads both (PEM or DER; the key unencrypted, PKCS#1, SEC1 or PKCS#8) and checks that the
    /// key is the certificate's; Config errors name the option and the path.
    static Result<ManifestSigner> load(const std::string& keyPath, const std::string& certPath);
    SignatureScheme scheme() const { return scheme_; }
    const std::vector<std::byte>& certificate() const { return certificate_; }
    /// The signature of `data`.
    Result<std::vector<std::byte>> sign(std::string_view data) const;

private:
    std::shared_ptr<EVP_PKEY> key_;
    SignatureScheme scheme_ = SignatureScheme::RsaPssSha256;
    std::vector<std::byte> certificate_; ///< DER
};

/// The certificates a restore trusts (option `trusted-certificates`).
class TrustedSigners {
public:
    /// Reads a file of certificates (PEM, any number, or one DER) or every regular file of a
    /// directory (each such a file); a list without any certificate is an error.
    static Result<TrustedSigners> load(const std::string& path);
    size_t size() const { return certificates_.size(); }
    /// Success when `manifest` (read from `file`) is signed by a trusted certificate; an Image
    /// error naming the file and what is wrong otherwise (a certificate not in the list, with
    /// its SHA-256 fingerprint and subject; a signature that does not verify).
    Result<void> verify(const SignedManifest& manifest, const std::string& file) const;
    /// The SHA-256 fingerprint (hex, colons) and subject of a DER certificate, for messages.
    static std::string describeCertificate(const std::vector<std::byte>& der);

private:
    std::string path_;
    std::vector<std::vector<std::byte>> certificates_; ///< DER
};

} // namespace formats

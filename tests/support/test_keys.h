#pragma once
/// \file
/// RSA keys and self-signed certificates for tests of encrypted checkpoints (option
/// `content-encryption`), made with GnuTLS once per test program and pair, and written where a
/// test asks (a TempDir: root's, under sticky /tmp, so base/trusted_path.h accepts them).

#include <string>

namespace testsupport {

struct KeyFiles {
    std::string certificate; ///< PEM
    std::string privateKey;  ///< PEM, unencrypted
};

/// Writes pair number `which` (0, 1, ...: different keys) into `dir` as
/// `<stem>.crt` and `<stem>.key`, mode 0600; RSA of `bits` (under 2048: a key the plugin refuses).
KeyFiles writeTestKeys(const std::string& dir, int which = 0, const std::string& stem = "content",
                       unsigned bits = 2048);

} // namespace testsupport

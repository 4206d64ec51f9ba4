#pragma once
// OpenSSL's libcrypto, loaded on first use. formats/ calls OpenSSL only to encrypt, sign and
// verify checkpoints; a dump or restore that does none of them never maps libcrypto (about
// 1.5 MiB of criu's resident memory). Nothing links libcrypto: libcrypto_on_demand.cpp defines
// every OpenSSL function formats/ calls (hidden, with OpenSSL's own prototypes) as a forward to
// the library dlopen gives, loaded at the first such call. The entry points that need it (a
// sealed frame, a wrapped key, a signer or trusted certificates) call requireLibcrypto first, so
// that a missing library is an error naming it and the option that needed it.
#include "base/result.h"

namespace formats {

using base::Result;

/// The library dlopen loads: "libcrypto.so.N" of the OpenSSL headers built against, found as
/// the dynamic loader finds a library the program links.
extern const char* const kLibcryptoName;

/// Loads kLibcryptoName once per process and resolves every function formats/ calls; the
/// error, when it cannot, names the library and `neededBy` (the option that needed it).
Result<void> requireLibcrypto(const char* neededBy);

/// What requireLibcrypto does, for library `name`, each call anew (tests: a missing library, a
/// library without the functions).
Result<void> probeLibcrypto(const char* name, const char* neededBy);

} // namespace formats

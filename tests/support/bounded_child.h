#pragma once
/// \file
/// Running code that might loop or allocate without end in a child process, so that a test
/// fails instead of hanging or exhausting the machine.

#include <functional>
#include <string>

namespace testsupport {

/// Runs `body` in a forked child with 20 s of wall time (60 s in a sanitized build) and (outside
/// ASan and TSan, whose shadow memory needs terabytes) 1 GiB of address space. Returns what `body`
/// returned, or "did not finish: ..." when the child was killed.
std::string runBounded(const std::function<std::string()>& body);

} // namespace testsupport

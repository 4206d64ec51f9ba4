#pragma once
/// \file
/// Image files far larger than the tests that use them can afford: the size header, then holes.

#include <cstdint>
#include <string>

namespace testsupport {

/// Writes the image file `path`: an 8-byte size header announcing `announced`, then `contents`
/// bytes of holes (the file system allocates none of them). A failure is a test failure.
void writeSparseImage(const std::string& path, uint64_t announced, uint64_t contents);

} // namespace testsupport

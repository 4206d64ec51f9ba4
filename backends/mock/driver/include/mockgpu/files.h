#pragma once
/// \file
/// Small file helpers of the mock driver: whole-file read, atomic write, recursive remove.

#include "base/result.h"

#include <string>

namespace mock {

/// Reads a whole file.
hal::Result<std::string> readWholeFile(const std::string& path);
/// Writes a whole file atomically (temporary file + rename).
hal::Result<void> writeFileAtomic(const std::string& path, const std::string& text);
/// Removes a tree; missing is fine.
void removeTree(const std::string& path);
/// Creates a directory and its parents.
hal::Result<void> makeDirs(const std::string& path);

} // namespace mock

#pragma once
/// \file
/// Small file helpers of the mock driver: whole-file read, atomic write, recursive remove.

#include "base/result.h"

#include <string>

namespace mock {

/// Reads a whole file.
base::Result<std::string> readWholeFile(const std::string& path);
/// Writes a whole file atomically (temporary file + rename).
base::Result<void> writeFileAtomic(const std::string& path, const std::string& text);
/// Removes a tree; missing is fine.
void removeTree(const std::string& path);
/// Creates a directory and its parents.
base::Result<void> makeDirs(const std::string& path);

} // namespace mock

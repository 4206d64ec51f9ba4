#pragma once
/// \file
/// Text from a checkpoint made safe for a terminal. A checkpoint is untrusted input: a file name,
/// a parent path or an error quoting one may hold terminal escape sequences or line breaks that
/// would rewrite what `criu-amdgpu image` prints.

#include <string>
#include <string_view>

namespace tools {

/// `text` with every byte outside printable ASCII written as \xNN, and '\' as "\\".
std::string printable(std::string_view text);

} // namespace tools

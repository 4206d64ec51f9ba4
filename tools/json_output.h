#pragma once
/// \file
/// The --json outputs of criu-amdgpu, built with nlohmann::json. Each is one JSON object on one
/// line of stdout, with its keys in the order they were set (ordered_json), so the text is as
/// stable as its structure; each command documents its structure where it builds it.

#include <nlohmann/json.hpp>

namespace tools {

/// `value` on one line of stdout. Bytes that are not UTF-8 (a sysfs file, a path) are written as
/// U+FFFD instead of making the text invalid JSON, and every character outside printable ASCII
/// as a \u escape: a string from a checkpoint (untrusted) never reaches a terminal raw.
void printJson(const nlohmann::ordered_json& value);

} // namespace tools

#pragma once
/// \file
/// A screening pass over a YAML text before yaml-cpp builds nodes from it: it makes sure that
/// building them finishes, in bounded time and memory.
///
/// yaml-cpp 0.7.0 (Debian bookworm) and 0.8.0 (trixie) loop forever in YAML::LoadAll, allocating
/// an empty document per turn, when a document starts with a token no node can start with, such
/// as a ',' outside a flow collection: ",", "- 1\n,", "\"x\" ,", "&a ,", "---\n,". The parser
/// then never consumes that token and every HandleNextDocument starts a new document at it.
/// yaml-cpp 0.9.0 (2026) stops LoadAll at such a document. The screen runs the parser with an
/// event handler that builds nothing and stops at the first document that starts where the one
/// before it started, after too many events, or at too deep a nesting. The caller then builds
/// the one document with YAML::Load, whose parse is the screen's first document again.

#include "base/result.h"
#include "config/sources.h"

#include <cstddef>
#include <string>

namespace config {

/// Most parser events (nodes, collection ends, documents) a YAML configuration may produce.
inline constexpr size_t kMaxYamlEvents = 100000;
/// Deepest nesting of collections in a YAML configuration.
inline constexpr unsigned kMaxYamlDepth = 32;

/// What the screen saw.
struct YamlScreen {
    size_t documents = 0;       ///< complete documents in the text
    int secondDocumentLine = 0; ///< 0-based line where the second document starts
};

/// Screens `text` (read from `fileName`, for messages). Errors name the file and line: a token
/// that starts no node, a text over the limits above, or yaml-cpp's own syntax errors.
base::Result<YamlScreen> screenYaml(const std::string& text, const std::string& fileName);

} // namespace config

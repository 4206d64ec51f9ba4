#pragma once
/// \file
/// The generated pages as man(1) shows them, and what man says about them.

#include <string>

namespace mantest {

/// The built page `name` (e.g. "criu-amdgpu.1") in the build tree: the file that is installed.
std::string builtPage(const std::string& name);

/// What man(1) prints for the page file: `text` is the rendering as plain text on one very wide
/// line per paragraph, with typographic quotes and dashes turned back into ASCII and runs of
/// spaces collapsed; `warnings` is what man says with lintian's options (--warnings, UTF-8,
/// 80 columns); `ok` is false when man could not be run.
struct Rendering {
    bool ok = false;
    std::string text;
    std::string warnings;
};
Rendering render(const std::string& pagePath);

/// `text` as the plain rendering shows it: backquotes removed, spaces collapsed.
std::string asRendered(std::string text);

} // namespace mantest

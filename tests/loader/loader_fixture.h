#pragma once
/// \file
/// Scenario directories for loader tests: a temp dir holding symlinks to chosen test backend
/// libraries (built into CRIU_AMDGPU_LOADER_TEST_BACKEND_DIR) and files written at test time.

#include "hal/registry.h"
#include "temp_dir.h"

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace loadertest {

/// Where the build put the test backend libraries.
std::string builtModuleDir();
/// The built library `<fileName>.so`.
std::string builtModule(const std::string& fileName);

/// A backend directory for one scenario.
class ScenarioDir {
public:
    /// Links each built `<name>.so` into the directory.
    explicit ScenarioDir(std::initializer_list<const char*> modules = {});
    /// Links the built `<name>.so` in as `<as>` (default: same name).
    void link(const std::string& name, const std::string& as = "");
    /// Writes a file of this name with these contents.
    void write(const std::string& fileName, const std::string& contents);
    const std::string& path() const { return dir_.path(); }
    std::string operator/(const std::string& relative) const { return dir_ / relative; }

private:
    testsupport::TempDir dir_;
};

/// The candidate loaded from `<dir>/<fileName>`, or nullptr.
const hal::BackendCandidate* candidateFile(const hal::BackendRegistry& registry,
                                           const std::string& fileName);

/// Log lines received by captureSink (level, text).
std::vector<std::pair<base::LogLevel, std::string>>& capturedLog();
/// A LogSink that appends to capturedLog().
void captureSink(base::LogLevel level, const char* line);
/// True when some captured line contains `text`.
bool logContains(const std::string& text);

/// Whether the library file `path` is loaded in this process (matched by its inode: the registry
/// loads it through /proc/self/fd/N).
bool isLoaded(const std::string& path);

} // namespace loadertest

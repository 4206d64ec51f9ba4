#pragma once
/// \file
/// Finding, loading, probing and choosing backends at run time. Every failure to load a file is a
/// logged, skipped candidate with a reason; nothing here throws or aborts the host process.

#include "base/result.h"
#include "base/trusted_path.h"
#include "hal/backend.h"
#include "settings/settings.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace hal {

using base::Result;
using base::TrustedPath;

/// One candidate backend library and what became of it.
struct BackendCandidate {
    std::string path;       ///< the library file
    std::string name;       ///< from its descriptor ("" when it could not be read)
    bool loaded = false;    ///< the library loaded and its ABI matched
    std::string skipReason; ///< why it was skipped (load error, no entry point, ABI, ...)
    ProbeAnswer probe;      ///< its probe answer (when loaded)
    Backend* backend = nullptr;
};

class HalLibrary;

/// Loads backend libraries and keeps them loaded for its lifetime, or until unloadAllBut.
class BackendRegistry {
public:
    BackendRegistry();
    ~BackendRegistry();
    BackendRegistry(const BackendRegistry&) = delete;
    BackendRegistry& operator=(const BackendRegistry&) = delete;

    /// Loads every `*.so` in `dir` (sorted by name) and probes it with `settings`. A missing
    /// directory yields no candidates and a logged note, not an error. A directory that fails
    /// openTrustedPath (base/trusted_path.h) loads nothing: it yields one skipped candidate (path
    /// `dir`, no name) whose reason names backend-dir, the path and why, and a logged warning.
    /// The directory is listed through the fd that was judged, and each library is judged from
    /// that fd and loaded as loadChecked does.
    void discover(const std::string& dir, const settings::Settings& settings,
                  const HostServices& host);
    /// Loads one library file as a candidate (tests, explicit paths); a file that fails
    /// openTrustedPath is a skipped candidate, never loaded.
    void loadFile(const std::string& path, const settings::Settings& settings,
                  const HostServices& host);
    /// Loads the library a trusted-path check opened for `path` through that check's fd
    /// (/proc/self/fd/N): what is loaded is what was judged, whatever `path` names by now.
    void loadChecked(const std::string& path, const TrustedPath& checked,
                     const settings::Settings& settings, const HostServices& host);

    /// Every candidate seen, in load order (stable addresses: loading more keeps pointers valid).
    const std::deque<BackendCandidate>& candidates() const { return candidates_; }

    /// The backend the policy picks: with settings.backends empty ("auto") the present backend
    /// with the highest priority, never the mock unless a mock root is configured; else the
    /// first present one in the configured order. A configured backend that is not present is an
    /// error naming its probe's reason (or why it was not loaded). `preferredCapability` (auto
    /// only): a present backend declaring it wins over higher priorities (a restore routes a
    /// checkpoint to the backend that can restore what it holds).
    Result<BackendCandidate*> select(const settings::Settings& settings,
                                     const std::string& preferredCapability = {});

    /// Destroys every loaded backend but `kept` and unloads its library, to give back the
    /// memory its code and data take for the rest of the criu run. Their candidates stay, with
    /// their names and probe answers, but no longer loaded (backend null); `kept` (a candidate of
    /// this registry) stays as it was.
    void unloadAllBut(const BackendCandidate* kept);

private:
    void skipCandidate(BackendCandidate cand, std::string reason);
    /// Makes sure the HAL's shared library, which the backend modules link, is loaded before
    /// any of them (src/hal_library.h): from the trusted directory `dir` where the process does
    /// not have it yet; where it cannot be, the backends that need it fail to load, each saying
    /// so.
    void loadHalLibraryFrom(const TrustedPath& dir, const std::string& dirPath);

    struct Library;
    std::unique_ptr<HalLibrary> halLibrary_;
    std::vector<std::unique_ptr<Library>> libraries_;
    std::deque<BackendCandidate> candidates_;
};

/// The directory of the library or executable containing this code (dladdr), "" if unknown.
std::string directoryOfThisModule();

/// Where backends are looked for: settings.backendDir, else `<dir of the plugin>/amdgpu`.
std::string defaultBackendDir(const settings::Settings& settings, const std::string& pluginDir);

} // namespace hal

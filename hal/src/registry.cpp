#include "hal/registry.h"

#include "hal_library.h"

#include "base/library_name.h"
#include "base/log.h"
#include "base/path_text.h"
#include "base/trusted_path.h"

#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace hal {

using base::ErrorCode;
using base::joinPath;
using base::makeErrnoError;
using base::makeError;
using base::openTrustedPath;
using base::openTrustedPathAt;
using base::parentOf;
using base::Result;
using base::strFormat;
using base::TrustedKind;
using base::TrustedPath;

namespace {

/// The loader's handshake: major equal, minor at least the loader's.
bool abiCompatible(uint32_t major, uint32_t minor, uint32_t wantMajor, uint32_t wantMinor) {
    return major == wantMajor && minor >= wantMinor;
}

/// The `*.so` names in the trusted directory, sorted, listed through its fd.
Result<std::vector<std::string>> libraryNamesIn(const TrustedPath& dir) {
    int fd = openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* listing = fd < 0 ? nullptr : fdopendir(fd);
    if (!listing) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return makeErrnoError(ErrorCode::Loader, err, "cannot list %s", dir.resolved().c_str());
    }
    std::vector<std::string> names;
    while (const dirent* entry = readdir(listing)) {
        std::string_view name = entry->d_name;
        if (name.size() > 3 && name.substr(name.size() - 3) == ".so")
            names.emplace_back(name);
    }
    closedir(listing);
    std::sort(names.begin(), names.end());
    return names;
}

/// `text` (a loader's message) naming `path` where it names `loadedAs` (/proc/self/fd/N).
std::string namingPath(std::string text, const std::string& loadedAs, const std::string& path) {
    for (size_t at = text.find(loadedAs); at != std::string::npos;
         at = text.find(loadedAs, at + path.size()))
        text.replace(at, loadedAs.size(), path);
    return text;
}

} // namespace

struct BackendRegistry::Library {
    boost::dll::shared_library lib;
    const CriuAmdgpuBackendDescriptor* descriptor = nullptr;
    Backend* backend = nullptr;
    ~Library() {
        if (backend && descriptor)
            descriptor->destroy(backend);
    }
};

BackendRegistry::BackendRegistry() : halLibrary_(std::make_unique<HalLibrary>()) {}

BackendRegistry::~BackendRegistry() {
    // Backends are destroyed before their libraries are unloaded (Library's destructor order),
    // and those before the HAL's library they stand on.
    candidates_.clear();
    libraries_.clear();
    halLibrary_.reset();
}

void BackendRegistry::loadHalLibraryFrom(const TrustedPath& dir, const std::string& dirPath) {
    auto loaded = halLibrary_->ensureLoaded(dir, dirPath);
    if (!loaded.ok())
        HAL_LOG_DEBUG("backends of %s that stand on the HAL's library will not load: %s",
                      dirPath.c_str(), loaded.error().describe().c_str());
}

void BackendRegistry::discover(const std::string& dir, const settings::Settings& settings,
                               const HostServices& host) {
    // Every library here runs as root inside criu: a directory someone else may write (or one
    // under such a directory) is refused whole, as one skipped candidate saying why. The
    // directory is listed, and each library checked and loaded, through the fd that was judged.
    auto trusted = openTrustedPath(dir, "backend-dir", TrustedKind::Directory);
    if (!trusted.ok() && trusted.error().sysErrno() == ENOENT) {
        HAL_LOG_DEBUG("no backend directory %s: %s", dir.c_str(),
                      trusted.error().describe().c_str());
        return;
    }
    if (!trusted.ok()) {
        BackendCandidate refused;
        refused.path = dir;
        refused.skipReason = trusted.error().describe();
        HAL_LOG_WARN("no backend is loaded: %s", refused.skipReason.c_str());
        candidates_.push_back(std::move(refused));
        return;
    }
    auto names = libraryNamesIn(*trusted);
    if (!names.ok()) {
        HAL_LOG_DEBUG("cannot list the backend directory %s: %s", dir.c_str(),
                      names.error().describe().c_str());
        return;
    }
    loadHalLibraryFrom(*trusted, dir);
    for (const std::string& name : *names) {
        std::string path = joinPath(dir, name);
        auto library =
            openTrustedPathAt(*trusted, name, path, "backend library", TrustedKind::File);
        if (!library.ok()) {
            skipCandidate(BackendCandidate{path}, library.error().describe());
            continue;
        }
        loadChecked(path, *library, settings, host);
    }
}

void BackendRegistry::loadFile(const std::string& path, const settings::Settings& settings,
                               const HostServices& host) {
    auto trusted = openTrustedPath(path, "backend library", TrustedKind::File);
    if (!trusted.ok())
        return skipCandidate(BackendCandidate{path}, trusted.error().describe());
    const std::string dir = parentOf(path);
    if (auto trustedDir =
            openTrustedPath(dir.empty() ? "." : dir, "backend-dir", TrustedKind::Directory);
        trustedDir.ok())
        loadHalLibraryFrom(*trustedDir, dir);
    loadChecked(path, *trusted, settings, host);
}

void BackendRegistry::skipCandidate(BackendCandidate cand, std::string reason) {
    cand.skipReason = std::move(reason);
    HAL_LOG_DEBUG("backend %s skipped: %s", cand.path.c_str(), cand.skipReason.c_str());
    candidates_.push_back(std::move(cand));
}

void BackendRegistry::loadChecked(const std::string& path, const TrustedPath& checked,
                                  const settings::Settings& settings, const HostServices& host) {
    BackendCandidate cand;
    cand.path = path;
    auto skip = [&](std::string reason) { skipCandidate(cand, std::move(reason)); };

    auto library = std::make_unique<Library>();
    boost::dll::fs::error_code ec;
    // Through the fd that was judged: a name swapped since cannot load something else.
    const std::string loadPath = base::uniqueFdLibraryName(checked);
    library->lib.load(loadPath, ec,
                      boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local);
    if (ec) {
        const char* why = dlerror();
        std::string reason =
            "cannot load: " + namingPath(why ? std::string(why) : ec.message(), loadPath, path);
        if (!halLibrary_->whyNotLoaded().empty())
            reason +=
                " (the HAL's library it stands on was not loaded: " + halLibrary_->whyNotLoaded() +
                ")";
        return skip(std::move(reason));
    }
    if (!library->lib.has(CRIU_AMDGPU_BACKEND_ENTRY_SYMBOL))
        return skip("not a backend: no " CRIU_AMDGPU_BACKEND_ENTRY_SYMBOL " entry point");
    auto entry =
        library->lib.get<const CriuAmdgpuBackendDescriptor*()>(CRIU_AMDGPU_BACKEND_ENTRY_SYMBOL);
    const CriuAmdgpuBackendDescriptor* d = entry();
    if (!d)
        return skip("its entry point returned no descriptor");
    if (!abiCompatible(d->abiMajor, d->abiMinor, CRIU_AMDGPU_BACKEND_ABI_MAJOR,
                       CRIU_AMDGPU_BACKEND_ABI_MINOR))
        return skip(strFormat("backend ABI %u.%u, this plugin needs %u.%u or a later minor",
                              d->abiMajor, d->abiMinor, CRIU_AMDGPU_BACKEND_ABI_MAJOR,
                              CRIU_AMDGPU_BACKEND_ABI_MINOR));
    if (!d->name || !d->create || !d->destroy)
        return skip("its descriptor is incomplete");
    cand.name = d->name;
    for (const BackendCandidate& other : candidates_)
        if (other.loaded && other.name == cand.name)
            return skip("a backend named '" + cand.name + "' was already loaded from " +
                        other.path);
    library->descriptor = d;
    library->backend = d->create(&host);
    if (!library->backend)
        return skip("its create function failed");
    cand.loaded = true;
    cand.backend = library->backend;
    cand.probe = cand.backend->probe(settings);
    HAL_LOG_DEBUG("backend %s (%s): %s%s%s", cand.name.c_str(), path.c_str(),
                  cand.probe.present ? "present" : "not present",
                  cand.probe.reason.empty() ? "" : ": ", cand.probe.reason.c_str());
    libraries_.push_back(std::move(library));
    candidates_.push_back(cand);
}

void BackendRegistry::unloadAllBut(const BackendCandidate* kept) {
    for (BackendCandidate& c : candidates_)
        if (&c != kept && c.loaded) {
            c.loaded = false;
            c.backend = nullptr;
            c.skipReason =
                "unloaded once backend '" + (kept ? kept->name : std::string()) + "' was chosen";
        }
    // Each library's destructor destroys its backend, then unloads it.
    std::erase_if(libraries_, [kept](const std::unique_ptr<Library>& library) {
        return !kept || library->backend != kept->backend;
    });
}

Result<BackendCandidate*> BackendRegistry::select(const settings::Settings& settings,
                                                  const std::string& preferredCapability) {
    auto findNamed = [&](const std::string& name) -> BackendCandidate* {
        for (BackendCandidate& c : candidates_)
            if (c.loaded && c.name == name)
                return &c;
        return nullptr;
    };

    std::vector<std::string> order = settings.backends;
    if (order.size() == 1 && order[0] == "auto")
        order.clear();
    if (!order.empty()) {
        std::string why;
        for (const std::string& name : order) {
            BackendCandidate* c = findNamed(name);
            if (c && c->probe.present)
                return c;
            why += why.empty() ? "" : "; ";
            if (!c)
                why += "backend '" + name + "' was not found among the loaded backends";
            else
                why += "backend '" + name + "' is not present: " + c->probe.reason;
        }
        return makeError(ErrorCode::NotPresent, "the configured backend%s cannot be used: %s",
                         order.size() > 1 ? "s" : "", why.c_str());
    }

    // auto: a configured mock root asks for the mock; otherwise the mock is never chosen.
    if (!settings.mockRoot.empty()) {
        BackendCandidate* mock = findNamed("mock");
        if (!mock)
            return makeError(ErrorCode::NotPresent,
                             "a mock GPU root is configured (%s) but no mock backend was loaded",
                             settings.mockRoot.c_str());
        if (!mock->probe.present)
            return makeError(ErrorCode::NotPresent, "the mock GPU at %s is not usable: %s",
                             settings.mockRoot.c_str(), mock->probe.reason.c_str());
        return mock;
    }
    auto preferred = [&](const BackendCandidate& c) {
        return !preferredCapability.empty() &&
               std::find(c.probe.capabilities.begin(), c.probe.capabilities.end(),
                         preferredCapability) != c.probe.capabilities.end();
    };
    BackendCandidate* best = nullptr;
    for (BackendCandidate& c : candidates_) {
        if (!c.loaded || !c.probe.present || c.name == "mock")
            continue;
        if (!best || std::make_pair(preferred(c), c.probe.priority) >
                         std::make_pair(preferred(*best), best->probe.priority))
            best = &c;
    }
    if (!best)
        return makeError(ErrorCode::NotPresent, "no AMD GPU backend is present on this machine");
    return best;
}

std::string directoryOfThisModule() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&directoryOfThisModule), &info) == 0 || !info.dli_fname)
        return {};
    char* resolved = realpath(info.dli_fname, nullptr);
    if (!resolved)
        return parentOf(info.dli_fname);
    std::string dir = parentOf(resolved);
    free(resolved);
    return dir;
}

std::string defaultBackendDir(const settings::Settings& settings, const std::string& pluginDir) {
    if (!settings.backendDir.empty())
        return settings.backendDir;
    return joinPath(pluginDir, "amdgpu");
}

} // namespace hal

// yamlDocumentOf in the plugin's core: amdgpu_yaml.so, in the core's own directory, loaded at the
// first YAML file and kept (yaml_tree.h says why). Judged as a backend library is (root's, or the
// caller's, and writable by no one else, every directory above it too: base/trusted_path.h) and
// loaded through the fd that was judged, so a file swapped in after the check is never loaded.
// Linked into the core as an object, so the archive member of config/yaml/ that defines the same
// function (and needs yaml-cpp) is never pulled in.
#include "yaml_module.h"

#include "base/library_name.h"
#include "base/path_text.h"
#include "base/trusted_path.h"

#include <dlfcn.h>
#include <mutex>

namespace config {
namespace {

struct LoadedEntry {
    CriuAmdgpuYamlEntry entry = nullptr;
    std::string error;
};

std::string directoryOfThisModule() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&directoryOfThisModule), &info) == 0 || !info.dli_fname)
        return ".";
    std::string dir = base::parentOf(info.dli_fname);
    return dir.empty() ? std::string(".") : dir;
}

LoadedEntry load() {
    LoadedEntry loaded;
    std::string path = base::joinPath(directoryOfThisModule(), CRIU_AMDGPU_YAML_MODULE);
    auto trusted = base::openTrustedPath(path, "yaml module", base::TrustedKind::File);
    if (!trusted.ok()) {
        loaded.error = trusted.error().describe();
        return loaded;
    }
    // Never closed, and its fd kept open with it: loaded once per process, only where a YAML
    // file is read. Loaded under a name no earlier load used (base/library_name.h, as the
    // registry loads backends): the loader hands back an object already loaded under the name
    // asked for.
    static base::TrustedPath module;
    module = std::move(trusted).value();
    void* handle = dlopen(base::uniqueFdLibraryName(module).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        loaded.error = "cannot load " + path + (why ? std::string(": ") + why : std::string());
        return loaded;
    }
    loaded.entry =
        reinterpret_cast<CriuAmdgpuYamlEntry>(dlsym(handle, CRIU_AMDGPU_YAML_ENTRY_NAME));
    if (!loaded.entry)
        loaded.error = path + " has no " CRIU_AMDGPU_YAML_ENTRY_NAME;
    return loaded;
}

} // namespace

base::Result<YamlDocument> yamlDocumentOf(const std::string& text, const std::string& fileName) {
    static std::once_flag once;
    static LoadedEntry loaded;
    std::call_once(once, [] { loaded = load(); });
    if (!loaded.entry)
        return base::makeError(base::ErrorCode::Config, "%s: cannot read YAML: %s",
                               fileName.c_str(), loaded.error.c_str());
    base::Result<YamlDocument> out =
        base::makeError(base::ErrorCode::Config, "%s: not read", fileName.c_str());
    loaded.entry(&text, &fileName, &out);
    return out;
}

} // namespace config

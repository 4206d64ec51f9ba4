#include "criu_abi.h"

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <optional>
#include <regex>
#include <set>

namespace frontend {
namespace {

/// Parses "4.1.1" into major/minor; false when it is not a version.
bool parseVersion(const std::string& text, int* major, int* minor) {
    char* end = nullptr;
    long maj = strtol(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '.')
        return false;
    const char* rest = end + 1;
    long min = strtol(rest, &end, 10);
    if (end == rest)
        return false;
    *major = static_cast<int>(maj);
    *minor = static_cast<int>(min);
    return true;
}

CriuAbi fromRelease(const std::string& release) {
    CriuAbi abi;
    abi.release = release;
    int major = 0, minor = 0;
    if (release == "dev" || !parseVersion(release, &major, &minor) || major > 4 ||
        (major == 4 && minor > 2)) {
        abi.release = release == "dev" ? "dev" : release;
        abi.maxHooks = 15;
        abi.retryNeeded = true;
        abi.inventory = true;
        return abi;
    }
    if (major < 4) {
        abi.maxHooks = 10;
    } else if (minor <= 1) {
        abi.maxHooks = 12;
        abi.inventory = minor >= 1;
    } else {
        abi.maxHooks = 13;
        abi.inventory = true;
    }
    return abi;
}

/// The ABI a forced value names: a hook count 10..15, "dev" or a release "N.N[.N]"; nullopt for
/// anything else (config::parseCriuAbi rejects such values, so they come only from callers that
/// bypass it).
std::optional<CriuAbi> forcedAbi(const std::string& forced) {
    static const std::regex kRelease("[0-9]+\\.[0-9]+(\\.[0-9]+)?");
    static const std::regex kHookCount("[0-9]+");
    if (std::regex_match(forced, kHookCount)) {
        unsigned long hooks = strtoul(forced.c_str(), nullptr, 10);
        if (hooks < 10 || hooks > kHookSlots)
            return std::nullopt;
        CriuAbi abi =
            fromRelease(hooks >= 15 ? "dev" : hooks == 13 ? "4.2" : hooks >= 11 ? "4.1" : "3.17");
        abi.maxHooks = static_cast<unsigned>(hooks);
        return abi;
    }
    if (forced == "dev" || std::regex_match(forced, kRelease))
        return fromRelease(forced);
    return std::nullopt;
}

} // namespace

CriuAbi detectCriuAbi(const CriuProbe& probe) {
    auto has = [&](const char* s) { return probe.hasSymbol && probe.hasSymbol(s); };
    CriuAbi abi;
    std::string ignored;
    if (!probe.forced.empty()) {
        // An unrecognised value must not fall through to the development ABI: 15 hooks make every
        // released criu reject the plugin, and retry_needed would be written through garbage.
        if (std::optional<CriuAbi> forced = forcedAbi(probe.forced)) {
            abi = *forced;
            // Forcing chooses the hooks; the inventory is usable only if criu exports it.
            abi.inventory = abi.inventory && has("add_inventory_plugin") &&
                            has("check_and_remove_inventory_plugin");
            abi.pluginOptions = has("criu_plugin_get_options");
            abi.how = "forced by configuration (" + probe.forced + ")";
            return abi;
        }
        ignored = ", unrecognised forced value '" + probe.forced + "' ignored";
    }
    std::string version = probe.versionString ? probe.versionString() : "";
    int major = 0, minor = 0;
    if (parseVersion(version, &major, &minor)) {
        abi = fromRelease(version);
        abi.how = "criu version " + version;
    } else {
        abi = fromRelease("3.17");
        abi.how = "criu version unknown";
    }
    abi.how += ignored;
    std::string gitId = probe.gitId ? probe.gitId() : "";
    int gitMajor = 0, gitMinor = 0;
    size_t dash = gitId.find('-');
    if (abi.maxHooks < 15 && dash != std::string::npos &&
        parseVersion(gitId.substr(1, dash - 1), &gitMajor, &gitMinor) &&
        (gitMajor > 4 || (gitMajor == 4 && gitMinor >= 2))) {
        std::string how = std::move(abi.how);
        abi = fromRelease("dev");
        abi.how = how + ", built from git after v" + gitId.substr(1, dash - 1) + " (" + gitId +
                  "): development branch";
    }
    if (has("criu_plugin_get_options") && abi.maxHooks < 15) {
        std::string how = std::move(abi.how);
        abi = fromRelease("dev");
        abi.how = how + ", criu_plugin_get_options exported (development branch)";
    }
    if (has("add_inventory_plugin") && abi.maxHooks < 12) {
        std::string how = std::move(abi.how);
        abi = fromRelease("4.1");
        abi.how = how + ", add_inventory_plugin exported (4.1 or later)";
    }
    abi.inventory = abi.inventory && has("add_inventory_plugin") &&
                    has("check_and_remove_inventory_plugin");
    abi.pluginOptions = has("criu_plugin_get_options");
    return abi;
}

namespace {

/// The one NUL-delimited string of `bytes` (preceded by a NUL) of length 3..maxLen matching
/// `pattern`; "" when none or several different ones.
std::string findLoneString(const std::string& bytes, const std::regex& pattern, size_t maxLen) {
    std::set<std::string> found;
    size_t start = 0;
    while (start < bytes.size()) {
        size_t end = bytes.find('\0', start);
        if (end == std::string::npos)
            end = bytes.size();
        size_t len = end - start;
        if (len >= 3 && len <= maxLen && start > 0 && bytes[start - 1] == '\0') {
            std::string s = bytes.substr(start, len);
            if (std::regex_match(s, pattern))
                found.insert(s);
        }
        start = end + 1;
    }
    return found.size() == 1 ? *found.begin() : std::string();
}

std::string readCriuExecutable() {
    void* criuFunction = dlsym(RTLD_DEFAULT, "cr_plugin_init");
    Dl_info info;
    if (!criuFunction || !dladdr(criuFunction, &info) || !info.dli_fname || !*info.dli_fname)
        return {};
    std::string path = info.dli_fname;
    if (path.find('/') == std::string::npos)
        path = "/proc/self/exe";
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return {};
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

} // namespace

std::string findGitDescribe(const std::string& bytes) {
    static const std::regex kDescribe("^v[0-9]{1,2}\\.[0-9]{1,3}(\\.[0-9]{1,3})?-[0-9]+-g[0-9a-f]{7,40}$");
    return findLoneString(bytes, kDescribe, 64);
}

std::string findVersionString(const std::string& bytes) {
    static const std::regex kVersion("^[0-9]{1,2}\\.[0-9]{1,3}(\\.[0-9]{1,3})?$");
    return findLoneString(bytes, kVersion, 11);
}

CriuProbe runningCriuProbe() {
    CriuProbe probe;
    probe.hasSymbol = [](const char* s) { return dlsym(RTLD_DEFAULT, s) != nullptr; };
    // Read once at dlopen, by the constructor: the version and the git id come from one read.
    auto bytes = std::make_shared<std::optional<std::string>>();
    auto executable = [bytes]() -> const std::string& {
        if (!*bytes)
            *bytes = readCriuExecutable();
        return **bytes;
    };
    probe.versionString = [executable] { return findVersionString(executable()); };
    probe.gitId = [executable] { return findGitDescribe(executable()); };
    return probe;
}

} // namespace frontend

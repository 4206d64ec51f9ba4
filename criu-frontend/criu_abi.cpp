#include "criu_abi.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <optional>
#include <string_view>

namespace frontend {
namespace {

/// The ABI of a criu whose CR_PLUGIN_HOOK__MAX is `hooks`.
CriuAbi fromHookCount(unsigned hooks) {
    CriuAbi abi;
    abi.maxHooks = hooks < kHookSlots ? hooks : static_cast<unsigned>(kHookSlots);
    abi.retryNeeded = hooks >= 14; // "files-ext: Allow plugin files to retry" came with hook 13/14
    if (hooks < 10)
        abi.release = "before 3.17";
    else if (hooks == 10)
        abi.release = "3.17-3.19";
    else if (hooks <= 12)
        abi.release = "4.0-4.1";
    else if (hooks == 13)
        abi.release = "4.2";
    else if (hooks < 17)
        abi.release = "development branch between 4.2 and 4.3";
    else if (hooks == 17)
        abi.release = "4.3";
    else
        abi.release = "after 4.3";
    return abi;
}

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

bool digitsOnly(std::string_view text) {
    for (char c : text)
        if (c < '0' || c > '9')
            return false;
    return true;
}

/// "N.N" or "N.N.N", each N one or more digits. (std::regex did this: its code was 83 KB of
/// the core, mapped into every criu run.)
bool isRelease(std::string_view text) {
    size_t parts = 0;
    while (true) {
        size_t dot = text.find('.');
        std::string_view part = text.substr(0, dot);
        if (part.empty() || !digitsOnly(part))
            return false;
        ++parts;
        if (dot == std::string_view::npos)
            break;
        text.remove_prefix(dot + 1);
    }
    return parts == 2 || parts == 3;
}

/// The ABI a forced value names: a hook count, "dev" (the newest ABI known) or a release
/// "N.N[.N]"; nullopt for anything else (config::parseCriuAbi rejects such values, so they come
/// only from callers that bypass it).
std::optional<CriuAbi> forcedAbi(const std::string& forced) {
    if (!forced.empty() && forced.size() <= 3 && digitsOnly(forced)) {
        unsigned long hooks = strtoul(forced.c_str(), nullptr, 10);
        if (hooks < 10 || hooks > kHookSlots)
            return std::nullopt;
        return fromHookCount(static_cast<unsigned>(hooks));
    }
    if (forced == "dev")
        return fromHookCount(kHookSlots);
    int major = 0, minor = 0;
    if (!isRelease(forced) || !parseVersion(forced, &major, &minor))
        return std::nullopt;
    if (major < 4)
        return fromHookCount(10);
    if (major == 4 && minor <= 1)
        return fromHookCount(12);
    if (major == 4 && minor == 2)
        return fromHookCount(13);
    return fromHookCount(kHookSlots);
}

} // namespace

unsigned hookCountOfTableSize(uint64_t bytes) {
    constexpr uint64_t kListHead = 2 * sizeof(void*);
    if (bytes < 2 * kListHead || bytes % kListHead != 0 || bytes > 256 * kListHead)
        return 0;
    return static_cast<unsigned>(bytes / kListHead - 1);
}

CriuAbi detectCriuAbi(const CriuProbe& probe) {
    auto has = [&](const char* s) { return probe.hasSymbol && probe.hasSymbol(s); };
    unsigned tableHooks = probe.hookTableSize ? probe.hookTableSize() : 0;
    std::string table = tableHooks
                            ? "criu's hook table holds " + std::to_string(tableHooks) + " hooks"
                            : "criu's hook table (cr_plugin_ctl) not found";
    CriuAbi abi;
    std::optional<CriuAbi> forced;
    if (!probe.forced.empty())
        forced = forcedAbi(probe.forced);
    if (forced) {
        abi = *forced;
        abi.how = "forced by configuration (" + probe.forced + "); " + table;
        if (tableHooks && abi.maxHooks > tableHooks) {
            // More hooks than criu has would make criu refuse the plugin and abort every run.
            abi.maxHooks = tableHooks;
            abi.how += ", so the plugin declares " + std::to_string(tableHooks);
        }
    } else if (tableHooks) {
        abi = fromHookCount(tableHooks);
        abi.how = table;
    } else {
        abi = fromHookCount(10);
        abi.how = table + ": assuming the 3.17 ABI, which every criu accepts";
    }
    if (!probe.forced.empty() && !forced)
        abi.how += "; unrecognised forced value '" + probe.forced + "' ignored";
    abi.inventory = has("add_inventory_plugin") && has("check_and_remove_inventory_plugin");
    abi.pluginOptions = has("criu_plugin_get_options");
    return abi;
}

CriuProbe runningCriuProbe() {
    CriuProbe probe;
    probe.hasSymbol = [](const char* s) { return dlsym(RTLD_DEFAULT, s) != nullptr; };
    probe.hookTableSize = [] {
        void* table = dlsym(RTLD_DEFAULT, "cr_plugin_ctl");
        Dl_info info;
        void* entry = nullptr; // a const ElfW(Sym)*
        if (!table || !dladdr1(table, &info, &entry, RTLD_DL_SYMENT) || !entry ||
            info.dli_saddr != table)
            return 0u;
        const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
        if (ELF64_ST_TYPE(symbol->st_info) != STT_OBJECT)
            return 0u;
        return hookCountOfTableSize(symbol->st_size);
    };
    return probe;
}

} // namespace frontend

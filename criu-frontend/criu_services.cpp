#include "criu_services.h"

#include "base/small_file.h"

#include <dlfcn.h>

#include <atomic>
#include <iterator>
#include <mutex>
#include <string_view>

namespace frontend {
namespace {

void (*gPrintOnLevel)(unsigned level, const char* fmt, ...) = nullptr;

std::atomic<base::LogSink> gRedirect{nullptr}; ///< redirectCriuLogSink

void criuSink(base::LogLevel level, const char* line) {
    if (base::LogSink other = gRedirect.load()) {
        other(level, line);
        return;
    }
    if (!gPrintOnLevel)
        return;
    // Lanes of several GPUs (and the parallel-restore worker) log from threads of their own;
    // criu formats every line in one static buffer.
    static std::mutex mu;
    std::lock_guard lock(mu);
    // criu's own errors and warnings read "Error (file:line): ..." and "Warn (file:line): ...";
    // print_on_level adds no such tag, so the plugin adds it to its lines of those levels.
    const char* tag = level == base::LogLevel::Error  ? "Error (amdgpu): "
                      : level == base::LogLevel::Warn ? "Warn (amdgpu): "
                                                      : "";
    std::string_view text = line;
    if (*tag && text.substr(0, 8) == "amdgpu: ")
        text.remove_prefix(8);
    gPrintOnLevel(static_cast<unsigned>(level), "%s%.*s\n", tag, static_cast<int>(text.size()),
                  text.data());
}

template <typename Fn> void lookUp(Fn*& out, const char* name) {
    out = reinterpret_cast<Fn*>(dlsym(RTLD_DEFAULT, name));
}

} // namespace

CriuServices CriuServices::lookUp() {
    CriuServices s;
    frontend::lookUp(s.getImageDir, "criu_get_image_dir");
    frontend::lookUp(s.printOnLevel, "print_on_level");
    frontend::lookUp(s.addInventoryPlugin, "add_inventory_plugin");
    frontend::lookUp(s.checkAndRemoveInventoryPlugin, "check_and_remove_inventory_plugin");
    frontend::lookUp(s.getPluginOptions, "criu_plugin_get_options");
    frontend::lookUp(s.imgStreamerOpen, "img_streamer_open");
    frontend::lookUp(s.fdstoreAdd, "fdstore_add");
    frontend::lookUp(s.fdstoreGet, "fdstore_get");
    frontend::lookUp(s.findUnusedFdPid, "find_unused_fd_pid");
    s.options = static_cast<const int*>(dlsym(RTLD_DEFAULT, "opts"));
    s.commandLine = base::readSmallFile("/proc/self/cmdline", 1 << 20).value_or("");
    return s;
}

bool CriuServices::streams() const {
    for (size_t at = 0; at < commandLine.size();) {
        size_t end = commandLine.find('\0', at);
        if (end == std::string::npos)
            end = commandLine.size();
        std::string_view arg(commandLine.data() + at, end - at);
        if (arg == "--")
            return false; // what follows is not criu's options
        if (arg == "--stream")
            return true;
        at = end + 1;
    }
    return false;
}

std::vector<std::string> CriuServices::pluginOptions() const {
    std::vector<std::string> out;
    if (!getPluginOptions)
        return out;
    int argc = 0;
    char** argv = nullptr;
    if (getPluginOptions(&argc, &argv) != 0 || !argv)
        return out;
    for (int i = 0; i < argc; ++i) {
        if (!argv[i])
            break;
        bool programName = i == 0 && std::string_view(argv[i]).substr(0, 2) != "--";
        if (!programName)
            out.emplace_back(argv[i]);
    }
    return out;
}

void redirectCriuLogSink(base::LogSink sink) {
    gRedirect.store(sink);
}

base::LogSink installCriuLogSink(const CriuServices& services) {
    if (!services.printOnLevel)
        return nullptr;
    gPrintOnLevel = services.printOnLevel;
    base::setLogSink(&criuSink);
    base::setLogThreshold(base::LogLevel::Debug); // criu filters by its own -v level
    return &criuSink;
}

} // namespace frontend

#include "criu_services.h"

#include <dlfcn.h>

namespace frontend {
namespace {

void (*gPrintOnLevel)(unsigned level, const char* fmt, ...) = nullptr;

void criuSink(hal::LogLevel level, const char* line) {
    if (gPrintOnLevel)
        gPrintOnLevel(static_cast<unsigned>(level), "%s\n", line);
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
    return s;
}

std::vector<std::string> CriuServices::pluginOptions() const {
    std::vector<std::string> out;
    if (!getPluginOptions)
        return out;
    int argc = 0;
    char** argv = nullptr;
    if (getPluginOptions(&argc, &argv) != 0 || !argv)
        return out;
    for (int i = 0; i < argc; ++i)
        if (argv[i])
            out.emplace_back(argv[i]);
    return out;
}

hal::LogSink installCriuLogSink(const CriuServices& services) {
    if (!services.printOnLevel)
        return nullptr;
    gPrintOnLevel = services.printOnLevel;
    hal::setLogSink(&criuSink);
    hal::setLogThreshold(hal::LogLevel::Debug); // criu filters by its own -v level
    return &criuSink;
}

} // namespace frontend

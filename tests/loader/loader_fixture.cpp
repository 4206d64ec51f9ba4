#include "loader_fixture.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>

namespace loadertest {

std::string builtModuleDir() {
    return CRIU_AMDGPU_LOADER_TEST_BACKEND_DIR;
}

std::string builtModule(const std::string& fileName) {
    return builtModuleDir() + "/" + fileName + ".so";
}

ScenarioDir::ScenarioDir(std::initializer_list<const char*> modules) {
    for (const char* m : modules)
        link(m);
}

void ScenarioDir::link(const std::string& name, const std::string& as) {
    std::string target = builtModule(name);
    if (!std::filesystem::exists(target))
        ADD_FAILURE() << "test backend " << target << " was not built";
    std::filesystem::create_symlink(target, dir_ / (as.empty() ? name + ".so" : as));
}

void ScenarioDir::write(const std::string& fileName, const std::string& contents) {
    testsupport::writeFile(dir_ / fileName, contents);
}

const hal::BackendCandidate* candidateFile(const hal::BackendRegistry& registry,
                                           const std::string& fileName) {
    for (const hal::BackendCandidate& c : registry.candidates())
        if (std::filesystem::path(c.path).filename() == fileName)
            return &c;
    return nullptr;
}

std::vector<std::pair<base::LogLevel, std::string>>& capturedLog() {
    static std::vector<std::pair<base::LogLevel, std::string>> lines;
    return lines;
}

void captureSink(base::LogLevel level, const char* line) {
    capturedLog().emplace_back(level, line);
}

bool logContains(const std::string& text) {
    for (const auto& [level, line] : capturedLog())
        if (line.find(text) != std::string::npos)
            return true;
    return false;
}

bool isLoaded(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (handle)
        dlclose(handle);
    return handle != nullptr;
}

} // namespace loadertest

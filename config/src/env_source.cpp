#include "config/sources.h"
#include "config/suggestions.h"

namespace config {
namespace {

constexpr std::string_view kEnvPrefix = "CRIU_AMDGPU_";

} // namespace

base::Result<std::vector<Assignment>> readEnvironment(const Environment& env) {
    for (const auto& [name, value] : env) {
        if (name.compare(0, kEnvPrefix.size(), kEnvPrefix) == 0 && !findOptionByEnvName(name))
            return base::makeError(
                base::ErrorCode::Config, "env %s: %s", name.c_str(),
                unknownNameMessage("environment variable", name, optionEnvNames()).c_str());
    }
    std::vector<Assignment> assignments;
    for (const OptionSpec& spec : optionTable()) {
        auto legacy = spec.legacyEnv.empty() ? env.end() : env.find(std::string(spec.legacyEnv));
        auto current = env.find(std::string(spec.envName));
        if (legacy != env.end()) {
            HAL_TRY_ASSIGN(auto a, assignmentFromText(spec, SourceKind::Env, legacy->second,
                                                      "env " + legacy->first));
            assignments.push_back(std::move(a));
        }
        if (current != env.end()) {
            std::string origin = "env " + current->first;
            if (legacy != env.end())
                origin += " (overrides " + legacy->first + ")";
            HAL_TRY_ASSIGN(auto a,
                           assignmentFromText(spec, SourceKind::Env, current->second, origin));
            assignments.push_back(std::move(a));
        }
    }
    return assignments;
}

} // namespace config

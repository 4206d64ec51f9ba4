// The environment (config::readEnvironment): one NAME=VALUE per line.
#include "config_samples.h"
#include "fuzz_support.h"
#include "fuzz_target.h"

#include "config/sources.h"

void fuzzOne(std::string_view input) {
    config::Environment env;
    for (std::string_view line : fuzzsupport::splitLines(input))
        if (size_t eq = line.find('='); eq != std::string_view::npos)
            env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    (void)config::readEnvironment(env);
}

std::vector<std::string> fuzzSeeds() {
    std::string modern, legacy;
    for (const auto& [spec, value] : fuzzsupport::sampleAssignments()) {
        if (!spec->allows(config::SourceKind::Env))
            continue;
        modern += std::string(spec->envName) + "=" + value + "\n";
        if (!spec->legacyEnv.empty())
            legacy += std::string(spec->legacyEnv) + "=" + value + "\n";
    }
    return {modern, legacy, legacy + modern, "CRIU_AMDGPU_NUMA_CHEK=1\nPATH=/bin\n"};
}

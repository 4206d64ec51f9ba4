// criu's plugin options (config::readPluginOptions): one option per line.
#include "config_samples.h"
#include "fuzz_support.h"
#include "fuzz_target.h"

#include "config/sources.h"

void fuzzOne(std::string_view input) {
    std::vector<std::string> argv;
    for (std::string_view line : fuzzsupport::splitLines(input))
        argv.emplace_back(line);
    (void)config::readPluginOptions(argv);
}

std::vector<std::string> fuzzSeeds() {
    std::string dotted, colon;
    for (const auto& [spec, value] : fuzzsupport::sampleAssignments()) {
        if (!spec->allows(config::SourceKind::PluginOption))
            continue;
        dotted += "amdgpu." + std::string(spec->name) + "=" + value + "\n";
        colon += "--amdgpu_plugin:" + std::string(spec->name) + "=" + value + "\n";
    }
    return {dotted, colon, "amdgpu.force-single-gpu-restore\ncuda.x=1", "numa-check=0"};
}

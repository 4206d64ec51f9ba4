// The options file in criu's config-file syntax (config::parseOptionsText).
#include "config_samples.h"
#include "fuzz_target.h"

#include "config/sources.h"

void fuzzOne(std::string_view input) {
    (void)config::parseOptionsText(std::string(input), "amdgpu.conf");
}

std::vector<std::string> fuzzSeeds() {
    std::string all = "# every option\n";
    std::string quoted;
    for (const auto& [spec, value] : fuzzsupport::sampleAssignments()) {
        if (!spec->allows(config::SourceKind::OptionsFile))
            continue;
        all += "plugin-opt amdgpu:" + std::string(spec->name) + "=" + value + "\n";
        quoted += "--plugin-option \"amdgpu." + std::string(spec->name) + "=" + value + "\"\n";
    }
    return {all, quoted, "plugin-opt amdgpu:numa-check # a bare bool\nplugin-opt other:x=1\n\n",
            "--plugin-opt='amdgpu:device-map=0x1=0x2'\n", "tcp-established\n"};
}

// The YAML configuration file (config::parseYamlText).
#include "config_samples.h"
#include "fuzz_target.h"

#include "config/sources.h"

void fuzzOne(std::string_view input) {
    (void)config::parseYamlText(std::string(input), "amdgpu.yaml");
}

std::vector<std::string> fuzzSeeds() {
    std::string all;
    for (const auto& [spec, value] : fuzzsupport::sampleAssignments())
        if (spec->allows(config::SourceKind::Yaml))
            all += std::string(spec->yamlKey) + ": \"" + value + "\"\n";
    return {
        all,
        "# comment\nnuma_check: false\nbackends:\n  - kfd\n  - amdgpu-drm\n",
        "device_map:\n  - 0x1234=0x5678\n  - {src: 0x2222, dst: renderD130}\n",
        "device_map:\n  0x1234: 0x5678\n  4660: renderD128\n",
        "device_map: [\"0x1=0x2\", {src: 3, dst: 4}]\nbackends: [kfd]\n",
        "---\nstaging_buffer_size: 64M\n...\n",
        "a: &x [1, 2]\nb: *x\n",
        "",
    };
}

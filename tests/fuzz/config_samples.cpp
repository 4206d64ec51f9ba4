#include "config_samples.h"

namespace fuzzsupport {

std::vector<std::string> sampleValues(config::OptionType type) {
    using config::OptionType;
    switch (type) {
    case OptionType::Bool:
        return {"true", "0", "Off"};
    case OptionType::Size:
        return {"512M", "0x1000", "2GiB", "4096"};
    case OptionType::Path:
        return {"/etc/criu/amdgpu.yaml", ""};
    case OptionType::BackendList:
        return {"kfd,amdgpu-drm", "auto", "mock"};
    case OptionType::DeviceMap:
        return {"0x1234=0x5678,0x2222->renderD130", "", "4660=22136"};
    case OptionType::LogLevel:
        return {"debug", "3"};
    case OptionType::CriuAbi:
        return {"4.2", "dev", "14", "3.17.1", ""};
    case OptionType::Compression:
        return {"zstd:9", "lz4", "none", "zstd"};
    case OptionType::Cipher:
        return {"aes-256-gcm", "chacha20-poly1305", "none"};
    }
    return {""};
}

std::vector<std::pair<const config::OptionSpec*, std::string>> sampleAssignments() {
    std::vector<std::pair<const config::OptionSpec*, std::string>> out;
    for (const config::OptionSpec& spec : config::optionTable())
        out.emplace_back(&spec, sampleValues(spec.type).front());
    return out;
}

} // namespace fuzzsupport

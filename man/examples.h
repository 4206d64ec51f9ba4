#pragma once
/// \file
/// The configuration examples of criu-amdgpu-options(5). They are data, not prose, so that a test
/// can load every form shown (environment, YAML file, options file, plugin option) through the
/// plugin's own configuration loader and check that it sets what the page says it sets.

#include <map>
#include <string>
#include <vector>

namespace man {

/// One example: a situation, the option that handles it, and each way of setting it.
struct ConfigExample {
    std::string title;                      ///< subsection heading
    std::string text;                       ///< what the situation is and what the option does
    std::map<std::string, std::string> env; ///< variables set in criu's environment
    std::string yaml;                       ///< /etc/criu/amdgpu.yaml contents
    std::string optionsFile;                ///< /etc/criu/amdgpu.conf contents
    std::string pluginOption;               ///< criu --plugin-option argument (criu 4.3 on)
    std::string after;                      ///< closing remarks, or empty
    std::string option;                     ///< the option all forms set
    std::string value;                      ///< its value as `criu-amdgpu config show` prints it
};

/// The examples, in page order.
std::vector<ConfigExample> configExamples();

} // namespace man

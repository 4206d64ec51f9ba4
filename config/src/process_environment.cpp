#include "config/config.h"
#include "config/sources.h"

#include <cstring>

extern char** environ;

namespace config {

Environment processEnvironment() {
    Environment env;
    for (char** entry = environ; entry && *entry; ++entry) {
        const char* text = *entry;
        if (strncmp(text, "CRIU_AMDGPU_", 12) != 0 && strncmp(text, "KFD_", 4) != 0)
            continue;
        const char* eq = strchr(text, '=');
        if (!eq)
            continue;
        env.emplace(std::string(text, eq), std::string(eq + 1));
    }
    return env;
}

Sources Sources::fromProcessEnvironment() {
    Sources sources;
    sources.env = processEnvironment();
    return sources;
}

} // namespace config

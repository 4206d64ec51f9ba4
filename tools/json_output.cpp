#include "json_output.h"

#include <cstdio>

namespace tools {

void printJson(const nlohmann::ordered_json& value) {
    std::string text = value.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
    printf("%s\n", text.c_str());
}

} // namespace tools

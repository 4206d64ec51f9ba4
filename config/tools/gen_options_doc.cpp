// Writes the options documentation generated from the option table to the file named by argv[1]
// (docs/options.md), or to stdout without an argument.
#include "config/config.h"

#include <cstdio>

int main(int argc, char** argv) {
    std::string text = config::optionsMarkdown();
    FILE* out = argc > 1 ? fopen(argv[1], "w") : stdout;
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    bool ok = fwrite(text.data(), 1, text.size(), out) == text.size();
    if (out != stdout)
        ok = fclose(out) == 0 && ok;
    return ok ? 0 : 1;
}

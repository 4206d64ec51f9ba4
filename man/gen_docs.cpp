// Writes the generated documentation that ships (pages.h). Run by the build:
//   gen_docs options-page OUT VERSION PLUGIN_DIR DOC_DIR
//   gen_docs tool-page OUT VERSION PLUGIN_DIR DOC_DIR TOOL
//   gen_docs workload-page OUT VERSION PLUGIN_DIR DOC_DIR WORKLOAD
//   gen_docs example-yaml OUT
// The tool and workload pages take their help texts from the built programs.
#include "pages.h"

#include <cstdio>
#include <string>

namespace {

// A word for the shell, in single quotes.
std::string shellQuote(const std::string& word) {
    std::string out = "'";
    for (char c : word)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// The standard output of PROGRAM ARGS, run with no configuration files; false when it fails.
bool helpOf(const std::string& program, const std::string& args, std::string* out) {
    std::string command =
        "env CRIU_AMDGPU_CONFIG= CRIU_AMDGPU_OPTIONS_FILE= " + shellQuote(program) + " " + args;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
        perror("popen");
        return false;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
        out->append(buf, n);
    if (pclose(pipe) != 0) {
        fprintf(stderr, "gen_docs: '%s' failed\n", command.c_str());
        return false;
    }
    return true;
}

bool write(const char* path, const std::string& text) {
    FILE* f = fopen(path, "w");
    if (!f) {
        perror(path);
        return false;
    }
    bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = fclose(f) == 0 && ok;
    if (!ok)
        fprintf(stderr, "gen_docs: cannot write %s\n", path);
    return ok;
}

int usage() {
    fprintf(stderr, "usage: gen_docs options-page|tool-page|workload-page OUT VERSION "
                    "PLUGIN_DIR DOC_DIR [PROGRAM]\n       gen_docs example-yaml OUT\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3)
        return usage();
    std::string what = argv[1];
    if (what == "example-yaml")
        return write(argv[2], man::exampleYaml()) ? 0 : 1;
    if (argc < 6)
        return usage();
    man::Layout layout{argv[3], argv[4], argv[5]};
    if (what == "options-page")
        return write(argv[2], man::optionsPage(layout)) ? 0 : 1;
    if (argc != 7)
        return usage();
    std::string program = argv[6];
    std::string help;
    if (what == "workload-page")
        return helpOf(program, "--help", &help) && write(argv[2], man::workloadPage(layout, help))
                   ? 0
                   : 1;
    if (what != "tool-page")
        return usage();
    if (!helpOf(program, "--help", &help))
        return 1;
    std::vector<man::ToolCommand> commands = man::commandsOfUsage(help);
    if (commands.empty()) {
        fprintf(stderr, "gen_docs: no command list ('commands:') in the output of '%s --help'\n",
                program.c_str());
        return 1;
    }
    for (man::ToolCommand& command : commands)
        if (!helpOf(program, shellQuote(command.name) + " --help", &command.help))
            return 1;
    return write(argv[2], man::toolPage(layout, commands)) ? 0 : 1;
}

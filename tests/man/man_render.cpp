#include "man_render.h"

#include "run_tool.h"
#include "temp_dir.h"

namespace mantest {
namespace {

void replaceAll(std::string& text, const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
}

// man with lintian's locale and options, found through PATH.
tooltest::RunResult runMan(const std::string& width, const std::vector<std::string>& args) {
    tooltest::Env env =
        tooltest::cleanEnv({{"LC_ALL", "C.UTF-8"}, {"MANWIDTH", width}, {"MANROFFSEQ", ""}});
    std::vector<std::string> argv{"man"};
    argv.insert(argv.end(), args.begin(), args.end());
    return tooltest::runProgram("/usr/bin/env", argv, env);
}

} // namespace

std::string builtPage(const std::string& name) {
    return std::string(CRIU_AMDGPU_DOCS_DIR) + "/" + name;
}

std::string asRendered(std::string text) {
    std::erase(text, '`');
    std::string out;
    for (char c : text) {
        if (c == '\n' || c == '\t')
            c = ' ';
        if (c == ' ' && !out.empty() && out.back() == ' ')
            continue;
        out += c;
    }
    return out;
}

Rendering render(const std::string& pagePath) {
    Rendering r;
    // The plain rendering (man-db leaves out bold and italics when stdout is no terminal), on
    // lines so wide that no paragraph wraps.
    tooltest::RunResult plain = runMan("5000", {"-E", "UTF-8", "-l", pagePath});
    // Lintian's check (lintian-explain-tags groff-message).
    tooltest::RunResult checked =
        runMan("80", {"--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", pagePath});
    r.ok = plain.exitCode == 0 && checked.exitCode == 0;
    r.warnings = r.ok ? checked.err : plain.describe() + checked.describe();
    std::string text = plain.out;
    for (const char* dash : {"\u2010", "\u2011", "\u2012", "\u2013", "\u2212"})
        replaceAll(text, dash, "-");
    for (const char* q : {"\u2018", "\u2019"})
        replaceAll(text, q, "'");
    for (const char* q : {"\u201c", "\u201d"})
        replaceAll(text, q, "\"");
    r.text = asRendered(text);
    return r;
}

} // namespace mantest

#include "upstream_tool.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace compat {

ToolRun runUpstream(const std::vector<std::string>& args) {
    ToolRun run;
    const char* tool = getenv("CRIU_AMDGPU_UPSTREAM_IMAGES");
    if (!tool || access(tool, X_OK) != 0) {
        ADD_FAILURE() << "no reference tool: CRIU_AMDGPU_UPSTREAM_IMAGES is "
                      << (tool ? tool : "unset")
                      << " (CTest sets it after compat.<suite>.prepare built it from Debian's "
                         "criu source)";
        return run;
    }
    std::string command = std::string("'") + tool + "'";
    for (const std::string& a : args)
        command += " '" + a + "'";
    command += " 2>&1";
    FILE* p = popen(command.c_str(), "r");
    if (!p) {
        ADD_FAILURE() << "cannot run " << command;
        return run;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
        run.output.append(buf, n);
    int status = pclose(p);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::cout << "reference:";
    for (const std::string& a : args)
        std::cout << ' ' << a;
    std::cout << " -> exit " << run.status << '\n' << run.output;
    return run;
}

const UpstreamSchema& upstreamSchema() {
    static UpstreamSchema schema = [] {
        UpstreamSchema s;
        ToolRun run = runUpstream({"schema"});
        EXPECT_EQ(run.status, 0) << run.output;
        s.kfdBoHandle = run.output.find("kfd_bo_entry.handle: yes") != std::string::npos;
        s.renderBos = run.output.find("criu_render_node BOs: yes") != std::string::npos;
        s.dmabuf = run.output.find("criu_dmabuf_node: yes") != std::string::npos;
        return s;
    }();
    return schema;
}

void writeDirectory(const std::string& dir, const std::map<std::string, std::string>& images) {
    for (const auto& [name, bytes] : images)
        writeBytes(dir, name, bytes.data(), bytes.size());
}

void writeBytes(const std::string& dir, const std::string& name, const void* bytes, size_t len) {
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(len));
    EXPECT_TRUE(out.good()) << "cannot write " << dir << "/" << name;
}

} // namespace compat

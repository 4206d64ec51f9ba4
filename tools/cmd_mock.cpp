// criu-amdgpu mock: set up, reset and inspect a mock GPU machine, and inject faults into it.

#include "command.h"

#include "faults.h"
#include "machine.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

void usage(FILE* out) {
    fprintf(out,
            "usage: criu-amdgpu mock init   --root DIR --topology SYSFS_DIR [--device-node PATH]\n"
            "       criu-amdgpu mock reset  --root DIR\n"
            "       criu-amdgpu mock status --root DIR\n"
            "       criu-amdgpu mock fault  --root DIR (--op OPERATION [--at N|always] | --clear)\n"
            "\n"
            "init   sets up a mock GPU machine under DIR from a KFD sysfs topology tree\n"
            "       (criu-amdgpu topology generate makes one). Set CRIU_AMDGPU_MOCK_ROOT=DIR for\n"
            "       criu and the plugin to use it.\n"
            "reset  wipes every device's state as a reboot would; the topology stays.\n"
            "status shows GPUs, open devices (contexts), their owners, buffers and queues.\n"
            "fault  makes the N-th call (counted from now, default 1) of OPERATION fail.\n"
            "       Operations: alloc submit pause checkpoint read-bo write-images unpause\n"
            "       restore write-bo resume.\n");
}

struct Args {
    std::string sub, root, topology, deviceNode, op, at = "1";
    bool clear = false;
};

bool parse(const std::vector<std::string>& args, Args* a) {
    if (args.empty())
        return false;
    a->sub = args[0];
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string& k = args[i];
        auto next = [&](std::string* out) {
            if (i + 1 >= args.size()) {
                fprintf(stderr, "criu-amdgpu mock: %s needs a value\n", k.c_str());
                return false;
            }
            *out = args[++i];
            return true;
        };
        bool ok = true;
        if (k == "--root")
            ok = next(&a->root);
        else if (k == "--topology")
            ok = next(&a->topology);
        else if (k == "--device-node")
            ok = next(&a->deviceNode);
        else if (k == "--op")
            ok = next(&a->op);
        else if (k == "--at")
            ok = next(&a->at);
        else if (k == "--clear")
            a->clear = true;
        else {
            fprintf(stderr, "criu-amdgpu mock: unknown argument '%s'\n", k.c_str());
            return false;
        }
        if (!ok)
            return false;
    }
    if (a->root.empty()) {
        fprintf(stderr, "criu-amdgpu mock %s: --root DIR is required\n", a->sub.c_str());
        return false;
    }
    return true;
}

int report(const hal::Result<void>& r, const char* what) {
    if (r.ok())
        return 0;
    fprintf(stderr, "criu-amdgpu mock %s: %s\n", what, r.error().describe().c_str());
    return 1;
}

int run(const std::vector<std::string>& args) {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
        usage(stdout);
        return 0;
    }
    Args a;
    if (!parse(args, &a)) {
        usage(stderr);
        return 1;
    }
    if (a.sub == "init") {
        if (a.topology.empty()) {
            fprintf(stderr, "criu-amdgpu mock init: --topology SYSFS_DIR is required\n");
            return 1;
        }
        if (int rc = report(mock::initMachine(a.root, a.topology, a.deviceNode), "init"))
            return rc;
        auto status = mock::describeMachine(a.root);
        if (status.ok())
            fputs(status->c_str(), stdout);
        return 0;
    }
    if (a.sub == "reset") {
        if (int rc = report(mock::resetMachine(a.root), "reset"))
            return rc;
        printf("mock GPU machine %s reset\n", a.root.c_str());
        return 0;
    }
    if (a.sub == "status") {
        auto status = mock::describeMachine(a.root);
        if (!status.ok()) {
            fprintf(stderr, "criu-amdgpu mock status: %s\n", status.error().describe().c_str());
            return 1;
        }
        fputs(status->c_str(), stdout);
        return 0;
    }
    if (a.sub == "fault") {
        if (auto cfg = mock::readMachineConfig(a.root); !cfg.ok())
            return report(std::move(cfg).error(), "fault");
        if (a.clear)
            return report(mock::clearFaults(a.root), "fault");
        if (a.op.empty()) {
            fprintf(stderr, "criu-amdgpu mock fault: --op OPERATION or --clear is required\n");
            return 1;
        }
        // A rejected request must leave the configured faults alone: check it before clearing.
        if (int rc = report(mock::validateFault(a.op, a.at), "fault"))
            return rc;
        // Counting starts now: earlier calls do not count toward --at.
        if (int rc = report(mock::clearFaults(a.root), "fault"))
            return rc;
        return report(mock::addFault(a.root, a.op, a.at), "fault");
    }
    fprintf(stderr, "criu-amdgpu mock: unknown subcommand '%s'\n", a.sub.c_str());
    usage(stderr);
    return 1;
}

tools::CommandRegistration reg("mock", "set up, reset and inspect a mock GPU machine", &run);

} // namespace

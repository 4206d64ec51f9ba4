// criu-amdgpu mock: set up, reset and inspect a mock GPU machine, and inject faults into it.

#include "command.h"

#include "config/numbers.h"
#include "mockgpu/faults.h"
#include "mockgpu/machine.h"
#include "mockgpu/reaper.h"

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

namespace {

struct Options {
    std::string root, topology, deviceNode, op, at = "1";
    bool clear = false;
    bool stall = false;
};

int report(const base::Result<void>& r, const char* what) {
    if (r.ok())
        return 0;
    fprintf(stderr, "criu-amdgpu mock %s: %s\n", what, r.error().describe().c_str());
    return tools::kExitBadInput;
}

int init(const Options& o) {
    if (int rc = report(mock::initMachine(o.root, o.topology, o.deviceNode), "init"))
        return rc;
    auto status = mock::describeMachine(o.root);
    if (status.ok())
        fputs(status->c_str(), stdout);
    return 0;
}

int reset(const Options& o) {
    if (int rc = report(mock::resetMachine(o.root), "reset"))
        return rc;
    printf("mock GPU machine %s reset\n", o.root.c_str());
    return 0;
}

int status(const Options& o) {
    // As a kernel would have freed them: devices no process holds open any more.
    if (auto reaped = mock::reapOrphanedContexts(o.root); reaped.ok() && *reaped)
        printf("%zu device(s) that no process holds any more released\n", *reaped);
    auto status = mock::describeMachine(o.root);
    if (!status.ok()) {
        fprintf(stderr, "criu-amdgpu mock status: %s\n", status.error().describe().c_str());
        return tools::kExitBadInput;
    }
    fputs(status->c_str(), stdout);
    return 0;
}

int fault(const Options& o) {
    if (auto cfg = mock::readMachineConfig(o.root); !cfg.ok())
        return report(std::move(cfg).error(), "fault");
    if (o.clear)
        return report(mock::clearFaults(o.root), "fault");
    if (o.op.empty()) {
        fprintf(stderr, "criu-amdgpu mock fault: --op OPERATION or --clear is required\n");
        return tools::kExitBadInput;
    }
    // A rejected request must leave the configured faults alone: check it before clearing.
    if (int rc = report(mock::validateFault(o.op, o.at), "fault"))
        return rc;
    // Counting starts now: earlier calls do not count toward --at.
    if (int rc = report(mock::clearFaults(o.root), "fault"))
        return rc;
    return report(mock::addFault(o.root, o.op, o.at,
                                 o.stall ? mock::FaultKind::Stall : mock::FaultKind::Fail),
                  "fault");
}

// --op: an operation of the mock, checked as the mock checks it; "" when it is one.
std::string checkOperation(const std::string& text) {
    base::Result<void> valid = mock::validateFault(text, "always");
    return valid.ok() ? std::string() : valid.error().message();
}

// --at: "always", or a call number from 1 read by the one number parser (so 0x10 is 16) and
// written back in decimal, as the mock's faults file keeps it; "" when it is either.
std::string checkCallNumber(std::string& text) {
    if (text == "always")
        return "";
    base::Result<uint64_t> n = config::parseNumber(text, 1, std::numeric_limits<uint64_t>::max());
    if (n.ok()) {
        text = std::to_string(*n);
        return "";
    }
    std::string message = "'";
    message += text;
    message += "' is neither a call number (1, 2, ...) nor 'always'";
    return message;
}

std::string operationList() {
    std::string all;
    for (const std::string& op : mock::faultOperations())
        all += (all.empty() ? "" : " ") + op;
    return all;
}

void setup(cmdline::Program& program, cmdline::Command command) {
    auto o = std::make_shared<Options>();
    auto addCommand = [&](const char* name, const char* summary, const std::string& details,
                          int (*action)(const Options&)) -> cmdline::Command {
        cmdline::Command sub = program.addCommand(command, name, summary, details);
        sub.addOption("--root", o->root, "the directory of the mock GPU machine")
            .typeName("DIR")
            .required();
        program.onRun(sub, [o, action] { return action(*o); });
        return sub;
    };

    cmdline::Command initCommand =
        addCommand("init", "set up a mock GPU machine from a KFD sysfs topology tree",
                   "Sets up a mock GPU machine under DIR from a KFD sysfs topology tree "
                   "('criu-amdgpu topology generate' makes one) and shows it. Set "
                   "CRIU_AMDGPU_MOCK_ROOT=DIR for criu and the plugin to use it.",
                   &init);
    initCommand.addOption("--topology", o->topology, "the KFD sysfs topology tree to simulate")
        .typeName("SYSFS_DIR")
        .required();
    initCommand
        .addOption("--device-node", o->deviceNode,
                   "an existing character device whose numbers the mock device nodes carry "
                   "(default: one criu hands to plugins, such as /dev/cpu_dma_latency)")
        .typeName("PATH");

    addCommand("reset", "wipe every device's state as a reboot would; the topology stays", "",
               &reset);
    addCommand("status", "show GPUs, open devices (contexts), their owners, buffers and queues", "",
               &status);

    cmdline::Command faultCommand = addCommand(
        "fault", "make a call of an operation fail",
        "Makes the N-th call (counted from now) of OPERATION fail, or every call with --at "
        "always; --clear removes every fault. With --stall the call waits instead of failing: it "
        "writes ROOT/faults.stalled (\"OPERATION CALL PID\") and runs once that file is removed "
        "(or --clear), failing after 30 s.\n\n"
        "Operations:\n  " +
            operationList(),
        &fault);
    cmdline::Option op = faultCommand.addOption("--op", o->op, "the operation to fail")
                             .typeName("OPERATION")
                             .check(checkOperation);
    cmdline::Option at =
        faultCommand.addOption("--at", o->at, "which call fails: 1, 2, ... or always")
            .typeName("N|always")
            .transform(checkCallNumber)
            .defaultText("1")
            .needs(op);
    faultCommand.addFlag("--stall", o->stall, "make the call wait for ROOT/faults.stalled to go")
        .needs(op);
    faultCommand.addFlag("--clear", o->clear, "remove every fault (and release a stalled call)")
        .excludes(op)
        .excludes(at);
    program.setUsage(faultCommand,
                     "--root DIR (--op OPERATION [--at N|always] [--stall] | --clear)");
}

tools::CommandRegistration reg("mock", "set up, reset and inspect a mock GPU machine", &setup);

} // namespace

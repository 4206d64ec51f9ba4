#pragma once
/// \file
/// A mock GPU machine: a directory that plays the part of the kernel driver's memory.
///
///   ROOT/machine.conf      device numbers of the mock device nodes, budget override
///   ROOT/topology/         a KFD sysfs tree, read by the same parser as a real machine's
///   ROOT/dev/              the node's device nodes: kfd, dri/renderD<minor> (device_nodes.h)
///   ROOT/state/contexts/N  one directory per open device (a "file" of the driver): its node,
///                          its state, its buffer objects. A process reaches it only through an
///                          fd of the character device node inside, which criu cannot dump.
///   ROOT/state/gate        the call gate of the processes being checkpointed (call_gate.h)
///   ROOT/faults            fault injection: "<operation> <nth call>" lines
///   ROOT/faults.lock       serialises fault counting with adding and clearing faults
///
/// A checkpoint of a process alone does not capture any of it; `reset` wipes state/ like a reboot.

#include "base/result.h"
#include "topology/topology.h"

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace mock {

/// What machine.conf says.
struct MachineConfig {
    dev_t deviceRdev = 0;     ///< char device numbers of every mock device node
    uint64_t budgetBytes = 0; ///< per-GPU memory budget; 0 = the GPU's VRAM size
};

/// Paths inside a mock root.
struct MachinePaths {
    std::string root;
    std::string config() const { return root + "/machine.conf"; }
    std::string topology() const { return root + "/topology"; }
    std::string state() const { return root + "/state"; }
    std::string contexts() const { return root + "/state/contexts"; }
    std::string gate() const { return root + "/state/gate"; }
    std::string faults() const { return root + "/faults"; }
    std::string faultsLock() const { return root + "/faults.lock"; }
    std::string faultCounters() const { return root + "/state/fault-counters"; }
};

/// The canonical absolute form of a root (device node paths are compared against it).
std::string canonicalRoot(const std::string& root);

/// Host pid of the calling process (readlink /proc/self), correct inside a pid namespace.
int hostPid();

/// Sets up a mock machine under `root` from the KFD sysfs tree `topologyDir` (validated with the
/// real parser; it must have at least one GPU). `deviceNode` names an existing character device
/// whose numbers the mock nodes carry; empty picks one criu hands to plugins (cpu_dma_latency...).
base::Result<void> initMachine(const std::string& root, const std::string& topologyDir,
                               const std::string& deviceNode = "");

/// Wipes every device's state as a reboot would; the topology and configuration stay.
base::Result<void> resetMachine(const std::string& root);

/// Reads machine.conf; fails with a clear message when `root` is not a mock machine.
base::Result<MachineConfig> readMachineConfig(const std::string& root);

/// The machine's topology (ROOT/topology through readKfdTopology).
base::Result<topology::Topology> readMachineTopology(const std::string& root);

/// Memory budget of one GPU in bytes.
base::Result<uint64_t> gpuBudget(const std::string& root, uint32_t gpuId);

/// A human-readable report: GPUs, contexts (owner pid, paused), buffers, queues.
base::Result<std::string> describeMachine(const std::string& root);

} // namespace mock

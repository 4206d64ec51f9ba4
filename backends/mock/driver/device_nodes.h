#pragma once
/// \file
/// The device nodes of a mock machine, as a node's /dev holds them, and which GPUs a process
/// that sees a given device directory can use.
///
///   ROOT/dev/kfd                 one per machine
///   ROOT/dev/dri/renderD<minor>  one per GPU
///
/// They carry the mock's device numbers (machine.conf). A container is given GPUs the way AMD's
/// device plugin gives them: `kfd` and the render nodes of its GPUs in the container's /dev, and
/// nothing else of /dev/dri. A process names the directory it sees them in (`--dev-dir /dev`);
/// it may open a GPU only when `DIR/kfd` and that GPU's `DIR/dri/renderD<minor>` are there, and
/// a restore maps the checkpoint's GPUs onto the GPUs the restored process sees.

#include "hal/result.h"
#include "hal/topology.h"

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mock {

/// ROOT/dev: the node's device directory of the machine at `root`.
std::string machineDevDir(const std::string& root);

/// (Re)creates ROOT/dev with `kfd` and one `dri/renderD<minor>` per GPU of `topo`, carrying `rdev`.
hal::Result<void> makeDeviceNodes(const std::string& root, const hal::Topology& topo, dev_t rdev);

/// The GPUs of `topo` (topology order) that a process seeing device directory `devDir` can use:
/// `devDir/kfd` and the GPU's `devDir/dri/renderD<minor>` are character devices with `rdev`.
std::vector<const hal::Node*> visibleGpus(const hal::Topology& topo, const std::string& devDir,
                                          dev_t rdev);

/// What `devDir` gives a process, for error messages: "/dev holds kfd, dri/renderD130" or
/// "/dev holds no kfd and no dri/renderD* node".
std::string describeDeviceView(const std::string& devDir);

} // namespace mock

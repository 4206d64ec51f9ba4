#pragma once
/// \file
/// The device nodes of a mock machine, as a node's /dev holds them, and which GPUs a process
/// that sees a given device directory can use.
///
///   ROOT/dev/kfd                 one per machine
///   ROOT/dev/dri/renderD<minor>  one per GPU
///
/// `kfd` carries the mock's device number (machine.conf), which every mock context's node carries
/// too; the render nodes carry the real ones, 226:<minor>, so that a devices cgroup tells them
/// apart as it tells real GPUs apart. The mock never holds them open (nothing answers behind 226
/// on a machine without a GPU: an open that the cgroup allows fails ENXIO). A container is given
/// GPUs the way AMD's device plugin gives them: `kfd` and the render nodes of its GPUs in the
/// container's /dev, and nothing else of /dev/dri. A process names the directory it sees them
/// in (`--dev-dir /dev`); it may open a GPU when `DIR/kfd` is there and the kernel lets it open
/// that GPU's `DIR/dri/renderD<minor>`. A restore maps the checkpoint's GPUs onto the GPUs the
/// restored process may open, probing nodes its restored /dev lacks
/// (topology/render_node_access.h).

#include "base/result.h"
#include "topology/render_node_access.h"
#include "topology/topology.h"

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mock {

/// ROOT/dev: the node's device directory of the machine at `root`.
std::string machineDevDir(const std::string& root);

/// (Re)creates ROOT/dev with `kfd` (carrying `rdev`) and one `dri/renderD<minor>` (226:minor) per
/// GPU of `topo`.
base::Result<void> makeDeviceNodes(const std::string& root, const topology::Topology& topo,
                                   dev_t rdev);

/// The GPUs of `topo` (topology order) that a process seeing device directory `devDir` can use:
/// `devDir/kfd` is a character device with `rdev`, and the kernel lets it open the GPU's render
/// node (asked through `calls`), which must be in `devDir` (AbsentNode::Report: a workload) or may
/// be made there (AbsentNode::Probe: a restore). `why`, when given, gets one line per GPU left out.
std::vector<const topology::Node*> visibleGpus(topology::DeviceNodeCalls& calls,
                                               const topology::Topology& topo,
                                               const std::string& devDir, dev_t rdev,
                                               topology::AbsentNode absent,
                                               std::vector<std::string>* why = nullptr);

/// What `devDir` gives a process, for error messages: "/dev holds kfd, dri/renderD130" or
/// "/dev holds no kfd and no dri/renderD* node".
std::string describeDeviceView(const std::string& devDir);

} // namespace mock

#pragma once
/// \file
/// Helpers for topology and matcher tests: editing synthetic topologies (VRAM, links, CPU
/// attachment) and an independent checker of a GPU mapping against the matching rules, used to
/// brute-force reference answers.

#include "base/result.h"
#include "topology/match.h"
#include "topology/synth.h"
#include "topology/topology.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace testsupport {

/// A synthetic topology (topology::makeSyntheticTopology) built from the few fields tests vary.
topology::Topology synth(unsigned gpus, unsigned hives = 0, unsigned cpus = 1,
                         uint32_t gpuIdBase = 0x1000, uint64_t vram = 64ull << 30);

/// Expects (gtest) the same nodes, properties, banks, caches and links, generation_id and
/// system_properties in both.
void expectSameTopology(const topology::Topology& a, const topology::Topology& b);

/// Expects (gtest) two readings of one machine (from disk and from memory, say) to agree: both
/// fail with the same message, or both give the same topology, source, notes and skipped nodes.
void expectSameReading(const base::Result<topology::Topology>& a,
                       const base::Result<topology::Topology>& b);

/// The i-th GPU node (in index order), mutable.
topology::Node& gpuAt(topology::Topology& topo, size_t i);
/// The gpu_id of the i-th GPU.
uint32_t gpuIdAt(const topology::Topology& topo, size_t i);
/// Sets the VRAM of a GPU (its FB mem_bank).
void setVram(topology::Node& gpu, uint64_t bytes);
/// Adds an io_link from -> to of `type` (node indices); updates io_links_count.
void addLink(topology::Topology& topo, uint32_t from, uint32_t to, uint32_t type);
/// Removes every io_link from -> to; updates io_links_count.
void removeLink(topology::Topology& topo, uint32_t from, uint32_t to);
/// Moves a GPU's PCIe attachment to another CPU node (both directions).
void attachToCpu(topology::Topology& topo, uint32_t gpuIndex, uint32_t cpuIndex);
/// Rebuilds the XGMI links so that `groups` (lists of GPU positions) are the hives.
void setHives(topology::Topology& topo, const std::vector<std::vector<size_t>>& groups);

/// Every rule a complete mapping (source gpu_id -> destination gpu_id) breaks, checked directly
/// from the topologies (not through the matcher's model). Empty = valid.
std::vector<std::string> checkMapping(const topology::Topology& src, const topology::Topology& dst,
                                      const topology::MatchOptions& options,
                                      const std::map<uint32_t, uint32_t>& mapping);

/// Whether any valid mapping exists, by trying every injective assignment, cutting those whose
/// first GPUs already break a rule (small inputs only).
bool bruteForceExists(const topology::Topology& src, const topology::Topology& dst,
                      const topology::MatchOptions& options);

/// Every reason of a report, one per line (for test messages).
std::string reasonsText(const topology::MatchReport& report);

/// A crafted pair that keeps an unbounded search busy for minutes: a hive of 12 GPUs (source)
/// onto 96 GPUs whose two-way XGMI links are drawn at random, each pair with probability 1/2
/// (looking for 12 GPUs all linked with one another among them; unbounded, the search was still
/// busy after 5 minutes).
void craftedSearchTrap(topology::Topology* src, topology::Topology* dst);

/// The sets of options a failed match's reasons say would allow a mapping: each "setting X=false
/// ... would allow" (with the options of a "with ... as well:" prefix), each "... together would
/// allow".
std::vector<std::vector<std::string>> offeredRelaxations(const std::vector<std::string>& reasons);

/// What is wrong with the relaxations `reasons` offer for matching src onto dst under `options`:
/// an offer of an option already off, or one whose mapping does not exist or breaks a rule those
/// options do not govern (checked with checkMapping). Empty when every offer is safe.
std::vector<std::string> unsafeRelaxations(const topology::Topology& src,
                                           const topology::Topology& dst,
                                           const topology::MatchOptions& options,
                                           const std::vector<std::string>& reasons);

} // namespace testsupport

#pragma once
/// \file
/// Where the backend looks for device nodes, sysfs and procfs; tests point them at temp trees.

#include "settings/settings.h"

#include <string>

namespace drm {

/// Roots of the file trees the backend reads.
struct Paths {
    std::string devRoot = "/dev";   ///< holds dri/renderD*
    std::string sysRoot = "/sys";   ///< holds class/drm/renderD*/device
    std::string procRoot = "/proc"; ///< holds <pid>/fd, <pid>/fdinfo, self
    std::string kfdTopologyRoot;    ///< KFD sysfs topology; empty = the default location

    /// `devRoot/dri/renderD<minor>`.
    std::string renderNodePath(unsigned minor) const;
    /// The KFD topology root to read (kfdTopologyRoot or the default).
    std::string kfdRoot() const;

    /// The real locations, with devRoot and the KFD root taken from settings when set.
    static Paths fromSettings(const settings::Settings& settings);
};

/// The render minor in a path ending in "renderD<minor>", or -1.
int renderMinorOfPath(const std::string& path);

} // namespace drm

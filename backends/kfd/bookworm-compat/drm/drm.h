#pragma once
/// \file
/// Debian bookworm's <linux/kfd_ioctl.h> includes <drm/drm.h>, which bookworm does not ship:
/// libdrm installs the same header as <libdrm/drm.h>. This forwards to it.
#include <libdrm/drm.h>

#pragma once
/// \file
/// The typed settings every layer is handed. Only config/ fills them (from its option table:
/// defaults, YAML file, options file, environment, criu plugin options); everything else reads
/// them and never calls getenv.

#include <cstdint>
#include <string>
#include <vector>

namespace settings {

/// The compatibility checks of GPU matching (reference-amdgpu-plugin.md, docs/options.md), all on
/// by default; each governs one rule of the matcher.
struct CompatibilityChecks {
    bool fwVersion = true;     ///< fw-version-check / KFD_FW_VER_CHECK
    bool sdmaFwVersion = true; ///< sdma-fw-version-check / KFD_SDMA_FW_VER_CHECK
    bool cachesCount = true;   ///< caches-count-check / KFD_CACHES_COUNT_CHECK
    bool numGws = true;        ///< num-gws-check / KFD_NUM_GWS_CHECK
    bool vramSize = true;      ///< vram-size-check / KFD_VRAM_SIZE_CHECK
    bool numa = true;          ///< numa-check / KFD_NUMA_CHECK
    bool capability = true;    ///< capability-check / KFD_CAPABILITY_CHECK
    bool largeBar = true;      ///< large-bar-check / CRIU_AMDGPU_LARGE_BAR_CHECK
    bool xgmiLink = true;      ///< xgmi-link-check / CRIU_AMDGPU_XGMI_LINK_CHECK
    bool peerLink = true;      ///< peer-link-check / CRIU_AMDGPU_PEER_LINK_CHECK
};

/// One entry of an explicit device map: a source gpu_id goes to a destination GPU named either by
/// gpu_id or by render minor.
struct DeviceMapEntry {
    uint32_t srcGpuId = 0;
    uint32_t dstGpuId = 0;   ///< 0 when the destination is named by render minor.
    int dstRenderMinor = -1; ///< -1 when the destination is named by gpu_id.
};

/// Every setting, typed.
struct Settings {
    /// Backend choice: empty = "auto" (best present); otherwise names in order of preference.
    std::vector<std::string> backends;
    /// Directory holding backend libraries; empty = "<plugin dir>/amdgpu".
    std::string backendDir;
    CompatibilityChecks checks;
    /// Require the destination to have exactly as many GPUs as the checkpoint used.
    bool exactGpuCount = false;
    /// Explicit source -> destination GPU assignments (bypass matching for these GPUs).
    std::vector<DeviceMapEntry> deviceMap;
    /// Put every source GPU onto one destination GPU (the user accepts the risk).
    bool forceSingleGpuRestore = false;
    /// Host staging buffer cap in bytes for BO contents; 0 = the built-in default.
    uint64_t maxBufferSize = 0;
    /// Restore BO contents in a worker after criu forks (POST_FORKING).
    bool parallelRestore = false;
    /// The image directory an incremental dump compares against (relative to the image directory).
    std::string parentImages;
    /// At dump, leave the zero blocks of BO contents out of the pages files as holes.
    bool contentHoles = true;
    /// At dump, write packed contents files past the page cache (O_DIRECT) where the file system
    /// takes it (ImageStore::setDirectWrites).
    bool directWrite = true;
    /// The codec of BO contents in checkpoints, canonical text of formats::parseCodec ("none",
    /// "lz4", "zstd:LEVEL").
    std::string contentCompression = "none";
    /// The cipher of BO contents in checkpoints, canonical text of formats::parseCipher ("none",
    /// "aes-256-gcm", "chacha20-poly1305").
    std::string contentEncryption = "none";
    /// X.509 certificate whose RSA public key wraps an encrypted checkpoint's key at dump.
    std::string contentCertificate;
    /// The private key that unwraps it at restore (and at a dump against an encrypted parent).
    std::string contentPrivateKey;
    /// The private key and certificate every dump signs its checkpoint's manifest with
    /// (formats/checkpoint_signing.h); both or neither.
    std::string checkpointSigningKey;
    std::string checkpointSigningCertificate;
    /// The certificates a restore trusts to have signed a checkpoint (a file or a directory);
    /// empty = checkpoints need not be signed.
    std::string trustedCertificates;
    /// With a private key set, still restore checkpoints in the clear (issue 52: off, a node with
    /// a key restores only encrypted checkpoints).
    bool contentAllowPlaintext = false;
    /// Read key images wrapped with RSA PKCS#1 v1.5 (checkpoints made before RSA-OAEP).
    bool contentLegacyKeyWrap = false;
    /// Root of a mock GPU machine (criu-amdgpu mock init); non-empty asks for the mock backend.
    std::string mockRoot;
    /// Root of a user-space KFD driver (tests/kfd/DRIVER.md); non-empty: the kfd backend's
    /// kernel is that driver's. For tests.
    std::string kfdDriver;
    /// Root of the KFD sysfs topology; empty = /sys/class/kfd/kfd/topology.
    std::string kfdSysfsRoot;
    /// Directory holding device nodes (kfd, dri/renderD*); empty = /dev.
    std::string devRoot;
    /// Log level 0..4 (criu's levels); -1 = leave as is.
    int logLevel = -1;
    /// The criu plugin ABI to assume ("3.17", "4.0", "4.1", "4.2", "dev" or a hook count 10..15);
    /// empty = detect it from the running criu.
    std::string criuAbi;
};

/// The staging buffer size used when Settings::maxBufferSize is 0: 64 MiB.
constexpr uint64_t kDefaultStagingBufferSize = 64ull << 20;

/// The effective staging buffer size for these settings.
inline uint64_t stagingBufferSize(const Settings& s) {
    return s.maxBufferSize ? s.maxBufferSize : kDefaultStagingBufferSize;
}

} // namespace settings

#include "config/option_table.h"

namespace config {
namespace {

constexpr SourceMask kNotInFiles = sourceBit(SourceKind::Env) | sourceBit(SourceKind::PluginOption);
constexpr SourceMask kNotInOptionsFile = kAllSources & ~sourceBit(SourceKind::OptionsFile);

// Binds an option to a field: FIELD is an expression over `t`, an OptionTarget&.
#define CONFIG_FIELD(FIELD)                                                                        \
    +[](OptionTarget & t) -> auto& {                                                               \
        return FIELD;                                                                              \
    }

std::vector<OptionSpec> buildTable() {
    using enum OptionType;
    return {
        {"config", Path, "config", "CRIU_AMDGPU_CONFIG", "", "/etc/criu/amdgpu.yaml",
         "The YAML configuration file. A missing default file is fine; a file named by "
         "`CRIU_AMDGPU_CONFIG` or the plugin option `amdgpu.config` must exist. The empty string "
         "reads no YAML file. Only the environment and plugin options can set it. The file must be "
         "owned by root (or the user criu runs as) and writable by no one else, as every "
         "directory above it: it names code and keys the plugin trusts.",
         kNotInFiles, CONFIG_FIELD(t.configPath)},
        {"options-file", Path, "options_file", "CRIU_AMDGPU_OPTIONS_FILE", "",
         "/etc/criu/amdgpu.conf",
         "The options file in criu's config-file syntax (`plugin-opt amdgpu:NAME=VALUE` lines). "
         "A missing default file is fine; a named file must exist. The empty string reads no "
         "options file. The options file itself cannot set it. The file must be owned by root (or "
         "the user criu runs as) and writable by no one else, as every directory above it.",
         kNotInOptionsFile, CONFIG_FIELD(t.optionsFile)},
        {"backend", BackendList, "backend", "CRIU_AMDGPU_BACKEND", "", "auto",
         "Which backend to use: `auto`, one backend name, or a comma-separated order of "
         "preference such as `kfd,amdgpu-drm`. Known backends: `kfd` (/dev/kfd), `amdgpu-drm` "
         "(render nodes only), `mock` (a simulated GPU). A name no installed backend provides is "
         "reported by the backend registry. With `auto` the order is `kfd`, `amdgpu-drm`; naming "
         "a mock root (`mock-root`) asks for the mock backend and puts `mock` first.",
         kAllSources, CONFIG_FIELD(t.settings.backends)},
        {"backend-dir", Path, "backend_dir", "CRIU_AMDGPU_BACKEND_DIR", "", "",
         "Directory holding the backend libraries. Empty: `<plugin dir>/amdgpu`. It, every library "
         "in it and every directory above it must be owned by root (or the user criu runs as) "
         "and writable by no one else, or nothing is loaded from it.",
         kAllSources, CONFIG_FIELD(t.settings.backendDir)},
        {"fw-version-check", Bool, "fw_version_check", "CRIU_AMDGPU_FW_VERSION_CHECK",
         "KFD_FW_VER_CHECK", "true",
         "At restore, require each destination GPU's firmware version to be at least the source "
         "GPU's.",
         kAllSources, CONFIG_FIELD(t.settings.checks.fwVersion)},
        {"sdma-fw-version-check", Bool, "sdma_fw_version_check",
         "CRIU_AMDGPU_SDMA_FW_VERSION_CHECK", "KFD_SDMA_FW_VER_CHECK", "true",
         "At restore, require each destination GPU's SDMA firmware version to be at least the "
         "source GPU's.",
         kAllSources, CONFIG_FIELD(t.settings.checks.sdmaFwVersion)},
        {"caches-count-check", Bool, "caches_count_check", "CRIU_AMDGPU_CACHES_COUNT_CHECK",
         "KFD_CACHES_COUNT_CHECK", "true",
         "At restore, require each destination GPU to have at least as many caches as the source "
         "GPU.",
         kAllSources, CONFIG_FIELD(t.settings.checks.cachesCount)},
        {"num-gws-check", Bool, "num_gws_check", "CRIU_AMDGPU_NUM_GWS_CHECK", "KFD_NUM_GWS_CHECK",
         "true",
         "At restore, require each destination GPU to have at least as many global wave syncs "
         "(num_gws) as the source GPU.",
         kAllSources, CONFIG_FIELD(t.settings.checks.numGws)},
        {"vram-size-check", Bool, "vram_size_check", "CRIU_AMDGPU_VRAM_SIZE_CHECK",
         "KFD_VRAM_SIZE_CHECK", "true",
         "At restore, require each destination GPU to have at least as much VRAM as the source "
         "GPU.",
         kAllSources, CONFIG_FIELD(t.settings.checks.vramSize)},
        {"numa-check", Bool, "numa_check", "CRIU_AMDGPU_NUMA_CHECK", "KFD_NUMA_CHECK", "true",
         "At restore, require the GPU-to-CPU links of the destination GPUs to map CPU nodes the "
         "way the source GPUs' did: GPUs that shared a CPU node share one, GPUs of different CPU "
         "nodes stay apart. Off: a job's host memory may end up on another socket than its GPU "
         "(slower, nothing fails). Large BAR and XGMI links are kept either way "
         "(`large-bar-check`, `xgmi-link-check`).",
         kAllSources, CONFIG_FIELD(t.settings.checks.numa)},
        {"capability-check", Bool, "capability_check", "CRIU_AMDGPU_CAPABILITY_CHECK",
         "KFD_CAPABILITY_CHECK", "true",
         "At restore, require each destination GPU's capability flags to equal the source GPU's.",
         kAllSources, CONFIG_FIELD(t.settings.checks.capability)},
        {"large-bar-check", Bool, "large_bar_check", "CRIU_AMDGPU_LARGE_BAR_CHECK", "", "true",
         "At restore, put a GPU with large BAR (a two-way link with its CPU node, as KFD shows a "
         "GPU whose whole VRAM the CPU and its peers can map) on a GPU with large BAR, whatever "
         "`numa-check` says; with `numa-check` the two-way link must go to the CPU node the "
         "source's maps to. A return link counts only when it has the type of the link it "
         "answers. Off: a job that maps all of a GPU's VRAM from the host or from a peer may "
         "fault after restore.",
         kAllSources, CONFIG_FIELD(t.settings.checks.largeBar)},
        {"xgmi-link-check", Bool, "xgmi_link_check", "CRIU_AMDGPU_XGMI_LINK_CHECK", "", "true",
         "At restore, require each XGMI link of the checkpoint, between two GPUs or between a GPU "
         "and its CPU node, to be an XGMI link at the destination. Off: such a link may become "
         "PCIe (several times slower); `peer-link-check` still requires a link between the two "
         "GPUs.",
         kAllSources, CONFIG_FIELD(t.settings.checks.xgmiLink)},
        {"peer-link-check", Bool, "peer_link_check", "CRIU_AMDGPU_PEER_LINK_CHECK", "", "true",
         "At restore, for every link from one GPU of the checkpoint to another (PCIe "
         "peer-to-peer or XGMI), require a PCIe or XGMI link between their destinations in the "
         "same direction, and a two-way one where the checkpoint's was two-way (a return link of "
         "the same type). Links are the io_links between GPU nodes, which checkpoint images "
         "carry; the p2p_links directories are not compared. Off: GPUs that accessed each "
         "other's memory directly may land where they cannot, and the job faults when it does.",
         kAllSources, CONFIG_FIELD(t.settings.checks.peerLink)},
        {"exact-gpu-count", Bool, "exact_gpu_count", "CRIU_AMDGPU_EXACT_GPU_COUNT", "", "false",
         "Require the destination to have exactly as many GPUs as the checkpoint used.",
         kAllSources, CONFIG_FIELD(t.settings.exactGpuCount)},
        {"device-map", DeviceMap, "device_map", "CRIU_AMDGPU_DEVICE_MAP", "", "",
         "Explicit source-to-destination GPU assignments that bypass matching for these GPUs, "
         "e.g. `0x1234=0x5678,0x2222=renderD130`. Empty: match every GPU automatically.",
         kAllSources, CONFIG_FIELD(t.settings.deviceMap)},
        {"force-single-gpu-restore", Bool, "force_single_gpu_restore",
         "CRIU_AMDGPU_FORCE_SINGLE_GPU_RESTORE", "", "false",
         "Restore every source GPU onto one destination GPU; the user accepts the risk.",
         kAllSources, CONFIG_FIELD(t.settings.forceSingleGpuRestore)},
        {"max-buffer-size", Size, "max_buffer_size", "CRIU_AMDGPU_MAX_BUFFER_SIZE",
         "KFD_MAX_BUFFER_SIZE", "0",
         "Cap of the host staging memory for BO contents, shared by every GPU copied at once "
         "(each gets its share). 0: the built-in default of 64M (criu's own plugin used a buffer "
         "as large as the largest BO).",
         kAllSources, CONFIG_FIELD(t.settings.maxBufferSize)},
        {"parallel-restore", Bool, "parallel_restore", "CRIU_AMDGPU_PARALLEL_RESTORE", "", "false",
         "Restore BO contents in criu's main process while criu restores the rest of the "
         "process tree, as CRIU's own plugin does: each restored task hands its BOs' dma-buf fds "
         "over; every copy is finished and checked before any task resumes. Needs criu 4.2 or "
         "newer (POST_FORKING); elsewhere, and with criu's image streamer, contents are restored "
         "in each task, and the plugin says why in criu's log.",
         kAllSources, CONFIG_FIELD(t.settings.parallelRestore)},
        {"parent-images", Path, "parent_images", "CRIU_AMDGPU_PARENT_IMAGES", "", "",
         "Make the checkpoint incremental against an earlier one: the image directory of that "
         "checkpoint, relative to this checkpoint's image directory (as criu's own `parent` link "
         "is) and beside it (`../NAME`): a chain is read only within the image directory's "
         "parent, since a checkpoint is untrusted input (docs/security.md). Each 2 MiB chunk of a "
         "BO whose XXH3-128 equals that of the same chunk of the same BO (same GPU, VA and size) "
         "in the parent is left out; a restore reads "
         "it from the parent (or further up the chain), which must then stay where it is, "
         "unchanged. Empty: criu's `parent` link when criu makes one, else a full checkpoint. "
         "Contents of an incremental checkpoint live in `amdgpu-delta-*` files, which CRIU's own "
         "plugin does not read. Every backend honours it; the kfd backend needs a parent "
         "dumped compressed or incremental (a full uncompressed KFD dump keeps CRIU's layout and "
         "no chunk record), and refuses another naming the option.",
         kAllSources, CONFIG_FIELD(t.settings.parentImages)},
        {"content-holes", Bool, "content_holes", "CRIU_AMDGPU_CONTENT_HOLES", "", "true",
         "At dump, leave the 4 KiB blocks of BO contents that hold only zeros out of the pages "
         "files, as holes of a sparse file: each file keeps its length and reads back byte for "
         "byte the same (CRIU's own plugin reads it), and the checksum is that of every byte. At "
         "restore the holes are filled with zeros without being read. Through criu's image "
         "streamer zeros are always written. Off: every byte is written.",
         kAllSources, CONFIG_FIELD(t.settings.contentHoles)},
        {"direct-write", Bool, "direct_write", "CRIU_AMDGPU_DIRECT_WRITE", "", "true",
         "At dump, write the `amdgpu-packed-*` files (compressed or encrypted contents) past the "
         "page cache (O_DIRECT) where the file system takes it, a page-aligned block at a time: "
         "the CPU does not copy GPU memory into the page cache, a dump of tens of GB neither "
         "fills the machine's memory with it nor charges it to criu's cgroup, and the contents "
         "have been written to the disk when the dump ends instead of waiting for writeback (no "
         "fsync: the disk's own cache and the file's metadata are flushed as the file system "
         "usually does). A file system that refuses it (criu's image streamer, "
         "some network or FUSE ones) is written through the page cache instead. Off: through the "
         "page cache, as every other image (the kernel writes it back later; a restore right "
         "after on the same machine may read it from memory).",
         kAllSources, CONFIG_FIELD(t.settings.directWrite)},
        {"content-compression", Compression, "content_compression",
         "CRIU_AMDGPU_CONTENT_COMPRESSION", "", "none",
         "The codec of BO contents in checkpoints: `none`, `lz4`, `zstd` (level 3) or "
         "`zstd:LEVEL` (1 to 19). Each 2 MiB of a BO becomes one frame that decodes on its own, "
         "stored raw when it does not shrink by 1/64, in `amdgpu-packed-*` files, which CRIU's "
         "own plugin does not read (it fails instead). A restore reads whatever each file "
         "holds, whatever this option says. Every backend compresses; the kfd backend then "
         "writes a file per BO instead of CRIU's pages file per GPU.",
         kAllSources, CONFIG_FIELD(t.settings.contentCompression)},
        {"content-encryption", Cipher, "content_encryption", "CRIU_AMDGPU_CONTENT_ENCRYPTION", "",
         "none",
         "The cipher that seals BO contents in checkpoints: `none`, `aes-256-gcm` or "
         "`chacha20-poly1305` (OpenSSL's). Each 2 MiB frame, after compression, is sealed under "
         "a random key of the checkpoint, bound to its file, place and checkpoint, in "
         "`amdgpu-packed-*` files, which CRIU's own plugin does not read (it fails instead); the "
         "key, wrapped for `content-certificate`, is in `amdgpu-seal.img`. A restore opens an "
         "encrypted checkpoint with `content-private-key` whatever this option says. "
         "Every backend encrypts (the kfd backend then writes a file of ours per BO, as when "
         "compressing).",
         kAllSources, CONFIG_FIELD(t.settings.contentEncryption)},
        {"content-certificate", Path, "content_certificate", "CRIU_AMDGPU_CONTENT_CERTIFICATE", "",
         "",
         "At dump with `content-encryption`: the X.509 certificate (PEM or DER) whose RSA public "
         "key wraps the checkpoint's key. It must be owned by root and writable by no one else, "
         "as every directory above it.",
         kAllSources, CONFIG_FIELD(t.settings.contentCertificate)},
        {"content-private-key", Path, "content_private_key", "CRIU_AMDGPU_CONTENT_PRIVATE_KEY", "",
         "",
         "The unencrypted private key (PEM or DER) of `content-certificate`: at restore of an "
         "encrypted checkpoint, and at a dump against an encrypted parent (a chain shares one "
         "key). It must be owned by root and writable by no one else, as every directory above "
         "it.",
         kAllSources, CONFIG_FIELD(t.settings.contentPrivateKey)},
        {"checkpoint-signing-key", Path, "checkpoint_signing_key",
         "CRIU_AMDGPU_CHECKPOINT_SIGNING_KEY", "", "",
         "The unencrypted private key (PEM or DER; RSA of 2048 bits or more, signing with "
         "RSA-PSS and SHA-256, or EC, signing with ECDSA and SHA-256) with which every dump "
         "signs a manifest of its whole checkpoint directory (`amdgpu-manifest.img`: the name, "
         "size and SHA-256 of every file, criu's images and ours), written after criu's "
         "images, at criu 4.3's DUMP_FINISH; a criu without it (4.2 and older) leaves the "
         "checkpoint unsigned, with a warning (`criu-amdgpu image sign` signs it). Needs "
         "`checkpoint-signing-certificate`. It must be owned by root, readable by its owner "
         "alone and writable by no one else, as every directory above it.",
         kAllSources, CONFIG_FIELD(t.settings.checkpointSigningKey)},
        {"checkpoint-signing-certificate", Path, "checkpoint_signing_certificate",
         "CRIU_AMDGPU_CHECKPOINT_SIGNING_CERTIFICATE", "", "",
         "The X.509 certificate (PEM or DER) of `checkpoint-signing-key`, stored in the "
         "manifest; restores that trust it list it in `trusted-certificates`. It must be "
         "owned by root and writable by no one else, as every directory above it.",
         kAllSources, CONFIG_FIELD(t.settings.checkpointSigningCertificate)},
        {"trusted-certificates", Path, "trusted_certificates", "CRIU_AMDGPU_TRUSTED_CERTIFICATES",
         "", "",
         "A file of X.509 certificates (PEM, or one DER) or a directory of such files: every "
         "restore, at the plugin's init, and `image verify` and `image check` then refuse a "
         "checkpoint whose `amdgpu-manifest.img` is missing, is not signed by one of these "
         "certificates (compared byte for byte; no CA chain, no dates), or does not list "
         "exactly the files of the directory as they are (each one changed, added or removed "
         "is named), before criu reads any image but its inventory. It must be owned by root "
         "and writable by no one else, as every directory above it.",
         kAllSources, CONFIG_FIELD(t.settings.trustedCertificates)},
        {"content-allow-plaintext", Bool, "content_allow_plaintext",
         "CRIU_AMDGPU_CONTENT_ALLOW_PLAINTEXT", "", "false",
         "With `content-private-key` set, also restore (and pass in `criu-amdgpu image verify` "
         "and `image check`) checkpoints whose GPU contents are not encrypted. Off, a node with "
         "a private key restores only encrypted checkpoints: a checkpoint, or any checkpoint of "
         "its chain, without `amdgpu-seal.img`, and CRIU's pages files (never encrypted), are "
         "refused, so that no one can strip a checkpoint's encryption and have it restored. "
         "On, encrypted checkpoints whose metadata images have no tag (`amdgpu-tag-*`, made "
         "before tags, or removed) are read too, their metadata unauthenticated. "
         "Without a private key, checkpoints in the clear are read whatever this option says.",
         kAllSources, CONFIG_FIELD(t.settings.contentAllowPlaintext)},
        {"content-legacy-key-wrap", Bool, "content_legacy_key_wrap",
         "CRIU_AMDGPU_CONTENT_LEGACY_KEY_WRAP", "", "false",
         "Also open encrypted checkpoints whose key is wrapped with RSA PKCS#1 v1.5 (key image "
         "version 1, written before RSA-OAEP). Off, they are refused naming this option: a v1.5 "
         "unwrap can serve as a padding oracle against the wrapped key, and an attacker could "
         "move a checkpoint back to it. Set it only to read checkpoints of your own made before, "
         "and dump them again.",
         kAllSources, CONFIG_FIELD(t.settings.contentLegacyKeyWrap)},
        {"mock-root", Path, "mock_root", "CRIU_AMDGPU_MOCK_ROOT", "", "",
         "Root of a simulated GPU machine (`criu-amdgpu mock init`). Non-empty asks for the mock "
         "backend (see `backend`). It must be owned by root (or the user criu runs as) and "
         "writable by no one else, as every directory above it.",
         kAllSources, CONFIG_FIELD(t.settings.mockRoot)},
        {"kfd-driver", Path, "kfd_driver", "CRIU_AMDGPU_KFD_DRIVER", "", "",
         "For tests: root of a user-space KFD driver (`tests/kfd/DRIVER.md`). Non-empty: the kfd "
         "backend reaches `/dev/kfd` and render nodes, and the amdgpu-drm backend render nodes, "
         "through that driver instead of the kernel. "
         "It must be owned by root (or the user criu runs as) and writable by no one else, as "
         "every directory above it.",
         kAllSources, CONFIG_FIELD(t.settings.kfdDriver)},
        {"kfd-sysfs-root", Path, "kfd_sysfs_root", "CRIU_AMDGPU_KFD_SYSFS_ROOT", "", "",
         "Root of the KFD sysfs topology. Empty: `/sys/class/kfd/kfd/topology`.", kAllSources,
         CONFIG_FIELD(t.settings.kfdSysfsRoot)},
        {"dev-root", Path, "dev_root", "CRIU_AMDGPU_DEV_ROOT", "", "",
         "Directory holding the device nodes (`kfd`, `dri/renderD*`). Empty: `/dev`.", kAllSources,
         CONFIG_FIELD(t.settings.devRoot)},
        {"log-level", LogLevel, "log_level", "CRIU_AMDGPU_LOG_LEVEL", "", "unset",
         "Log level of the plugin and the tool. Unset: criu's level inside criu, `warn` in the "
         "tool.",
         kAllSources, CONFIG_FIELD(t.settings.logLevel)},
        {"criu-abi", CriuAbi, "criu_abi", "CRIU_AMDGPU_CRIU_ABI", "", "",
         "The criu plugin ABI to assume instead of detecting the running criu's: which hooks it "
         "calls and with which signatures (criu-plugin-abi.md). Empty: detect it.",
         kAllSources, CONFIG_FIELD(t.settings.criuAbi)},
    };
}

#undef CONFIG_FIELD

template <typename Key> const OptionSpec* findBy(Key key, std::string_view wanted) {
    if (wanted.empty())
        return nullptr;
    for (const OptionSpec& spec : optionTable())
        if (spec.*key == wanted)
            return &spec;
    return nullptr;
}

template <typename Key> std::vector<std::string> collect(Key key) {
    std::vector<std::string> names;
    for (const OptionSpec& spec : optionTable())
        names.emplace_back(spec.*key);
    return names;
}

} // namespace

const char* sourceKindName(SourceKind kind) {
    switch (kind) {
    case SourceKind::Yaml:
        return "the YAML file";
    case SourceKind::OptionsFile:
        return "the options file";
    case SourceKind::Env:
        return "the environment";
    case SourceKind::PluginOption:
        return "a plugin option";
    }
    return "?";
}

const std::vector<OptionSpec>& optionTable() {
    static const std::vector<OptionSpec> table = buildTable();
    return table;
}

const OptionSpec* findOption(std::string_view name) {
    return findBy(&OptionSpec::name, name);
}
const OptionSpec* findOptionByYamlKey(std::string_view key) {
    return findBy(&OptionSpec::yamlKey, key);
}
const OptionSpec* findOptionByEnvName(std::string_view envName) {
    return findBy(&OptionSpec::envName, envName);
}
const OptionSpec* findOptionByLegacyEnv(std::string_view envName) {
    return findBy(&OptionSpec::legacyEnv, envName);
}

std::vector<std::string> optionNames() {
    return collect(&OptionSpec::name);
}
std::vector<std::string> optionYamlKeys() {
    return collect(&OptionSpec::yamlKey);
}
std::vector<std::string> optionEnvNames() {
    return collect(&OptionSpec::envName);
}

void assignOption(const OptionSpec& spec, OptionTarget& target, TypedValue value) {
    std::visit(
        [&](auto field) {
            using Field = std::remove_reference_t<decltype(field(target))>;
            field(target) = std::get<Field>(std::move(value));
        },
        spec.binding);
}

TypedValue readOption(const OptionSpec& spec, const OptionTarget& target) {
    // The bindings take a mutable target so one accessor serves reads and writes; reading does
    // not modify it.
    auto& mutableTarget = const_cast<OptionTarget&>(target);
    return std::visit([&](auto field) { return TypedValue(field(mutableTarget)); }, spec.binding);
}

OptionTarget defaultTarget(std::string defaultYamlPath, std::string defaultOptionsPath) {
    OptionTarget target;
    target.configPath = std::move(defaultYamlPath);
    target.optionsFile = std::move(defaultOptionsPath);
    return target;
}

} // namespace config

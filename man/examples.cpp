#include "examples.h"

namespace man {

std::vector<ConfigExample> configExamples() {
    return {
        {
            "Restore onto a machine with fewer GPUs",
            "A process that used two GPUs is restored on a machine with one. "
            "`force-single-gpu-restore` puts every GPU of the checkpoint onto one GPU of this "
            "machine; its memory must hold all the buffers, and compatibility checks that fail "
            "are logged as warnings instead of refusing the restore.",
            {{"CRIU_AMDGPU_FORCE_SINGLE_GPU_RESTORE", "1"}},
            "force_single_gpu_restore: true\n",
            "plugin-opt amdgpu:force-single-gpu-restore\n",
            "amdgpu.force-single-gpu-restore",
            "",
            "force-single-gpu-restore",
            "true",
        },
        {
            "Choose the destination GPUs",
            "The checkpoint used the GPUs with gpu_id 0x1a2b and 0x3c4d (`criu-amdgpu topology "
            "show` on the source machine lists gpu_ids). Put the first on this machine's GPU "
            "0x5e6f and the second on the GPU of render node renderD130; GPUs of the checkpoint "
            "that the map does not name are matched automatically. A map breaks rules only on "
            "request: each rule it breaks is logged as a warning.",
            {{"CRIU_AMDGPU_DEVICE_MAP", "0x1a2b=0x5e6f,0x3c4d=renderD130"}},
            "device_map:\n  0x1a2b: 0x5e6f\n  0x3c4d: renderD130\n",
            "plugin-opt amdgpu:device-map=0x1a2b=0x5e6f,0x3c4d=renderD130\n",
            "amdgpu.device-map=0x1a2b=0x5e6f,0x3c4d=renderD130",
            "Before restoring, `criu-amdgpu topology match --src SRC --dst DST` shows the mapping "
            "the plugin would use, with SRC and DST copies of /sys/class/kfd/kfd/topology of the "
            "two machines; it reads the same configuration as the plugin.",
            "device-map",
            "0x1a2b=0x5e6f,0x3c4d=renderD130",
        },
        {
            "A container that sees two GPUs",
            "A container was given /dev/kfd and the render nodes renderD129 and renderD131 of a "
            "host with eight GPUs, and the checkpointed process used two GPUs, 0x1a2b and 0x3c4d. "
            "criu, and the plugin inside it, run outside the container, so the configuration is "
            "the one of the machine where criu runs. Name the container's two GPUs by their "
            "render nodes, and the plugin restores onto exactly those. A container that sees "
            "only one GPU takes `force-single-gpu-restore` instead (a map names each GPU once).",
            {{"CRIU_AMDGPU_DEVICE_MAP", "0x1a2b=renderD129,0x3c4d=renderD131"}},
            "device_map:\n  - src: 0x1a2b\n    dst: renderD129\n  - src: 0x3c4d\n    dst: "
            "renderD131\n",
            "plugin-opt amdgpu:device-map=0x1a2b=renderD129,0x3c4d=renderD131\n",
            "amdgpu.device-map=0x1a2b=renderD129,0x3c4d=renderD131",
            "",
            "device-map",
            "0x1a2b=renderD129,0x3c4d=renderD131",
        },
    };
}

} // namespace man

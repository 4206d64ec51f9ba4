// criu-amdgpu image: show, verify, check, flatten or sign the images of a checkpoint directory.
#include "command.h"
#include "image_commands.h"

#include <memory>

namespace tools {
namespace {

/// Adds command `name` of `image`: DIR, --json, and the options `extra` adds; `usage` follows
/// DIR in its usage line.
cmdline::Command addImageCommand(cmdline::Program& program, cmdline::Command image,
                                 image::CheckArgs& a, const char* name, const char* summary,
                                 const char* details, const char* usage = "[--json]") {
    cmdline::Command c = program.addCommand(image, name, summary, details);
    c.addOption("DIR", a.dir, "the checkpoint's image directory (criu -D)").required();
    program.setUsage(c, std::string("DIR ") + usage);
    c.addFlag("--json", a.json, "print one JSON object instead of the text");
    return c;
}

void setup(cmdline::Program& program, cmdline::Command command) {
    auto a = std::make_shared<image::CheckArgs>();

    cmdline::Command show = addImageCommand(
        program, command, *a, "show", "decode every amdgpu image of a checkpoint",
        "Decodes the images of this project's backends and of CRIU's own amdgpu plugin with the "
        "readers the restore uses: the processes, their GPUs with the properties a restore "
        "compares, the buffer objects (size, domain, flags, GPU VA, dma-buf sharing), the queue "
        "and event counts, the recorded topology, which backend and plugin generation wrote "
        "them, and the files that are missing or left over.\n\n"
        "Exit status: 0 when every image decodes and every contents file is present, 2 when "
        "not (the problems are listed), 1 on bad input.");
    program.onRun(show, [a] { return image::runShow(a->dir, a->json); });

    cmdline::Command verify = addImageCommand(
        program, command, *a, "verify",
        "check every pages file against its image without restoring",
        "Checks each contents file the images call for (amdgpu-pages-*, amdgpu-drm-pages-*): "
        "its 8-byte size header (where the writer records the size there), its size, and the "
        "checksum the dump recorded (this project's backends record one; CRIU's plugin does "
        "not). Each problem names the file and the first bad byte offset (counted from the "
        "start of the file, header included); a checksum covers a whole file, so a mismatch "
        "names the range it covers.\n\n"
        "It also reads criu's own images of DIR to tell a dump that failed part-way: criu "
        "writes inventory.img last, its plugin list (criu 4.1+) says whether the dump used "
        "amdgpu_plugin, and each external file of files.img must have its amdgpu image "
        "(amdgpu-kfd-ID.img, amdgpu-renderD-ID.img or amdgpu-dmabuf_ID.img). Notes say what "
        "criu's images could not tell.\n\n"
        "Exit status: 0 when every file is sound, 2 when a file is missing, damaged or an image "
        "cannot be decoded, 1 on bad input (DIR unreadable, or without amdgpu images and "
        "nothing missing: the message says whether criu's images are there).\n\n"
        "An encrypted checkpoint (content-encryption) is read with --key (else the option "
        "content-private-key), the private key of the certificate it was dumped for: every frame "
        "of every contents file is authenticated, whether or not a checksum is recorded (an "
        "encrypted checkpoint records one for every contents file: one without is a problem), "
        "and a frame that is not the one the dump sealed there is named with its file and "
        "index. Without a key each encrypted contents file is a problem saying so. With a key, "
        "contents that are not encrypted (a checkpoint, or a parent, without amdgpu-seal.img; "
        "CRIU's pages files) are problems too, unless content-allow-plaintext is set.\n\n"
        "Where the option trusted-certificates is set, DIR is first checked as a restore "
        "checks it: a checkpoint not signed by one of those certificates, or whose files differ "
        "from what it signed (each file changed, added or removed is named), is a problem.");
    verify.addOption("--key", a->key, "the private key that opens an encrypted checkpoint")
        .typeName("PRIVATE_KEY");
    program.setUsage(verify, "DIR [--key PRIVATE_KEY] [--json]");
    program.onRun(verify, [a] { return image::runVerify(a->dir, a->json, a->key); });

    cmdline::Command check = addImageCommand(
        program, command, *a, "check",
        "say whether this machine would restore the checkpoint, and how",
        "A restore dry-run with the plugin's own code and options (YAML file, options file, "
        "environment): the backend it would choose, the GPU mapping, and the values compared. "
        "When it would not restore, each reason names the GPU, the rule, the values and the "
        "option that would relax it. With --topology the GPUs are matched against another "
        "machine's KFD sysfs tree (a copy of its /sys/class/kfd/kfd/topology) instead of this "
        "machine, and no backend is probed. With --dev the restored process is taken to see "
        "DEV_DIR as its /dev (the new pod's: kfd and the render nodes its device plugin gave "
        "it): only the GPUs whose render node is there are candidates.\n\n"
        "An encrypted checkpoint (content-encryption) would restore only with the private key "
        "that opens it: --key (else the option content-private-key) is tried on its key image "
        "and the verdict says whether it opens it.\n\n"
        "Where the option trusted-certificates is set, it would restore only a checkpoint "
        "signed by one of those certificates that holds what it signed (image sign).\n\n"
        "Exit status: 0 when it would restore, 2 when it would not, 1 on error.",
        "[--topology SYSFS_DIR] [--dev DEV_DIR] [--backend-dir DIR] [--key PRIVATE_KEY] [--json]");
    check.addOption("--key", a->key, "the private key that opens an encrypted checkpoint")
        .typeName("PRIVATE_KEY");
    check.addOption("--topology", a->topology, "match against this KFD sysfs tree")
        .typeName("SYSFS_DIR");
    check
        .addOption("--dev", a->dev,
                   "the restored process sees DEV_DIR as its /dev (option dev-root)")
        .typeName("DEV_DIR");
    check.addOption("--backend-dir", a->backendDir, "load the backends from DIR").typeName("DIR");
    program.onRun(check, [a] { return image::runCheck(*a); });

    auto out = std::make_shared<std::string>();
    cmdline::Command flatten = program.addCommand(
        command, "flatten", "make an incremental checkpoint self-contained",
        "Writes into OUT a copy of the checkpoint DIR that needs no parent: criu's images and "
        "the amdgpu images as they are, and the contents of every BO of an incremental image "
        "assembled from its chain (the newest checkpoint holding each chunk, checked against the "
        "BO's checksum) under the names a full dump gives them, with records that name no "
        "parent. OUT must not exist: it is made (with its parents) and written only as new "
        "files; when anything fails, OUT is removed again. DIR and its parents are only "
        "read.\n\n"
        "Exit status: 0 when OUT holds the whole checkpoint, 2 when the chain is broken or a "
        "BO's bytes do not match their checksum, 1 on bad input (DIR not incremental, OUT "
        "exists).");
    flatten.addOption("DIR", a->dir, "the incremental checkpoint's image directory").required();
    flatten.addOption("OUT", *out, "the directory to write the self-contained copy into")
        .required();
    program.setUsage(flatten, "DIR OUT");
    program.onRun(flatten, [a, out] { return image::runFlatten(a->dir, *out); });

    auto cert = std::make_shared<std::string>();
    cmdline::Command sign = program.addCommand(
        command, "sign", "sign a checkpoint as a dump with checkpoint-signing-key does",
        "Writes DIR/amdgpu-manifest.img: the name, size and SHA-256 of every file of DIR (criu's "
        "images and the amdgpu images; criu's logs, *.log, and its statistics, stats-dump and "
        "stats-restore, left out; a link, such as criu's parent link, by its target), with the "
        "certificate CERT, signed with KEY (RSA-PSS with SHA-256 for an RSA key of 2048 bits or "
        "more, ECDSA with SHA-256 for an EC key). A restore with the option "
        "trusted-certificates that lists CERT then accepts DIR as long as it holds exactly "
        "those files; a parent of an incremental checkpoint must be signed too. For checkpoints "
        "made without the option checkpoint-signing-key, or by a criu without DUMP_FINISH "
        "(4.2 and older). KEY must be readable by its owner alone; KEY, CERT and the "
        "directories above them must be root's and writable by no one else.\n\n"
        "Exit status: 0 when DIR is signed, 1 on bad input (a key that is not CERT's, a file "
        "that is not a regular file or link in DIR).");
    sign.addOption("DIR", a->dir, "the checkpoint's image directory (criu -D)").required();
    sign.addOption("--key", a->key, "the private key (else option checkpoint-signing-key)")
        .typeName("KEY");
    sign.addOption("--cert", *cert, "its certificate (else option checkpoint-signing-certificate)")
        .typeName("CERT");
    program.setUsage(sign, "DIR [--key KEY] [--cert CERT]");
    program.onRun(sign, [a, cert] { return image::runSign(a->dir, a->key, *cert); });
}

CommandRegistration reg("image", "show, verify, check, flatten or sign the images of a checkpoint",
                        &setup);

} // namespace
} // namespace tools

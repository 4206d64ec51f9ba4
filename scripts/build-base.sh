# Sourced by scripts/test.sh and scripts/demo.sh (from the checkout's top): sets BUILD_BASE, the
# directory the builds go in.
#
# The plugin loads backends, and reads configuration, only from paths that root owns (or the
# user running it) and no one else may write, every directory above them too
# (base/trusted_path.h); criu runs the plugin as root. So the builds' backend directories must
# pass that rule: files made from here on are writable by their owner only, and a checkout in a
# directory that fails it (a user's home when the scripts run as root, or a directory others may
# write) builds in a directory of root's instead, which the script says.
umask 022
untrusted_above() { # DIR: the first directory from DIR up to / that fails the rule, if any
    local d=$1 owner mode
    while :; do
        read -r owner mode < <(stat -c '%u %a' "$d")
        if [ "$owner" != "$(id -u)" ] && [ "$owner" != 0 ]; then echo "$d"; return; fi
        if (((8#$mode & 8#022) != 0 && ((8#$mode & 8#1000) == 0 || owner != 0))); then
            echo "$d"
            return
        fi
        [ "$d" = / ] && return
        d=$(dirname "$d")
    done
}
BUILD_BASE=$PWD
if bad=$(untrusted_above "$PWD") && [ -n "$bad" ]; then
    BUILD_BASE=/var/tmp/criu-amdgpu-build
    install -d -m 0755 "$BUILD_BASE"
    echo "== $bad is not root's alone, and the plugin loads backends only from directories that" \
        "are: building in $BUILD_BASE" >&2
fi

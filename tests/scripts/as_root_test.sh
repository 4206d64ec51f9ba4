#!/usr/bin/env bash
# scripts/as-root.sh as the README's commands use it, checked as root and as an ordinary user
# (uid 65534 through setpriv; so the test itself runs as root, as ctest does here):
#  - as root the script goes on, with its arguments, and sudo is never asked;
#  - as a user with sudo, the script runs again through `sudo --preserve-env -- SCRIPT ARGS`;
#  - as a user without sudo, it stops with a message that says to run it as root.
set -euo pipefail
AS_ROOT=${1:?usage: as_root_test.sh PATH/TO/as-root.sh}
[ "$(id -u)" = 0 ] || { echo "FAIL: this test drops to another user, so it must start as root" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/as-root-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

cp "$AS_ROOT" "$WORK/as-root.sh"
cat > "$WORK/script.sh" <<'SCRIPT'
#!/usr/bin/env bash
source "$(dirname "$0")/as-root.sh" "$@"
echo "running as $(id -u) with: $*"
SCRIPT
# Two PATHs of their own: the tools the script uses, and in one of them a sudo that only says how
# it was called (whether this machine has a sudo does not matter).
for dir in with-sudo without-sudo; do
    mkdir "$WORK/$dir"
    for tool in bash env id dirname basename; do ln -s "$(command -v "$tool")" "$WORK/$dir/$tool"; done
done
cat > "$WORK/with-sudo/sudo" <<'SUDO'
#!/bin/sh
echo "sudo called with: $*"
SUDO
chmod -R a+rX "$WORK"
chmod 755 "$WORK/script.sh" "$WORK/with-sudo/sudo"
as_user() { # PATH_DIR COMMAND...: as uid/gid 65534 with only PATH_DIR in PATH
    local dir=$1; shift
    setpriv --reuid=65534 --regid=65534 --clear-groups "$dir/env" -i PATH="$dir" HOME=/ "$@"
}

out=$(PATH="$WORK/with-sudo" "$WORK/script.sh" a "b c")
[ "$out" = "running as 0 with: a b c" ] || fail "as root: '$out'"

out=$(as_user "$WORK/with-sudo" "$WORK/script.sh" a "b c")
[ "$out" = "sudo called with: --preserve-env -- $WORK/script.sh a b c" ] ||
    fail "as a user with sudo: '$out'"

rc=0
out=$(as_user "$WORK/without-sudo" "$WORK/script.sh" a 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "as a user without sudo: exit $rc, output '$out'"
[ "$out" = "script.sh: needs root, and sudo is not installed: run it as root" ] ||
    fail "as a user without sudo: '$out'"
echo "as-root.sh: root goes on, a user goes through sudo, without sudo it says to run as root"

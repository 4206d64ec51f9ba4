# Sourced first by the scripts that need root (`source "$(dirname "$0")/as-root.sh" "$@"`, before
# any cd): as root it does nothing; otherwise it runs the calling script again through sudo with
# the same arguments and environment, or, where there is no sudo, says how to run it.
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then
        exec sudo --preserve-env -- "$0" "$@"
    fi
    echo "$(basename "$0"): needs root, and sudo is not installed: run it as root" >&2
    exit 1
fi

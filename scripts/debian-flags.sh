# Sourced by scripts/test.sh: DEBIAN_FLAGS, the CMake arguments that compile the project with the
# flags the Debian package is built with (dpkg-buildflags with debian/rules' hardening=+all, the
# build type None, as debhelper's cmake build system passes them), so the package's build in the
# release stage (scripts/build-deb.sh) finds every object of the code it ships in ccache instead of
# compiling the project a second time, and the tests run the code as it ships (-O2, hardening,
# assertions on). ccache leaves -ffile-prefix-map out of its hash, so the copy's other path hits.
DEBIAN_FLAGS=()
# debhelper runs the build with LC_ALL=C.UTF-8 (dh_auto_build's `LC_ALL=C.UTF-8 ninja`), and ccache
# hashes LC_ALL: the normal build is run with the same (scripts/test.sh).
DEBIAN_LC_ALL=C.UTF-8
debian_flag() { DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"; }
if command -v dpkg-buildflags >/dev/null; then
    cppflags=$(debian_flag CPPFLAGS) # debhelper appends them to CFLAGS and CXXFLAGS for CMake
    ldflags=$(debian_flag LDFLAGS)
    DEBIAN_FLAGS=(-DCMAKE_BUILD_TYPE=None
        "-DCMAKE_C_FLAGS=$(debian_flag CFLAGS) $cppflags" "-DCMAKE_CXX_FLAGS=$(debian_flag CXXFLAGS) $cppflags"
        "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" "-DCMAKE_SHARED_LINKER_FLAGS=$ldflags"
        "-DCMAKE_MODULE_LINKER_FLAGS=$ldflags")
    unset cppflags ldflags
fi
unset -f debian_flag

# Sanitizer builds (clang only), chosen with CRIU_AMDGPU_SANITIZE:
#   address  ASan + UBSan (LeakSanitizer included), plus libFuzzer's coverage instrumentation so
#            that one build serves both the sanitized test suite and the fuzz targets (tests/fuzz).
#            The ASan runtime is shared (-shared-libsan): the plugin is loaded into a criu that
#            is not instrumented, and runs there with the runtime preloaded (tests/e2e/sanitizer.sh).
#   thread   TSan, for the per-GPU threads (kfd, amdgpu-drm, content streaming).
set(CRIU_AMDGPU_SANITIZE "" CACHE STRING "Sanitizer build: empty, 'address' (ASan+UBSan+fuzz targets) or 'thread' (TSan)")
set(CRIU_AMDGPU_FUZZ OFF)
set(CRIU_AMDGPU_FUZZ_INSTRUMENT_FLAGS "")

if(CRIU_AMDGPU_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CRIU_AMDGPU_SANITIZE needs clang (configure with CC=clang CXX=clang++)")
  endif()
  set(sanitize_flags -fno-omit-frame-pointer -fno-sanitize-recover=all)
  if(CRIU_AMDGPU_SANITIZE STREQUAL "address")
    # The shared runtime (-shared-libsan): modules link with --no-undefined, and one runtime
    # serves the executable and every module it loads, criu included (preloaded there).
    list(APPEND sanitize_flags -shared-libsan -fsanitize=address,undefined)
    add_compile_options(${sanitize_flags})
    # libFuzzer's coverage instrumentation only where a fuzz target's code lies: the libraries
    # (CMakeLists.txt puts it on their folders) and the fuzz targets (tests/fuzz). Tests, tools
    # and the criu frontend are not fuzzed: instrumented, a test file took 16 to 23% longer to
    # compile (clang 14, -O0: arguments_test 11.3 -> 13.4 s, device_dump_test 8.6 -> 11.2 s),
    # and every comparison they make called into the runtime.
    set(CRIU_AMDGPU_FUZZ_INSTRUMENT_FLAGS -fsanitize=fuzzer-no-link)
    add_link_options(${sanitize_flags})
    set(CRIU_AMDGPU_FUZZ ON)
  elseif(CRIU_AMDGPU_SANITIZE STREQUAL "thread")
    # The static runtime in each test executable, which exports it to the modules it loads:
    # clang 14's shared TSan runtime crashes before main on this project's Linux 6.18 machines
    # (a two-line program with -shared-libsan dies with SIGSEGV; the static runtime runs it).
    # The modules therefore leave the runtime's symbols undefined.
    list(APPEND sanitize_flags -fsanitize=thread)
    set(CRIU_AMDGPU_NO_UNDEFINED "")
    add_compile_options(${sanitize_flags})
    add_link_options(${sanitize_flags})
  else()
    message(FATAL_ERROR "CRIU_AMDGPU_SANITIZE='${CRIU_AMDGPU_SANITIZE}': expected address or thread")
  endif()
  # Line tables are all a sanitizer's stack needs (file:line of each frame); full debug info only
  # makes the build slower (clang takes the last -g option).
  add_compile_options(-gline-tables-only)
  # The directory of the shared sanitizer runtimes, for rpaths and LD_PRELOAD.
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir
                  OUTPUT_VARIABLE CRIU_AMDGPU_SANITIZER_RUNTIME_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(CMAKE_BUILD_RPATH "${CRIU_AMDGPU_SANITIZER_RUNTIME_DIR}")
  set(CMAKE_INSTALL_RPATH "${CRIU_AMDGPU_SANITIZER_RUNTIME_DIR}")
endif()

# In the ASan build, the e2e tests run criu (not instrumented) with the ASan runtime preloaded,
# so that the sanitized plugin and backends load into it and are checked there. Each criu run
# writes its reports into a directory of its own; a report fails that run (exit 99).
if(CRIU_AMDGPU_SANITIZE STREQUAL "address" AND CRIU_AMDGPU_CRIU)
  set(CRIU_AMDGPU_REAL_CRIU "${CRIU_AMDGPU_CRIU}")
  set(CRIU_AMDGPU_ASAN_RUNTIME "${CRIU_AMDGPU_SANITIZER_RUNTIME_DIR}/libclang_rt.asan-x86_64.so")
  # Built by tests/e2e (asan_criu_exit_shim.c).
  set(CRIU_AMDGPU_ASAN_CRIU_SHIM "${CMAKE_BINARY_DIR}/sanitizer/criu_exit_shim.so")
  configure_file("${CMAKE_CURRENT_LIST_DIR}/criu-asan.sh.in" "${CMAKE_BINARY_DIR}/sanitizer/criu" @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                 WORLD_READ WORLD_EXECUTE)
  # A normal variable shadows the cache entry for every folder below (tests/e2e).
  set(CRIU_AMDGPU_CRIU "${CMAKE_BINARY_DIR}/sanitizer/criu")
endif()

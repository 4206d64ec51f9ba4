# The fd audit (included from tests/e2e/CMakeLists.txt): a plugin that records criu's fds when it
# starts and when it ends, and a scenario that dumps and restores, and injects every dump and
# restore fault, with it loaded beside amdgpu_plugin.so.
criu_amdgpu_test_plugin(e2e_fd_audit_plugin "${CMAKE_CURRENT_LIST_DIR}/fd_audit_plugin.c" fd_audit
                        "${CMAKE_CURRENT_BINARY_DIR}/fd-audit")
target_link_libraries(e2e_fd_audit_plugin PRIVATE ${CMAKE_DL_LIBS})
# The scenario runs in the normal build only (tests/e2e/CMakeLists.txt says why); the plugin is
# built in every build, as bench.soak loads it too.
if(NOT CRIU_AMDGPU_SANITIZE)
  add_test(NAME e2e.fd_audit COMMAND bash "${CMAKE_CURRENT_LIST_DIR}/scenario_fd_audit.sh")
  set_tests_properties(e2e.fd_audit PROPERTIES LABELS e2e TIMEOUT 900
    ENVIRONMENT "BUILD_DIR=${CMAKE_BINARY_DIR};CRIU=${CRIU_AMDGPU_CRIU};FD_AUDIT_PLUGIN=$<TARGET_FILE:e2e_fd_audit_plugin>")
endif()

# The matrix's other cells on the user-space KFD driver (included from tests/e2e/CMakeLists.txt,
# called by tests/kfd/driver where the driver is built: with libhsakmt, not under the
# sanitizers): each scenario_kfd_driver_NAME.sh an entry e2e.kfd_driver_NAME.criu-VERSION with the
# criu that runs every scenario, taking turns with every test running the thunk
# (CRIU_AMDGPU_HSAKMT_LOCK, as e2e_kfd_driver_scenarios says why). And the render-node process
# on the amdgpu-drm backend in the cells that mean something there (scenario_kfd_driver_render.sh,
# RENDER_VARIANT): e2e.kfd_driver_render_VARIANT.criu-VERSION, with criu 4.3 only, as the plain
# e2e.kfd_driver_render; and e2e.kfd_driver_render_prime (scenario_kfd_driver_render_prime.sh).
function(e2e_kfd_driver_matrix_scenarios)
  set(cells subset dump_faults restore_faults criu_killed hostile runc podman k8s)
  e2e_criu_version("${CRIU_AMDGPU_CRIU}" version)
  foreach(cell ${cells})
    set(name e2e.kfd_driver_${cell}.criu-${version})
    add_test(NAME ${name} COMMAND bash "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/scenario_kfd_driver_${cell}.sh")
    set_tests_properties(${name} PROPERTIES LABELS e2e TIMEOUT 120 RESOURCE_LOCK "${CRIU_AMDGPU_HSAKMT_LOCK}"
      ENVIRONMENT "BUILD_DIR=${CMAKE_BINARY_DIR};CRIU=${CRIU_AMDGPU_CRIU};CRIU_VERSION=${version};CONTAINERD_DIR=${CRIU_AMDGPU_CONTAINERD_DIR}")
    # The container cells take turns with the mock's container scenarios too (E2E_CONTAINERS).
    if(cell MATCHES "^(runc|podman|k8s)$")
      set_tests_properties(${name} PROPERTIES RESOURCE_LOCK "${CRIU_AMDGPU_HSAKMT_LOCK};e2e_containers")
    endif()
  endforeach()
  if(version MATCHES "^4\\.3")
    foreach(variant other_gpus subset dump_faults encrypted)
      set(name e2e.kfd_driver_render_${variant}.criu-${version})
      add_test(NAME ${name} COMMAND bash "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/scenario_kfd_driver_render.sh")
      set_tests_properties(${name} PROPERTIES LABELS e2e TIMEOUT 60 RESOURCE_LOCK "${CRIU_AMDGPU_HSAKMT_LOCK}"
        ENVIRONMENT "BUILD_DIR=${CMAKE_BINARY_DIR};CRIU=${CRIU_AMDGPU_CRIU};CRIU_VERSION=${version};RENDER_VARIANT=${variant}")
    endforeach()
    # A BO two render-node processes share through a dma-buf (scenario_kfd_driver_render_prime.sh).
    set(name e2e.kfd_driver_render_prime.criu-${version})
    add_test(NAME ${name} COMMAND bash "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/scenario_kfd_driver_render_prime.sh")
    set_tests_properties(${name} PROPERTIES LABELS e2e TIMEOUT 60 RESOURCE_LOCK "${CRIU_AMDGPU_HSAKMT_LOCK}"
      ENVIRONMENT "BUILD_DIR=${CMAKE_BINARY_DIR};CRIU=${CRIU_AMDGPU_CRIU};CRIU_VERSION=${version}")
  endif()
endfunction()

# The fake libdrm_amdgpu every backend's tests share (included by each test folder that needs it;
# defined once).
if(NOT TARGET criu_amdgpu_fake_libdrm AND TARGET criu_amdgpu_sdma)
  add_library(criu_amdgpu_fake_libdrm STATIC "${CMAKE_CURRENT_LIST_DIR}/fake_libdrm.cpp")
  target_include_directories(criu_amdgpu_fake_libdrm PUBLIC "${CMAKE_CURRENT_LIST_DIR}")
  target_link_libraries(criu_amdgpu_fake_libdrm PUBLIC criu_amdgpu_sdma)
  target_compile_options(criu_amdgpu_fake_libdrm PRIVATE ${CRIU_AMDGPU_WARNINGS})
endif()

# criu_amdgpu_layer(NAME SOURCES src... LINKS lib...): one of the libraries the device HAL is
# built from (base/, content/, topology/, formats/, coordination/, datapath/, hal/). Its public
# headers are in include/<folder>/ of the folder that calls this, and only the targets that link
# it find them; LINKS names the layers below it and nothing above (docs/architecture.md), so an
# include that runs up a floor finds no header.
# A source file in the folder's src/ that SOURCES does not list stops the configuration: every
# file belongs to the library of its concern by name, and none is silently left out.
function(criu_amdgpu_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;LINKS" ${ARGN})
  file(GLOB present RELATIVE "${CMAKE_CURRENT_SOURCE_DIR}" CONFIGURE_DEPENDS
       "${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp" "${CMAKE_CURRENT_SOURCE_DIR}/src/*.c")
  foreach(file ${present})
    if(NOT file IN_LIST L_SOURCES)
      message(FATAL_ERROR "${CMAKE_CURRENT_SOURCE_DIR}/${file} is in no library: list it in the "
                          "SOURCES of ${name}, or move it to the library of its concern")
    endif()
  endforeach()
  add_library(${name} STATIC ${L_SOURCES})
  target_include_directories(${name} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/include")
  target_link_libraries(${name} PUBLIC ${L_LINKS})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${CRIU_AMDGPU_WARNINGS}>)
  # Each layer is also part of the HAL's one shared library (hal/CMakeLists.txt), whose export
  # list (hal/hal_library.map) names what the plugin's core and the backends call: its symbols
  # are compiled visible so that the list can export them (only the list's reach the dynamic
  # symbol table; programs and tests that link the archive export nothing), and calls within the
  # library are bound inside it (-fno-semantic-interposition here, -Bsymbolic at its link).
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET default)
  target_compile_options(${name} PRIVATE -fno-semantic-interposition)
endfunction()

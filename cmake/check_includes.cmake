# cmake -DREADME=... -DFOLDER=... -DPROJECT=... -P check_includes.cmake: every `#include "P/..."`
# of a source or header under FOLDER whose prefix P is a library of the project included by its
# folder's name (a folder P/ of the project with include/P/: the HAL's libraries, settings/,
# config/, cmdline/) must be allowed by README's "**May include:**" paragraph, which names either
# the folder (`P/`) or the header itself (`P/name.h`); otherwise it fails naming the file, the
# line and the README. Run by the build whenever a file of FOLDER or its README changes
# (may_include.cmake: criu_amdgpu_may_include).
include("${CMAKE_CURRENT_LIST_DIR}/readme_rules.cmake")
criu_amdgpu_may_include_text("${README}" allowed)
file(GLOB_RECURSE files "${FOLDER}/*.h" "${FOLDER}/*.cpp" "${FOLDER}/*.c")
set(refused "")
foreach(file IN LISTS files)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"/]+/[^\"]+\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[^\"]*\"(([^\"/]+)/[^\"]+)\".*$" "\\1" header "${line}")
    string(REGEX REPLACE "/.*$" "" prefix "${header}")
    if(NOT IS_DIRECTORY "${PROJECT}/${prefix}/include/${prefix}")
      continue() # another library's prefix (sdma/, kfd/, mockgpu/): held by its links
    endif()
    string(FIND "${allowed}" "`${prefix}/`" named_folder)
    string(FIND "${allowed}" "`${header}`" named_header)
    if(named_folder EQUAL -1 AND named_header EQUAL -1)
      file(RELATIVE_PATH shown "${PROJECT}" "${file}")
      list(APPEND refused "${shown}: #include \"${header}\"")
    endif()
  endforeach()
endforeach()
if(refused)
  file(RELATIVE_PATH readme "${PROJECT}" "${README}")
  list(JOIN refused "\n  " shown)
  message(FATAL_ERROR "includes that the \"May include\" of ${readme} does not allow (name the "
                      "folder or the header there, or take the include out):\n  ${shown}")
endif()

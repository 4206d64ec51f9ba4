# criu_amdgpu_may_include(README TARGET...): each TARGET (a library of the folder README describes)
# links and adds include directories only from the folders README's "**May include:**" paragraph
# names, each written there as `folder/` (`hal/`, `backends/sdma/`); otherwise the configuration
# stops, naming the target, the folder and the README. Its own folder (and those in it), the
# build tree and what is outside the project (libdrm, Threads) are not checked. Every library of
# the project exports only its include/ (include/<prefix>/...) to what links it, so a target's
# links are all its code can include: with this check, the "May include" a README states is the
# build's rule.
# Checked at the end of the configuration, when every target is defined.
# The includes of the folder's files are held to the same paragraph at build time
# (check_includes.cmake): an include of a library of the project by its folder's name (`formats/`,
# `datapath/`) must be allowed there, by folder or by header, before any of TARGET compiles.
include("${CMAKE_CURRENT_LIST_DIR}/readme_rules.cmake")
function(criu_amdgpu_may_include readme)
  foreach(target IN LISTS ARGN)
    # A deferred call's arguments are read when it runs: the values are written into it now.
    cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${PROJECT_SOURCE_DIR}]] CALL
                   criu_amdgpu_check_may_include [[${readme}]] [[${target}]])")
  endforeach()
  cmake_path(GET readme PARENT_PATH folder)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${folder}/*.h" "${folder}/*.cpp" "${folder}/*.c")
  file(RELATIVE_PATH shown "${PROJECT_SOURCE_DIR}" "${folder}")
  string(MAKE_C_IDENTIFIER "${shown}" id)
  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/${id}_includes.stamp")
  set(script "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/check_includes.cmake")
  add_custom_command(OUTPUT "${stamp}"
    COMMAND "${CMAKE_COMMAND}" "-DREADME=${readme}" "-DFOLDER=${folder}"
            "-DPROJECT=${PROJECT_SOURCE_DIR}" -P "${script}"
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS ${files} "${readme}" "${script}"
            "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/readme_rules.cmake"
    COMMENT "Checking the includes of ${shown}/ against its README" VERBATIM)
  add_custom_target(${id}_includes DEPENDS "${stamp}")
  foreach(target IN LISTS ARGN)
    add_dependencies(${target} ${id}_includes)
  endforeach()
endfunction()

# The folder of the project a path is in ("" outside it or in the build tree): the path relative
# to the project, without a trailing /include or /include/<prefix>.
function(criu_amdgpu_folder_of path out)
  set(folder "")
  cmake_path(NORMAL_PATH path)
  cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${path}" NORMALIZE in_build)
  cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${path}" NORMALIZE in_project)
  if(in_project AND NOT in_build)
    file(RELATIVE_PATH folder "${PROJECT_SOURCE_DIR}" "${path}")
    string(REGEX REPLACE "/include(/[^/]+)?$" "" folder "${folder}")
  endif()
  set(${out} "${folder}" PARENT_SCOPE)
endfunction()

function(criu_amdgpu_check_may_include readme target)
  criu_amdgpu_may_include_text("${readme}" allowed)

  get_target_property(own_dir ${target} SOURCE_DIR)
  criu_amdgpu_folder_of("${own_dir}" own)
  set(used "")
  get_target_property(links ${target} LINK_LIBRARIES)
  foreach(lib IN LISTS links)
    if(TARGET ${lib})
      get_target_property(imported ${lib} IMPORTED)
      if(NOT imported)
        get_target_property(dir ${lib} SOURCE_DIR)
        criu_amdgpu_folder_of("${dir}" folder)
        list(APPEND used "${folder}|links ${lib}")
      endif()
    endif()
  endforeach()
  get_target_property(dirs ${target} INCLUDE_DIRECTORIES)
  foreach(dir IN LISTS dirs)
    if(NOT dir MATCHES "^\\$<")
      criu_amdgpu_folder_of("${dir}" folder)
      list(APPEND used "${folder}|adds the include directory ${dir}")
    endif()
  endforeach()
  foreach(entry IN LISTS used)
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 folder)
    list(GET entry 1 how)
    if(folder STREQUAL "" OR folder STREQUAL own OR folder MATCHES "^${own}/")
      continue() # outside the project, or the target's own folder or one inside it
    endif()
    string(FIND "${allowed}" "`${folder}/`" named)
    if(named EQUAL -1)
      file(RELATIVE_PATH shown "${PROJECT_SOURCE_DIR}" "${readme}")
      message(FATAL_ERROR "${target} ${how} (${folder}/), which the \"May include\" of ${shown} "
                          "does not name: name `${folder}/` there, or take it out of ${target}")
    endif()
  endforeach()
endfunction()

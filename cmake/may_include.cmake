# criu_amdgpu_may_include(README TARGET...): each TARGET (a library of the folder README describes)
# links and adds include directories only from the folders README's "**May include:**" paragraph
# names, each written there as `folder/` (`hal/`, `backends/sdma/`); otherwise the configuration
# stops, naming the target, the folder and the README. Its own folder (and those in it), the
# build tree and what is outside the project (libdrm, Threads) are not checked. Every library of
# the project exports only its include/ (include/<prefix>/...) to what links it, so a target's
# links are all its code can include: with this check, the "May include" a README states is the
# build's rule.
# Checked at the end of the configuration, when every target is defined.
function(criu_amdgpu_may_include readme)
  foreach(target IN LISTS ARGN)
    # A deferred call's arguments are read when it runs: the values are written into it now.
    cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${PROJECT_SOURCE_DIR}]] CALL
                   criu_amdgpu_check_may_include [[${readme}]] [[${target}]])")
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
  file(READ "${readme}" text)
  string(FIND "${text}" "**May include:**" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "${readme} has no \"**May include:**\" paragraph, which ${target} is "
                        "checked against")
  endif()
  string(SUBSTRING "${text}" ${start} -1 text)
  string(FIND "${text}" "\n\n" end)
  string(SUBSTRING "${text}" 0 ${end} allowed)
  string(REPLACE "\n" " " allowed "${allowed}")

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

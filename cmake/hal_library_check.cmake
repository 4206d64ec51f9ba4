# cmake -DMODULE=FILE -DNM=nm -P hal_library_check.cmake: fails when the module FILE (a backend or
# the plugin's core, linked with criu_amdgpu_link_hal_library) exports a symbol of the HAL's
# namespaces: a function or object of the layers that libcriu-amdgpu-hal.so does not export
# (hal/library/hal_library.map), which the linker then copied into the module from the static
# layers, so that criu would hold that code twice.
execute_process(COMMAND "${NM}" -D -C --defined-only "${MODULE}" OUTPUT_VARIABLE symbols
                RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${NM} -D ${MODULE} failed")
endif()
string(REGEX MATCHALL "[^\n]* [A-Za-z] (vtable for |typeinfo for |typeinfo name for )?(base|content|topology|formats|coordination|datapath|hal|settings)::[^\n]*"
       copied "${symbols}")
if(copied)
  list(JOIN copied "\n  " shown)
  message(FATAL_ERROR "${MODULE} holds its own copy of code libcriu-amdgpu-hal.so does not export "
                      "(add it to hal/library/hal_library.map):\n  ${shown}")
endif()

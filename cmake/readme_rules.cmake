# criu_amdgpu_may_include_text(README OUT): the text of README's "**May include:**" paragraph, up
# to its end or to "**Must not include:**", on one line; a fatal error when README has none.
function(criu_amdgpu_may_include_text readme out)
  file(READ "${readme}" text)
  string(FIND "${text}" "**May include:**" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "${readme} has no \"**May include:**\" paragraph, which its libraries are "
                        "checked against")
  endif()
  string(SUBSTRING "${text}" ${start} -1 text)
  string(FIND "${text}" "\n\n" end)
  string(SUBSTRING "${text}" 0 ${end} allowed)
  string(FIND "${allowed}" "**Must not include:**" must_not)
  if(NOT must_not EQUAL -1)
    string(SUBSTRING "${allowed}" 0 ${must_not} allowed)
  endif()
  string(REPLACE "\n" " " allowed "${allowed}")
  set(${out} "${allowed}" PARENT_SCOPE)
endfunction()

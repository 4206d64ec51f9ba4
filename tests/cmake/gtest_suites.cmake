# Run after a gtest binary is built (criu_amdgpu_gtest, CRIU_AMDGPU_TEST_PER_SUITE): lists its
# tests and writes OUT, a CTest file of one entry per test suite (`SUITE.*` as a gtest filter),
# named SUITE, in the label LABEL (and taking turns with the tests of the resource lock LOCK, if
# one is given). The sanitizer builds register their tests so: a process of an
# instrumented binary takes 0.1 to 0.25 s to start, which over about 1,800 one-test processes
# was about 6 minutes of CI's test time.
# Each entry writes the suite's gtest XML report into XML_DIR (scripts/check-skips.py --gtest-xml
# reads the tests it skipped).
#   cmake -D BIN=... -D OUT=... -D LABEL=... -D XML_DIR=... [-D LOCK=...] -P gtest_suites.cmake
include("${CMAKE_CURRENT_LIST_DIR}/test_costs.cmake")
execute_process(COMMAND "${BIN}" --gtest_list_tests OUTPUT_VARIABLE listed RESULT_VARIABLE rc
                TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --gtest_list_tests failed (${rc}):\n${listed}")
endif()
string(REPLACE "\n" ";" lines "${listed}")
set(body "")
foreach(line IN LISTS lines)
  # A suite's line starts in the first column and ends with '.', maybe before a comment
  # ("Prefix/Suite.  # TypeParam = ..."); its tests' lines are indented.
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    # Each suite's own XML report (XML_DIR/BINARY.SUITE.xml), read for its skipped tests.
    get_filename_component(bin_name "${BIN}" NAME)
    string(REPLACE "/" "_" xml_name "${bin_name}.${suite}")
    string(APPEND body "add_test([==[${suite}]==] [==[${BIN}]==] [==[--gtest_filter=${suite}.*]==] "
           "[==[--gtest_output=xml:${XML_DIR}/${xml_name}.xml]==])\n"
           "set_tests_properties([==[${suite}]==] PROPERTIES LABELS [==[${LABEL}]==])\n")
    criu_amdgpu_test_cost("${suite}" cost)
    if(cost)
      string(APPEND body "set_tests_properties([==[${suite}]==] PROPERTIES COST ${cost})\n")
    endif()
    if(LOCK)
      string(APPEND body "set_tests_properties([==[${suite}]==] PROPERTIES RESOURCE_LOCK [==[${LOCK}]==])\n")
    endif()
  endif()
endforeach()
file(WRITE "${OUT}" "${body}")

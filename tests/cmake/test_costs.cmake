# How long the long tests take, in seconds, as CI's stages measured them on 2 cores (the normal
# build for e2e, bench and zdtm; the ASan build for its per-suite entries). CTest starts tests in
# descending COST where it has no timings of its own, as in a cold CI: without these, it started
# them in the order they were declared, so zdtm's two 100 s runs began last and could leave one
# core idle at the end. An e2e entry is named without its `.criu-VERSION`. A rough figure is
# enough: only the order matters, and CTest's own timings replace these after the first run.
set(CRIU_AMDGPU_TEST_COSTS
    bench.kfd_contents=50 zdtm.plugin=35 zdtm.mock=101 e2e.random_dumps=90 e2e.incremental=17
    bench.encryption=33 bench.soak=31 bench.load=15 e2e.fd_audit=27 bench.mock_throughput=27
    e2e.criu_killed=25 bench.compression=21 e2e.k8s_new_pod_other_gpu=20 e2e.k8s_unused_gpu=16
    e2e.k8s_two_of_four=16 e2e.misconfigured=15 bench.parallel_restore=15 e2e.ranks_faults=14
    e2e.k8s_new_node=14 e2e.encrypted=13 bench.content_holes=12 e2e.no_gpu=12 e2e.compressed=12
    bench.content_increment=11 e2e.ranks_incremental=10 e2e.podman_leave_running=10 e2e.runc=10
    bench.plugin_overhead=9 e2e.ranks_pidfd=9 e2e.runc_remap=9 e2e.ranks=9 e2e.runc_default_conf=8
    e2e.podman_export_import=8 e2e.hostile_restore=8 bench.vs_upstream=26
    FrameKindsAndSizes/DirectWrite=45 MatchBudget=26 Sealed=22 DrmFaultSweep=22
    ContentLaneMemory=22 MockWorkload=19 ToolArguments=18 LargeSizes=17 ToolMock=16
    ToolTopologyJson=12 EveryCall/DumpFault=11 MockBackendTest=11
    EncryptedOrCompressed/WriteBehind=11)

# criu_amdgpu_test_cost(NAME OUT): the cost of the test NAME from the table above, or "" when it
# has none.
function(criu_amdgpu_test_cost name out_var)
  string(REGEX REPLACE "\\.criu-[^.]+(\\.[0-9]+)*$" "" key "${name}")
  set(cost "")
  foreach(entry IN LISTS CRIU_AMDGPU_TEST_COSTS)
    if(entry MATCHES "^(.+)=([0-9]+)$" AND CMAKE_MATCH_1 STREQUAL key)
      set(cost "${CMAKE_MATCH_2}")
      break()
    endif()
  endforeach()
  set(${out_var} "${cost}" PARENT_SCOPE)
endfunction()

# criu_amdgpu_apply_test_costs(): gives every test of the calling folder that the table names its
# COST (set_tests_properties reaches only the tests of the folder that declared them).
function(criu_amdgpu_apply_test_costs)
  get_directory_property(tests TESTS)
  foreach(name IN LISTS tests)
    criu_amdgpu_test_cost("${name}" cost)
    if(cost)
      set_tests_properties("${name}" PROPERTIES COST "${cost}")
    endif()
  endforeach()
endfunction()

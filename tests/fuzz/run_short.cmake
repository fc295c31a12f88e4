# The short run of one fuzz target (ctest): every seed input, then RUNS executions in all from
# seed 1. New inputs go to a scratch directory (WORK/new), never into the seed corpus; a
# crash, leak, hang (-timeout) or sanitizer report fails the test and leaves the input in
# WORK/ (crash-*, timeout-*, oom-*), to be added to the corpus once fixed (docs/fuzzing.md).
foreach(v TARGET CORPUS WORK RUNS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_short.cmake needs -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/new)
execute_process(
  COMMAND ${TARGET} -seed=1 -runs=${RUNS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${WORK}/ ${WORK}/new ${CORPUS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TARGET} failed (${rc}); the input is in ${WORK}/")
endif()

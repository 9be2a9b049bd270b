# Runs a command and checks its exit status and output; a CTest helper for
# tests that must see `artel` fail in a specific, readable way.
#
#   cmake -DCOMMAND=<exe;args> -DEXPECT_RC=<n|nonzero> -DEXPECT_1=<regex> [-DEXPECT_2=...] -P check_output.cmake
#
# Each EXPECT_<i> (up to 9) must match the combined stdout+stderr.
separate_arguments(cmd UNIX_COMMAND "${COMMAND}")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(EXPECT_RC STREQUAL "nonzero")
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected a non-zero exit status, got 0")
  endif()
elseif(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "expected exit status ${EXPECT_RC}, got ${rc}")
endif()
foreach(i RANGE 1 9)
  if(DEFINED EXPECT_${i})
    string(REGEX MATCH "${EXPECT_${i}}" found "${all}")
    if(NOT found)
      message(FATAL_ERROR "output does not match: ${EXPECT_${i}}")
    endif()
  endif()
endforeach()

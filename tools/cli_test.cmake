# One CLI test (tools/CMakeLists.txt): runs EXE with ARGS (a shell-style string), then checks
# the exit status (RC) and that stdout + stderr match REGEX and, if given, do not match
# NOT_REGEX.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${EXE}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(NOT "${rc}" STREQUAL "${RC}")
  message(FATAL_ERROR "exit status ${rc}, expected ${RC}")
endif()
if(DEFINED REGEX AND NOT "${REGEX}" STREQUAL "" AND NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match '${REGEX}'")
endif()
if(DEFINED NOT_REGEX AND NOT "${NOT_REGEX}" STREQUAL "" AND all MATCHES "${NOT_REGEX}")
  message(FATAL_ERROR "the output matches '${NOT_REGEX}'")
endif()

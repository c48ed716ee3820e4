# The libraries read no environment variable (docs/DESIGN.md, "Configuration: read once, at the
# top"). A program's main takes one copy of the environment (process_environment(),
# engine/core/environment.h) and turns it into options objects that it passes down.
#   cmake -DROOT=<repository> -P scripts/check-no-env-reads.cmake      (ctest: no_env_reads)
# Fails, listing each offending line, when
#   1. a source of engine/, recorder/ or viz-server/ (tests aside) calls getenv, secure_getenv,
#      setenv, unsetenv, putenv, clearenv or reads environ, except engine/core/environment.cpp,
#      the one read;
#   2. a library source calls process_environment(): only the programs may, i.e. recorder/programs
#      (the mains and the minfer CLI in recorder/programs/cli) and viz-server/main.cpp.
# Comments (from // on) are not code and are not checked.
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<repository root> -P check-no-env-reads.cmake")
endif()

set(kOneRead "engine/core/environment.cpp")
set(kProgramsRegex "^(recorder/programs/|viz-server/main\\.cpp$|engine/core/environment\\.(h|cpp)$)")
set(kEnvCallRegex "(^|[^A-Za-z0-9_])(secure_getenv|getenv|setenv|unsetenv|putenv|clearenv|environ)([^A-Za-z0-9_]|$)")
set(kReaderRegex "(^|[^A-Za-z0-9_])process_environment[ \t]*\\(")

file(GLOB_RECURSE files RELATIVE "${ROOT}"
     "${ROOT}/engine/*.cpp" "${ROOT}/engine/*.h" "${ROOT}/engine/*.cu" "${ROOT}/engine/*.cuh"
     "${ROOT}/recorder/*.cpp" "${ROOT}/recorder/*.h"
     "${ROOT}/viz-server/*.cpp" "${ROOT}/viz-server/*.h")
list(SORT files)
set(checked 0)
set(found "")
foreach(f IN LISTS files)
  if(f MATCHES "(^|/)tests/")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  file(STRINGS "${ROOT}/${f}" lines)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "//.*$" "" code "${line}")
    if(code MATCHES "${kEnvCallRegex}" AND NOT f STREQUAL kOneRead)
      string(STRIP "${line}" shown)
      string(APPEND found "  ${f}: reads the environment (${CMAKE_MATCH_2}): ${shown}\n")
    endif()
    if(code MATCHES "${kReaderRegex}" AND NOT f MATCHES "${kProgramsRegex}")
      string(STRIP "${line}" shown)
      string(APPEND found "  ${f}: a library calls process_environment(): ${shown}\n")
    endif()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "no-env-reads: no sources under ${ROOT} (wrong ROOT?)")
endif()
if(found)
  message(FATAL_ERROR "no-env-reads: these sources read the environment; read it once in the "
                      "program's main (process_environment(), engine/core/environment.h) and pass "
                      "options down (EngineOptions, RecorderOptions, ...):\n${found}")
endif()
message(STATUS "no-env-reads: ${checked} sources, none reads the environment outside ${kOneRead} and the programs")

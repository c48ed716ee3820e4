# The folders draw the data's one-way path (docs/DESIGN.md, "The programs' home"): the engine
# includes nothing of the recorder, the programs or the server; the recorder's library includes
# nothing of the programs and no backend.
#   cmake -DROOT=<repository> -P scripts/check-layers.cmake      (ctest: layers)
# Fails, listing each offending line, when
#   1. a source of engine/ (its tests too) includes a header that is not the engine's: every
#      #include "p" must name engine/p (or a file beside the includer, or a generated engine
#      header, p.in), except the one test-only use below;
#   2. a source of the recorder's library (recorder/* and recorder/format/*, not programs/ or
#      tests/) includes the programs' cli/ or a backend (engine/cpu/, engine/cuda/): the recorder sees the observer
#      interface, the graph and the probes' result types, never how or where a kernel runs.
# Comments (from // on) are not code and are not checked.
cmake_minimum_required(VERSION 3.25)  # if(IN_LIST)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<repository root> -P check-layers.cmake")
endif()

# test_generator checks its golden files with the recorder's SHA-256 (engine/CMakeLists.txt).
set(kAllowed "engine/tests/test_generator.cpp:sha256.h")
set(kIncludeRegex "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")

file(GLOB_RECURSE engine_files RELATIVE "${ROOT}"
     "${ROOT}/engine/*.cpp" "${ROOT}/engine/*.h" "${ROOT}/engine/*.cu" "${ROOT}/engine/*.cuh")
file(GLOB recorder_files RELATIVE "${ROOT}" "${ROOT}/recorder/*.cpp" "${ROOT}/recorder/*.h"
     "${ROOT}/recorder/format/*.cpp" "${ROOT}/recorder/format/*.h")
list(SORT engine_files)
list(SORT recorder_files)
set(found "")
set(checked 0)

foreach(f IN LISTS engine_files)
  math(EXPR checked "${checked} + 1")
  get_filename_component(dir "${ROOT}/${f}" DIRECTORY)
  file(STRINGS "${ROOT}/${f}" lines REGEX "#[ \t]*include")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "//.*$" "" code "${line}")
    if(NOT code MATCHES "${kIncludeRegex}")
      continue()
    endif()
    set(p "${CMAKE_MATCH_1}")
    if(EXISTS "${ROOT}/engine/${p}" OR EXISTS "${ROOT}/engine/${p}.in" OR EXISTS "${dir}/${p}")
      continue()
    endif()
    if("${f}:${p}" IN_LIST kAllowed)
      continue()
    endif()
    string(APPEND found "  ${f}: the engine includes \"${p}\", which is not the engine's\n")
  endforeach()
endforeach()

foreach(f IN LISTS recorder_files)
  math(EXPR checked "${checked} + 1")
  file(STRINGS "${ROOT}/${f}" lines REGEX "#[ \t]*include")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "//.*$" "" code "${line}")
    if(NOT code MATCHES "${kIncludeRegex}")
      continue()
    endif()
    set(p "${CMAKE_MATCH_1}")
    if(p MATCHES "^(cli|cpu|cuda)/")
      string(APPEND found "  ${f}: the recorder's library includes \"${p}\" (the programs' or a backend's)\n")
    endif()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "layers: no sources under ${ROOT} (wrong ROOT?)")
endif()
if(found)
  message(FATAL_ERROR "layers: these includes run against the data's path (engine <- recorder <- "
                      "programs, viz-server; docs/DESIGN.md, \"The programs' home\"):\n${found}")
endif()
message(STATUS "layers: ${checked} sources; the engine includes only its own headers, the recorder's library no program or backend")

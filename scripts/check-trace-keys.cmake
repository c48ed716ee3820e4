# The trace's field names have one home in C++, recorder/format/trace_keys.h (docs/DESIGN.md,
# "The trace contract's homes"), and it agrees with the schema.
#   cmake -DROOT=<repository> -P scripts/check-trace-keys.cmake      (ctest: trace_keys)
# Fails, listing each problem, when
#   1. a name of a group that says "schema: <pointer>" is not a property of that object of
#      traces/schema/minfer-trace-v3.schema.json (a misspelt or removed field);
#   2. the schema has a top-level field the `document` group does not name (one was added);
#   3. a source of viz-server or of the recorder (recorder/*.cpp|h and recorder/programs/; tests
#      aside, and recorder/format/, the home itself) spells a `document` or `step` name as a
#      string of its own, e.g. find("steps") or key == "nodes", instead of reading it from
#      trace_keys.h. What the code builds for its own answers is not a trace read and is allowed:
#      an object {"steps", n} and a field written, out["steps"] = x. A line that spells such a
#      string for another reason says why in a comment starting "trace-keys:", e.g.
#      `if (op == "logits")  // trace-keys: an op's name`. Comments (from // on) are not code and
#      are not checked.
cmake_minimum_required(VERSION 3.25)  # string(JSON)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<repository root> -P check-trace-keys.cmake")
endif()

set(kHeader "recorder/format/trace_keys.h")
set(kSchema "traces/schema/minfer-trace-v3.schema.json")
set(kScannedGroups document step)
set(kScannedDirs viz-server recorder)
# Not scanned: the format's home, which spells the names, and tests, which spell them on purpose.
set(kExcluded "^recorder/format/" "(^|/)tests/"
    # its option names (nodes=, steps=, kernels=) are the --trace options', not the trace's fields
    "^recorder/recorder_options.cpp$")

file(READ "${ROOT}/${kSchema}" schema)
file(STRINGS "${ROOT}/${kHeader}" header_lines)
set(found "")
set(group "")
set(pointer "")
set(document_names "")
set(scanned_names "")
set(n_names 0)
foreach(line IN LISTS header_lines)
  if(line MATCHES "^namespace ([a-z0-9_]+) {(.*// schema: ([^ ]+))?")
    set(group "${CMAKE_MATCH_1}")
    set(pointer "${CMAKE_MATCH_3}")
  elseif(line MATCHES "^}  // namespace")
    set(group "")
    set(pointer "")
  elseif(line MATCHES "inline constexpr char (k[A-Za-z0-9]+)\\[\\] = \"([^\"]*)\";")
    set(name "${CMAKE_MATCH_2}")
    math(EXPR n_names "${n_names} + 1")
    if(pointer)
      string(REPLACE "/" ";" path "${pointer}")
      list(FILTER path EXCLUDE REGEX "^$")
      string(JSON ignored ERROR_VARIABLE err TYPE "${schema}" ${path} "${name}")
      if(err)
        string(APPEND found "  ${kHeader}: ${group}::${CMAKE_MATCH_1} = \"${name}\" is not a field at ${pointer} of ${kSchema}\n")
      endif()
    endif()
    if(group STREQUAL "document")
      list(APPEND document_names "${name}")
    endif()
    if(group IN_LIST kScannedGroups)
      list(APPEND scanned_names "${name}")
    endif()
  endif()
endforeach()
if(n_names EQUAL 0)
  message(FATAL_ERROR "trace_keys: no names in ${ROOT}/${kHeader} (wrong ROOT?)")
endif()

string(JSON n_top LENGTH "${schema}" properties)
math(EXPR last "${n_top} - 1")
foreach(i RANGE ${last})
  string(JSON field MEMBER "${schema}" properties ${i})
  if(NOT field IN_LIST document_names)
    string(APPEND found "  ${kSchema}: the top-level field \"${field}\" has no name in ${kHeader} (namespace document)\n")
  endif()
endforeach()

set(globs "")
foreach(d IN LISTS kScannedDirs)
  list(APPEND globs "${ROOT}/${d}/*.cpp" "${ROOT}/${d}/*.h")
endforeach()
file(GLOB_RECURSE sources RELATIVE "${ROOT}" ${globs})
list(SORT sources)
set(checked 0)
foreach(f IN LISTS sources)
  set(excluded FALSE)
  foreach(x IN LISTS kExcluded)
    if(f MATCHES "${x}")
      set(excluded TRUE)
    endif()
  endforeach()
  if(excluded)
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  # Read as text and split by hand: a list element holding ';' or an unbalanced '[' would not
  # be one line.
  file(READ "${ROOT}/${f}" text)
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REPLACE "[" "<lbracket>" text "${text}")
  string(REPLACE "]" "<rbracket>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "// *trace-keys: *[^ ]")  # says why its strings are not the trace's fields
      continue()
    endif()
    string(REGEX REPLACE "//.*$" "" code "${line}")
    foreach(name IN LISTS scanned_names)
      if(NOT code MATCHES "\"${name}\"")
        continue()
      endif()
      # {"steps", n}: the server's own answer; {"steps", "nodes"} is a list of names, checked
      string(REGEX REPLACE "{ *\"${name}\" *, *([^\" ])" "\\1" reads "${code}")
      # out["steps"] = x: a field of the code's own answer, written (not ==)
      string(REGEX REPLACE "<lbracket> *\"${name}\" *<rbracket> *=([^=]|$)" "<rbracket> =\\1" reads "${reads}")
      if(reads MATCHES "\"${name}\"")
        string(STRIP "${line}" shown)
        string(REPLACE "<lbracket>" "[" shown "${shown}")
        string(REPLACE "<rbracket>" "]" shown "${shown}")
        string(REPLACE "<semicolon>" ";" shown "${shown}")
        string(APPEND found "  ${f}:${n}: spells the trace's \"${name}\" (use trace_keys.h): ${shown}\n")
      endif()
    endforeach()
  endforeach()
endforeach()
list(JOIN kScannedDirs " and " dirs)
if(checked EQUAL 0)
  message(FATAL_ERROR "trace_keys: no sources under ${ROOT} in ${dirs} (wrong ROOT?)")
endif()

if(found)
  message(FATAL_ERROR "trace_keys: the trace's field names have one home, ${kHeader}, which names "
                      "fields of ${kSchema} (docs/DESIGN.md, \"The trace contract's homes\"):\n${found}")
endif()
list(LENGTH scanned_names n_scanned)
message(STATUS "trace_keys: ${n_names} names agree with the schema; ${checked} sources of ${dirs} spell none of the ${n_scanned} document and step names")

# Writes OUT: a C++ source holding the text of the JSON schema IN as trace_schema_<NAME>_text()
# (cmake -P script).
file(READ ${IN} text)
set(delim "SCHEMA_JSON")
file(WRITE ${OUT}.tmp
  "// Generated from ${IN}; do not edit.\n"
  "#include \"format/trace_schema.h\"\n"
  "namespace minfer::trace {\n"
  "const char* trace_schema_${NAME}_text() {\n"
  "  return R\"${delim}(${text})${delim}\";\n"
  "}\n"
  "}  // namespace minfer::trace\n")
file(RENAME ${OUT}.tmp ${OUT})

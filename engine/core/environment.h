// The process environment, read in one place. A program's main (recorder/programs/*, the minfer
// CLI in recorder/programs/cli, viz-server/main.cpp) takes one copy with
// process_environment() and turns it into options objects (EngineOptions, trace::RecorderOptions,
// the trace readers' cap, the digest cache) that it passes down; the libraries below read no
// environment (the no_env_reads test checks their sources). Tests build an Environment by hand
// instead of setting variables.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace minfer {

// Variable name -> value. An empty value is kept (MINFER_TRACE_BINS= is an error, not unset);
// the typed lookups below read it as unset.
using Environment = std::map<std::string, std::string>;

// A copy of the process environment (where a name occurs twice, the first, as getenv): the one
// read of it in engine, recorder and viz-server.
Environment process_environment();

// The variable's value; "" when unset.
std::string env_text(const Environment& env, const std::string& name);
// Whether the variable is set to exactly `value` (the switches: MINFER_MMQ=0, MINFER_NO_CUPTI=1).
bool env_equals(const Environment& env, const std::string& name, const std::string& value);
// The variable as a number through the one parser (core/parse_number.h): an Error names the
// variable, the range and the text given. Unset or empty: `unset`.
int64_t env_int(const Environment& env, const char* name, int64_t lo, int64_t hi, int64_t unset);
double env_number(const Environment& env, const char* name, double lo, double hi, double unset);

}  // namespace minfer

// A finished step (step_record.h) as bytes and back, for the journal of a pipelined run
// (step_journal.h): a memory copy of its numbers, ~10x faster than formatting its JSON, so a
// step is safe on disk ~0.1 ms after it ended, before its token is shown. Host byte order:
// a journal is read back on the machine that wrote it (docs/trace-format.md, "Journal").
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "format/step_record.h"

namespace minfer::trace {

// d's bytes, written into buf from its start (grown when needed: reuse it, and from the second
// step on encoding is plain copies); the view is into buf.
std::string_view encode_step(const StepData& d, std::vector<char>& buf);
// The step encoded in [p, p + n); throws Error naming `what` when the bytes are not one.
StepData decode_step(const char* p, size_t n, const std::string& what);

}  // namespace minfer::trace

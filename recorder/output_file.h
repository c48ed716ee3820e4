// The one way the tools write an output file or standard output. A regular (or not yet
// existing) target is written beside (a new file of its own name, exclusive_file.h) and renamed
// over, so a failed write never leaves half a file over a good one; a device, FIFO or socket (-o /dev/null, -o /dev/stdout) is written in
// place, never renamed over (as root that would replace /dev/null with a regular file). Every
// write, flush and close is checked: a full disk or a closed pipe is an error, not a silent
// exit 0.
#pragma once
#include <string>
#include <string_view>

namespace minfer::trace {

// True when `path` names something that exists and is not a regular file (symlinks followed).
bool is_special_file(const std::string& path);

// Checks, before anything is written, that `path` can take a file: not a directory, and a
// character device takes a write (probed with a write of 0 bytes: /dev/full refuses it,
// /dev/null takes it). Missing and regular files, FIFOs and sockets are not probed. Throws
// Error naming the path.
void check_output_target(const std::string& path);

// Writes `text` to `path` ("-" = standard output). Throws Error naming the path and the reason.
void write_output_file(const std::string& path, std::string_view text);

// Puts the finished file `tmp` (a regular file the caller wrote) at `path`: renamed over a
// regular or missing target; copied into a special one, then removed. Throws Error naming
// `path`; on failure `tmp` stays where it is (the caller decides whether it is worth keeping).
void move_into_place(const std::string& tmp, const std::string& path);

// Flushes std::cout and stdout and throws Error("standard output: write failed: ...") when
// anything written to them was lost. Tools call it before exiting 0.
void finish_stdout();

}  // namespace minfer::trace

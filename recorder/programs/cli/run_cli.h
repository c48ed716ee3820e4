#pragma once
namespace minfer {
// The whole `minfer` program; returns the exit code. Errors are thrown as minfer::Error.
int run_cli(int argc, char** argv);
}  // namespace minfer

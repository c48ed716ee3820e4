// minfer: run a GGUF model on a prompt (see cli/cli_args.cpp for the options).
#include <cstdio>
#include <exception>

#include "cli/cli_args.h"
#include "cli/run_cli.h"
#include "core/error.h"

int main(int argc, char** argv) {
  try {
    return minfer::run_cli(argc, argv);
  } catch (const minfer::Error& e) {
    std::fprintf(stderr, "minfer: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer: internal error: %s\n", e.what());
    return 3;
  }
}

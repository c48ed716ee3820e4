# Shared by scripts/run-gguf-fuzz.sh and scripts/run-trace-fuzz.sh (sourced, not run):
# configure the AddressSanitizer + UBSan build and run test programs under it.
# Expects $root, $build (MINFER_ASAN_BUILD, default build-asan) and $jobs to be set.

# Configures $build with MINFER_SANITIZE=ON (CPU only); prints the log and exits on failure.
# -O1 -g1 (line tables): the sanitizers' reports keep their file:line stacks, and the build
# costs half of -O2 -g (12 of its heaviest files: 154 s against 300 s on one core; CI time,
# issue 31). -O1 is what AddressSanitizer's documentation recommends.
asan_configure() {
  echo "== configure $build (MINFER_SANITIZE=ON, -O1 -g1)"
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DMINFER_SANITIZE=ON -DMINFER_CUDA=OFF >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log" >&2
    exit 1
  }
}

# asan_run_tests WHO MAX_ALLOC_MB TEST...: runs each test program from $build/tests; any
# sanitizer report is fatal and an allocation above MAX_ALLOC_MB is a failure, not a slow
# success. Returns 1 (after naming them) when any program failed.
asan_run_tests() {
  local who=$1 max_mb=$2 t start
  shift 2
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:max_allocation_size_mb=$max_mb:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
  local failed=()
  for t in "$@"; do
    echo "== run $t${ASAN_RUN_NOTE:+ ($ASAN_RUN_NOTE)}"
    start=$SECONDS
    if (cd "$build" && "$build/tests/$t" --gtest_brief=1); then
      echo "   $t passed in $((SECONDS - start)) s"
    else
      failed+=("$t")
    fi
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "$who: FAILED: ${failed[*]}" >&2
    return 1
  fi
}

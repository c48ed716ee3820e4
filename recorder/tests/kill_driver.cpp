// Records a synthetic run slowly (one step every DELAY_MS) so a test can kill -9 it mid-run.
// usage: kill_driver TRACE_PATH N_DECODE DELAY_MS
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/error.h"
#include "recorder.h"
#include "synthetic.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: kill_driver TRACE_PATH N_DECODE DELAY_MS\n";
    return 2;
  }
  try {
    minfer::trace::RecorderOptions o;
    o.path = argv[1];
    minfer::trace::Recorder rec(o, minfer::synth::meta(), minfer::synth::token_text);
    minfer::synth::Run r;
    r.n_decode = std::atoi(argv[2]);
    const int delay = std::atoi(argv[3]);
    r.after_step = [&](int step) {
      std::cout << "step " << step << " written" << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    };
    minfer::synth::run(rec, r);
    rec.finish({{"load_ms", 1.0}});
  } catch (const minfer::Error& e) {
    std::cerr << "kill_driver: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// Programmatic dependent launch (PDL), host switch: plain C++ (the tests read it with g++). The
// device helpers, the launcher and the rule every PDL kernel follows are in pdl.cuh.
#pragma once

namespace minfer::cuda {

// Whether launch_pdl asks for programmatic stream serialization. On by default; CudaBackend sets
// it from CudaOptions::pdl (off with MINFER_PDL=0; launch_settings.h). Read at launch time: a
// CUDA graph keeps what it was captured with.
bool pdl_enabled();
// Tests flip it too (PDL on vs off must give bit-identical results). Not meant to change while
// another thread launches.
void set_pdl_enabled(bool on);

}  // namespace minfer::cuda

// Whether a usable GPU is here (driver, device, Hopper or newer), and what it is called.
#pragma once
#include <string>

namespace minfer::cuda {

// True when device 0 can run minfer's sm_90 kernels; otherwise false and *why says what is
// missing (no driver, no device, compute capability too old).
bool device_usable(std::string* why);
// "NVIDIA H200 (sm_90, 139.8 GiB, driver 13.0)"; call only when device_usable().
std::string device_description();
// The current device's SM count (read once; the launchers size their grids by it).
int sm_count();
// Whether the current device is compute capability 9.0 exactly (H100/H200), the one target of
// the sm_90a kernels (wgmma); read once.
bool device_is_sm90();

}  // namespace minfer::cuda

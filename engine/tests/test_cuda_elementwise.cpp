// GPU elementwise kernels (engine/cuda/elementwise.cu) against their CPU twins (engine/cpu/ops.h)
// on random inputs with planted outliers, several sizes (odd ones and a ragged float4 tail), and
// with pointers offset by one float (the scalar path).
// Tolerance: every element within 1e-6 relative of the CPU result (add, mul, bias add and the
// row copy are exact; silu/swiglu differ only by expf's last bit on the two sides).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/ops.h"
#include "cuda/elementwise.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

constexpr double kRel = 1e-6;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  minfer::testing::expect_close(got, want, kRel, what);
}

// Host vector placed `offset` floats into a device buffer (offset 1: not 16-byte aligned).
struct Placed {
  cuda::DeviceBuffer buf;
  float* ptr;
};
Placed place(const std::vector<float>& h, size_t offset) {
  std::vector<float> padded(offset, 1.0f);
  padded.insert(padded.end(), h.begin(), h.end());
  Placed p{to_device(padded), nullptr};
  p.ptr = p.buf.as<float>() + offset;
  return p;
}
Placed placed_poison(size_t n, size_t offset) {
  Placed p{poisoned((n + offset) * sizeof(float)), nullptr};
  p.ptr = p.buf.as<float>() + offset;
  return p;
}
std::vector<float> read(const Placed& p, size_t n, size_t offset) {
  auto h = to_host<float>(p.buf, n + offset);
  return std::vector<float>(h.begin() + static_cast<long>(offset), h.end());
}

const int64_t kSizes[] = {1, 3, 4, 7, 1000, 4099, 896 * 5 + 3};

using BinaryGpu = void (*)(const float*, const float*, float*, int64_t, cudaStream_t);
using BinaryCpu = void (*)(const float*, const float*, float*, int64_t);

void check_binary(const char* name, BinaryGpu gpu, BinaryCpu cpu) {
  uint32_t seed = 1;
  for (int64_t n : kSizes)
    for (size_t off : {0, 1}) {
      const auto a = random_floats(static_cast<size_t>(n), seed++, 2.0f);
      const auto b = random_floats(static_cast<size_t>(n), seed++, 2.0f);
      std::vector<float> want(static_cast<size_t>(n));
      cpu(a.data(), b.data(), want.data(), n);
      auto da = place(a, off), db = place(b, off);
      auto dy = placed_poison(static_cast<size_t>(n), off);
      gpu(da.ptr, db.ptr, dy.ptr, n, nullptr);
      expect_close(read(dy, static_cast<size_t>(n), off), want,
                   std::string(name) + " n=" + std::to_string(n) + " offset=" + std::to_string(off));
    }
}

}  // namespace

TEST(CudaElementwise, Add) {
  MINFER_REQUIRE_GPU();
  check_binary("add", cuda::add, cpu::add);
}

TEST(CudaElementwise, Mul) {
  MINFER_REQUIRE_GPU();
  check_binary("mul", cuda::mul, cpu::mul);
}

TEST(CudaElementwise, Swiglu) {
  MINFER_REQUIRE_GPU();
  check_binary("swiglu", cuda::swiglu, cpu::swiglu);
}

TEST(CudaElementwise, Silu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 100;
  for (int64_t n : kSizes)
    for (size_t off : {0, 1}) {
      const auto x = random_floats(static_cast<size_t>(n), seed++, 4.0f);
      std::vector<float> want(static_cast<size_t>(n));
      cpu::silu(x.data(), want.data(), n);
      auto dx = place(x, off);
      auto dy = placed_poison(static_cast<size_t>(n), off);
      cuda::silu(dx.ptr, dy.ptr, n, nullptr);
      expect_close(read(dy, static_cast<size_t>(n), off), want, "silu n=" + std::to_string(n) + " offset=" + std::to_string(off));
    }
}

TEST(CudaElementwise, AddInPlace) {  // the residual add writes over its first input
  MINFER_REQUIRE_GPU();
  const int64_t n = 4099;
  const auto a = random_floats(n, 7), b = random_floats(n, 8);
  std::vector<float> want(n);
  cpu::add(a.data(), b.data(), want.data(), n);
  auto da = to_device(a), db = to_device(b);
  cuda::add(da.as<float>(), db.as<float>(), da.as<float>(), n, nullptr);
  expect_close(to_host<float>(da, n), want, "add in place");
}

TEST(CudaElementwise, AddBias) {
  MINFER_REQUIRE_GPU();
  struct Shape {
    int64_t rows, cols;
  };
  uint32_t seed = 200;
  for (Shape sh : {Shape{1, 896}, Shape{5, 7}, Shape{3, 4099}, Shape{17, 128}, Shape{2, 1}})
    for (size_t off : {0, 1}) {
      const size_t n = static_cast<size_t>(sh.rows * sh.cols);
      const auto x = random_floats(n, seed++), bias = random_floats(static_cast<size_t>(sh.cols), seed++);
      std::vector<float> want(n);
      cpu::add_bias(x.data(), bias.data(), want.data(), sh.rows, sh.cols);
      auto dx = place(x, off), dbias = place(bias, off);
      auto dy = placed_poison(n, off);
      cuda::add_bias(dx.ptr, dbias.ptr, dy.ptr, sh.rows, sh.cols, nullptr);
      expect_close(read(dy, n, off), want,
                   "add_bias " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " offset=" + std::to_string(off));
    }
}

TEST(CudaElementwise, CopyRow) {
  MINFER_REQUIRE_GPU();
  for (int64_t cols : {int64_t{896}, int64_t{7}, int64_t{151936}}) {
    const int64_t rows = 5;
    const auto x = random_floats(static_cast<size_t>(rows * cols), static_cast<uint32_t>(cols));
    auto dx = to_device(x);
    for (int64_t row : {int64_t{0}, int64_t{3}, rows - 1}) {
      auto dy = poisoned(static_cast<size_t>(cols) * sizeof(float));
      cuda::copy_row(dx.as<float>(), row, cols, dy.as<float>(), nullptr);
      const std::vector<float> want(x.begin() + row * cols, x.begin() + (row + 1) * cols);
      expect_close(to_host<float>(dy, static_cast<size_t>(cols)), want,
                   "copy_row cols=" + std::to_string(cols) + " row=" + std::to_string(row));
    }
  }
}

TEST(CudaElementwise, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(64);
  try {
    cuda::add(d.as<float>(), d.as<float>(), d.as<float>(), -1, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cuda::add_bias(d.as<float>(), nullptr, d.as<float>(), 1, 4, nullptr), Error);
}

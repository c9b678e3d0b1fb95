// Device-machine probe (gpu_check.sh step `probe`): the host encode_scale and plain 4/6 scale of
// a sub-normal amax, compiled with the build's host flags, against values worked out by hand.
#include <cstdio>
#include <xmmintrin.h>

#include "cuda/quantize/quantize_block.cuh"

int main() {
  volatile float va = 1e-38f, vb = 3.75f;
  const float a = va, b = vb;
  const f46::cuda::GlobalScale g = f46::cuda::global_scale(a, 448.0f);
  std::printf("mxcsr %x  amax %a  s_enc %a (want 0x1.fffffep+127)  s_dec %a\n", _mm_getcsr(), a,
              g.s_enc, g.s_dec);
  std::printf("plain all6 scale %02x all4 %02x gradient %02x (want 7e 7e 7e)\n",
              f46::cuda::plain_scale<f46::cuda::QuantMode::kAll6>(b, g),
              f46::cuda::plain_scale<f46::cuda::QuantMode::kAll4>(b, g),
              f46::cuda::plain_scale<f46::cuda::QuantMode::kGradient>(b, g));
  return 0;
}

// Quantization kernels for bf16 input (explicit instantiation; see quantize_launch.h).
#include "cuda/quantize/quantize_launch_impl.cuh"

namespace f46::cuda {
template void launch_quantize<Bf16>(const QuantizeParams&, const QuantizeLaunch&, cudaStream_t);
}  // namespace f46::cuda

// Instantiation: BF16 grouped GEMM with FP32 output.
#include "grouped_bf16_gemm_config.h"

namespace f46::cuda::gemm_detail {
void launch_cutlass_grouped_f32(const Meta& m, int groups, const ScheduleOptions& so, void* ws,
                                int device, int sm_count, cudaStream_t stream) {
  launch_cutlass_grouped<float>(m, groups, so, ws, device, sm_count, stream);
}
}  // namespace f46::cuda::gemm_detail

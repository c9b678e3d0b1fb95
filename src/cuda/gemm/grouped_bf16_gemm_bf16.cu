// Instantiation: BF16 grouped GEMM with BF16 output (round to nearest even, N10).
#include "grouped_bf16_gemm_config.h"

namespace f46::cuda::gemm_detail {
void launch_cutlass_grouped_bf16(const Meta& m, int groups, const ScheduleOptions& so, void* ws,
                                 int device, int sm_count, cudaStream_t stream) {
  launch_cutlass_grouped<cutlass::bfloat16_t>(m, groups, so, ws, device, sm_count, stream);
}
}  // namespace f46::cuda::gemm_detail

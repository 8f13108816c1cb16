// ts_cuda_gemm.cuh — (filled in by its op family)
#pragma once

// ts_cuda_attn.cuh — (filled in by its op family)
#pragma once

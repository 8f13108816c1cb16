// ts_cuda_rows.cuh — (filled in by its op family)
#pragma once

/* gemm_f32_example.c — hand-written model of the C that Tessera's emitter produces for an f32
 * GEMM schedule point: C[M,N] = A[M,K] B[K,N], row-major. The emitter writes exactly this shape
 * with the TS_* macros replaced by the point's values; here they are defaults overridable by -D,
 * which is how bench/prims_gemm sweeps configurations and tests/test-cpu-prims checks several.
 *
 * BLIS loop nest: jc (NC columns of B, the packed KCxNC block lives in L3)
 *                 -> pc (KC deep; the first pass stores, later ones accumulate)
 *                 -> ic (MC rows; the packed MCxKC block of A lives in L2)
 *                 -> jr (NR) -> ir (MR): one micro-kernel call per MRxNR tile.
 * Threads: one parallel region around the nest (no fork/join per block). B panels are packed
 * cooperatively into one shared buffer; the ic x jr tile loop is flattened and split statically
 * so that both threads get the same number of tiles whatever M / MC is (with a plain parallel
 * ic loop, 1024 / 96 = 10.7 blocks on 2 threads idles one thread 1/11 of the time). Each thread
 * packs the A block of every ic its slice touches into its own buffer: at most one extra
 * MCxKC pack per thread per pc step.
 */
#ifndef TS_VEC
#define TS_VEC 8 /* floats per vector: 8 = AVX2 ymm */
#endif
#include "ts_cpu_prims.h"

#include <stdint.h>

#ifndef TS_MR
#define TS_MR 6 /* 6x16: 12 ymm accumulators + 2 B + 1 broadcast = 15 of 16 registers */
#endif
#ifndef TS_NR
#define TS_NR 16
#endif
#ifndef TS_UNROLL
#define TS_UNROLL 8 /* k steps per loop trip; measured 0.88-0.99x OpenBLAS vs 0.76-0.84x with 4 */
#endif
#ifndef TS_BK
#define TS_BK 256 /* KC: a 256x16 B panel is 16 KiB, half of L1d, next to the 6 KiB A panel */
#endif
#ifndef TS_BM
#define TS_BM 144 /* MC: the 144x256 A block is 144 KiB of the 512 KiB L2 */
#endif
#ifndef TS_BN
#define TS_BN 4080 /* NC: the 256x4080 B block is 4 MiB, well inside the 32 MiB L3 */
#endif
#ifndef TS_THREADS
#define TS_THREADS 2
#endif

TS_DEFINE_UKR_F32(ukr, TS_MR, TS_NR, TS_VEC, TS_UNROLL);

void ts_gemm_example(void *const *bufs, const int64_t *ints, const double *floats);

void
ts_gemm_example(void *const *bufs, const int64_t *ints, const double *floats)
{
  (void)floats;
  const float *A = bufs[0];
  const float *B = bufs[1];
  float *C = bufs[2];
  const int64_t M = ints[0], N = ints[1], K = ints[2];
  const int64_t lda = K, ldb = N, ldc = N;

  /* Shared B block: KC x round_up(min(NC, N), NR). */
  const int64_t nc_max = ts_round_up_i64(ts_min_i64(TS_BN, N), TS_NR);
  const int64_t kc_max = ts_min_i64(TS_BK, K);
  float *Bbuf = ts_cpu_alloc(sizeof(float) * (size_t)(kc_max * nc_max));
  if (!Bbuf)
    return;
  int failed = 0;

#pragma omp parallel num_threads(TS_THREADS)
  {
    const int64_t mc_max = ts_round_up_i64(ts_min_i64(TS_BM, M), TS_MR);
    float *Abuf = ts_cpu_alloc(sizeof(float) * (size_t)(mc_max * kc_max));
    if (!Abuf) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp barrier
    int stop;
#pragma omp atomic read
    stop = failed;

    for (int64_t jc = 0; jc < N && !stop; jc += TS_BN) {
      const int64_t nc = ts_min_i64(TS_BN, N - jc);
      const int64_t n_jr = ts_ceil_div_i64(nc, TS_NR);
      for (int64_t pc = 0; pc < K; pc += TS_BK) {
        const int64_t kc = ts_min_i64(TS_BK, K - pc);
        const int accumulate = pc > 0;

#pragma omp for schedule(static)
        for (int64_t jp = 0; jp < n_jr; jp++)
          ts_pack_b_panel_f32(B + pc * ldb + jc + jp * TS_NR, ldb, kc,
                              ts_min_i64(TS_NR, nc - jp * TS_NR), TS_NR, Bbuf + jp * TS_NR * kc);
        /* implicit barrier: the B block is complete */

        const int64_t n_ic = ts_ceil_div_i64(M, TS_BM);
        int64_t packed_ic = -1;
#pragma omp for schedule(static)
        for (int64_t t = 0; t < n_ic * n_jr; t++) {
          const int64_t icb = t / n_jr, jr = t % n_jr;
          const int64_t ic = icb * TS_BM;
          const int64_t mc = ts_min_i64(TS_BM, M - ic);
          if (icb != packed_ic) {
            ts_pack_a_block_f32(A + ic * lda + pc, lda, mc, kc, TS_MR, Abuf);
            packed_ic = icb;
          }
          const int64_t nr = ts_min_i64(TS_NR, nc - jr * TS_NR);
          const float *Bp = Bbuf + jr * TS_NR * kc;
          for (int64_t ir = 0; ir < mc; ir += TS_MR)
            ukr(kc, Abuf + ir * kc, Bp, C + (ic + ir) * ldc + jc + jr * TS_NR, ldc, accumulate,
                ts_min_i64(TS_MR, mc - ir), nr);
        }
        /* implicit barrier: nobody still reads Bbuf when the next pc repacks it */
      }
    }
    ts_cpu_free(Abuf);
  }
  ts_cpu_free(Bbuf);
}

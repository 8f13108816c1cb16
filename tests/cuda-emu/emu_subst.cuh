// emu_subst.cuh — host bodies for the instruction-level (inline PTX) functions of the CUDA
// headers, and nothing else. Each "// @ DECL" line is a declaration exactly as it appears in
// runtime/cuda/*.cuh (whitespace aside); prep.py keeps that declaration and puts the body below
// it in place of the PTX one. The emu_* helpers live in emu_core.h.

// @ __device__ __forceinline__ float ts_to_f32(ts_f16 v)
{ return emu_f16_to_f32(v.x); }
// @ template <> __device__ __forceinline__ ts_bf16 ts_from_f32<ts_bf16>(float v)
{ return ts_bf16{emu_f32_to_bf16(v)}; }
// @ template <> __device__ __forceinline__ ts_f16 ts_from_f32<ts_f16>(float v)
{ return ts_f16{emu_f32_to_f16(v)}; }
// @ template <> __device__ __forceinline__ unsigned ts_pack2<ts_bf16>(float lo, float hi)
{ return (unsigned)emu_f32_to_bf16(lo) | ((unsigned)emu_f32_to_bf16(hi) << 16); }
// @ template <> __device__ __forceinline__ unsigned ts_pack2<ts_f16>(float lo, float hi)
{ return (unsigned)emu_f32_to_f16(lo) | ((unsigned)emu_f32_to_f16(hi) << 16); }
// @ __device__ __forceinline__ unsigned ts_smem_addr(const void *p)
{ return emu_smem_offset(p); }
// @ template <int BYTES> __device__ __forceinline__ void ts_cp_async(void *smem, const void *gmem, bool valid)
{ emu_cp_async(emu_smem_offset(smem), gmem, BYTES, valid); }
// @ __device__ __forceinline__ void ts_async_commit()
{ emu_async_commit(); }
// @ template <int N> __device__ __forceinline__ void ts_async_wait()
{ emu_async_wait(N); }
// @ __device__ __forceinline__ void ts_ldmatrix_x4(unsigned (&r)[4], const void *smem)
{ emu_ldmatrix(r, 4, emu_smem_offset(smem), false); }
// @ __device__ __forceinline__ void ts_ldmatrix_x4_trans(unsigned (&r)[4], const void *smem)
{ emu_ldmatrix(r, 4, emu_smem_offset(smem), true); }
// @ __device__ __forceinline__ void ts_ldmatrix_x2(unsigned (&r)[2], const void *smem)
{ emu_ldmatrix(r, 2, emu_smem_offset(smem), false); }
// @ __device__ __forceinline__ void ts_ldmatrix_x2_trans(unsigned (&r)[2], const void *smem)
{ emu_ldmatrix(r, 2, emu_smem_offset(smem), true); }
// @ template <> __device__ __forceinline__ void ts_mma_16816<ts_bf16>(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{ emu_mma_16816(d, a, b, false); }
// @ template <> __device__ __forceinline__ void ts_mma_16816<ts_f16>(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{ emu_mma_16816(d, a, b, true); }
// @ __device__ __forceinline__ float ts_attn_exp2(float x)
{ return exp2f(x); }
// @ __device__ __forceinline__ void ts_attn_ldsm_x4(unsigned (&r)[4], unsigned addr)
{ emu_ldmatrix(r, 4, addr, false); }
// @ __device__ __forceinline__ void ts_attn_ldsm_x4_trans(unsigned (&r)[4], unsigned addr)
{ emu_ldmatrix(r, 4, addr, true); }
// @ __device__ __forceinline__ void ts_attn_cp_async16(unsigned dst, const void *src, bool valid)
{ emu_cp_async(dst, src, 16, valid); }
// @ __device__ __forceinline__ void ts_async_proxy_fence()
{ emu_proxy_fence(); }
// @ __device__ __forceinline__ void ts_wgmma_fence()
{ emu_wgmma_fence(); }
// @ __device__ __forceinline__ void ts_wgmma_commit()
{ emu_wgmma_commit(); }
// @ template <int N> __device__ __forceinline__ void ts_wgmma_wait()
{ emu_wgmma_wait(N); }
// @ template <int NACC> __device__ __forceinline__ void ts_wgmma_fence_acc(float *acc)
{ (void)acc; }
// @ template <class T, int N, int TB = 1> __device__ __forceinline__ void ts_wgmma_ss(float *d, unsigned long long da, unsigned long long db, int scale_d)
{ emu_wgmma(d, N, da, db, scale_d, ts_is_bf16<T> ? EMU_BF16 : EMU_F16, /*imm-trans-a*/ false, /*imm-trans-b*/ TB != 0); }
// @ template <class T, int N> __device__ __forceinline__ void ts_wgmma_ss8(float *d, unsigned long long da, unsigned long long db, int scale_d)
{ emu_wgmma(d, N, da, db, scale_d, ts_is_e4m3<T> ? EMU_E4M3 : EMU_E5M2, false, /*plant 14: imm-trans-b*/ emu.plant == 14); }
// @ template <class T, int N> __device__ __forceinline__ void ts_wgmma_rs(float *d, const unsigned *a, unsigned long long db, int scale_d)
{ emu_wgmma(d, N, 0, db, scale_d, ts_is_bf16<T> ? EMU_BF16 : EMU_F16, false, /*imm-trans-b*/ true, a); }
// @ __device__ __forceinline__ void ts_mbar_init_one(unsigned bar, unsigned count)
{ emu_mbar_init(bar, count); }
// @ __device__ __forceinline__ void ts_mbar_fence_init()
{ }
// @ __device__ __forceinline__ void ts_tma_prefetch_map(const TsTmaMap *map)
{ (void)map; }
// @ __device__ __forceinline__ void ts_mbar_arrive_tx(unsigned bar, unsigned bytes)
{ emu_mbar_arrive_tx(bar, bytes); }
// @ __device__ __forceinline__ bool ts_mbar_try_wait(unsigned bar, unsigned parity)
{ return emu_mbar_try_wait(bar, parity); }
// @ __device__ __forceinline__ void ts_tma_copy_2d(unsigned dst, const TsTmaMap *map, int c0, int c1, unsigned bar)
{ emu_tma_copy_2d(dst, map, c0, c1, bar); }
// @ __device__ __forceinline__ void ts_mbar_arrive(unsigned bar)
{ emu_mbar_arrive(bar); }
// @ template <int N> __device__ __forceinline__ void ts_setmaxnreg_dec()
{ emu_setmaxnreg(N, false); }
// @ template <int N> __device__ __forceinline__ void ts_setmaxnreg_inc()
{ emu_setmaxnreg(N, true); }
// @ template <int ID, int THREADS> __device__ __forceinline__ void ts_bar_sync_named()
{ emu_bar_sync_named(ID, THREADS); }
// @ template <int ID, int THREADS> __device__ __forceinline__ void ts_bar_arrive_named()
{ emu_bar_arrive_named(ID, THREADS); }
// @ __device__ __forceinline__ void ts_stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3)
{ const unsigned r[4] = {r0, r1, r2, r3}; emu_stmatrix_x4(addr, r); }
// @ __device__ __forceinline__ void ts_tma_store_2d(const TsTmaMap *map, int c0, int c1, unsigned src)
{ emu_tma_store_2d(map, c0, c1, src); }
// @ __device__ __forceinline__ void ts_bulk_commit()
{ emu_bulk_commit(); }
// @ template <int N> __device__ __forceinline__ void ts_bulk_wait_read()
{ emu_bulk_wait(N, true); }
// @ template <int N> __device__ __forceinline__ void ts_bulk_wait()
{ emu_bulk_wait(N, false); }
// @ __device__ __forceinline__ unsigned ts_cluster_rank()
{ return emu_cluster_rank(); }
// @ __device__ __forceinline__ unsigned ts_mapa(unsigned addr, unsigned rank)
{ return emu_mapa(addr, rank); }
// @ __device__ __forceinline__ void ts_mbar_arrive_cluster(unsigned caddr)
{ emu_mbar_arrive_cluster(caddr); }
// @ __device__ __forceinline__ void ts_cluster_sync()
{ emu_cluster_sync(); }
// @ __device__ __forceinline__ void ts_tma_copy_2d_multicast(unsigned dst, const TsTmaMap *map, int c0, int c1, unsigned bar, unsigned short mask)
{ emu_tma_copy_2d_multicast(dst, map, c0, c1, bar, mask); }

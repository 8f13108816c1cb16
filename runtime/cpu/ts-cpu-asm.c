/* ts-cpu-asm.c — GEMM micro-kernels as x86-64 assembly (see ts-cpu-asm.h). */
#include "ts-cpu-asm.h"

#include <stdarg.h>
#include <string.h>

/* What the host has (bits), probed once. */
enum { HAS_AVX512F = 1, HAS_AVX512BF16 = 2, HAS_FMA = 4, HAS_AVX512VL = 8 };

static guint
host_features(void)
{
  static gsize features;
  if (g_once_init_enter(&features)) {
    gsize has = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    has |= __builtin_cpu_supports("avx512f") ? HAS_AVX512F : 0;
    has |= __builtin_cpu_supports("avx512bf16") ? HAS_AVX512BF16 : 0;
    has |= __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma") ? HAS_FMA : 0;
    has |= __builtin_cpu_supports("avx512vl") ? HAS_AVX512VL : 0;
#endif
    g_once_init_leave(&features, has | 0x100u); /* never 0: g_once's "not yet" */
  }
  return (guint)features & 0xffu;
}

/* What TS_CPU_ASM lets the host use: nothing for "0"; for "avx2" only what an AVX2 machine
 * has (the 16-register forms, for tests on an AVX-512 machine); else all of it. */
static guint
usable_features(void)
{
  const char *how = g_getenv("TS_CPU_ASM");
  if (how != NULL && strcmp(how, "0") == 0)
    return 0;
  if (how != NULL && strcmp(how, "avx2") == 0)
    return host_features() & HAS_FMA;
  return host_features();
}

G_GNUC_PRINTF(2, 3)
static void
op(GString *s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_string_append_c(s, '\t');
  g_string_append_vprintf(s, fmt, ap);
  g_string_append_c(s, '\n');
  va_end(ap);
}

/* A micro-kernel being written: mr x nr, rows of nb vectors of vec lanes (vbytes bytes). */
typedef struct {
  GString *s;
  const char *name; /* its symbol, which its labels end with */
  const char *vr;   /* the vector registers' name: zmm, ymm or xmm */
  const char *madd; /* vfmadd231ps or vdpbf16ps */
  int mr, nr, vec, vbytes, nb;
  gboolean mem_bcast; /* one vector a row, with EVEX: the broadcast is the FMA's operand */
} Ukr;

/* Registers 16-31 exist only with EVEX (AVX-512; VL for ymm and xmm), where the VEX xor is
 * not encodable. */
static void
zero(const Ukr *u, int r)
{
  op(u->s, "%s %%%s%d, %%%s%d, %%%s%d", u->vec == 16 || r >= 16 ? "vpxord" : "vxorps", u->vr,
     r, u->vr, r, u->vr, r);
}

/* One k step at byte offsets a_off into the A panel (%rsi) and b_off into B's (%rdx): B's nb
 * vectors into registers, then per row of A one 32-bit broadcast and nb multiply-adds
 * (vfmadd231ps: acc += a * b, one rounding, as the C macro's TS_UKR_STEP_; vdpbf16ps: a pair
 * of bf16 products, as _BF16DOT's). */
static void
step(const Ukr *u, int a_off, int b_off)
{
  const int breg = u->mr * u->nb, tmp = breg + u->nb;
  for (int j = 0; j < u->nb; j++)
    op(u->s, "vmovups %d(%%rdx), %%%s%d", b_off + u->vbytes * j, u->vr, breg + j);
  for (int i = 0; i < u->mr; i++) {
    if (u->mem_bcast) {
      op(u->s, "%s %d(%%rsi){1to%d}, %%%s%d, %%%s%d", u->madd, a_off + 4 * i, u->vec, u->vr,
         breg, u->vr, i);
      continue;
    }
    op(u->s, "vbroadcastss %d(%%rsi), %%%s%d", a_off + 4 * i, u->vr, tmp);
    for (int j = 0; j < u->nb; j++)
      op(u->s, "%s %%%s%d, %%%s%d, %%%s%d", u->madd, u->vr, breg + j, u->vr, tmp, u->vr,
         i * u->nb + j);
  }
}

/* To .L<label>_<name> unless the call's mr and nr (on the stack, before any push) are the
 * tile's: a partial tile. */
static void
unless_full(const Ukr *u, const char *label)
{
  op(u->s, "cmpq $%d, 8(%%rsp)", u->mr);
  op(u->s, "jne .L%s_%s", label, u->name);
  op(u->s, "cmpq $%d, 16(%%rsp)", u->nr);
  op(u->s, "jne .L%s_%s", label, u->name);
}

/* The panels' pointers past `steps` k steps, and the steps left counted down. */
static void
advance(const Ukr *u, int steps)
{
  op(u->s, "addq $%d, %%rsi", steps * 4 * u->mr);
  op(u->s, "addq $%d, %%rdx", steps * 4 * u->nr);
  op(u->s, "subq $%d, %%rdi", steps);
}

static gboolean
symbol_ok(const char *name)
{
  if (name == NULL || !(g_ascii_isalpha(name[0]) || name[0] == '_'))
    return FALSE;
  for (const char *p = name; *p != '\0'; p++)
    if (!g_ascii_isalnum(*p) && *p != '_')
      return FALSE;
  return TRUE;
}

/* The micro-kernel `macro` (its arguments in the comment) over steps of 4-byte A elements and
 * vec-lane B vectors: an f32 each, or a K pair of bf16 (bf16dot: 16 lanes, kc counts
 * elements and its steps are TS_KPAIRS(kc)), where the host runs it: 16 lanes on AVX-512F
 * (and AVX512_BF16 for bf16dot), 8 and 4 on AVX with FMA (as -march=native compiles the C:
 * one FMA, one rounding), the accumulators, B's vectors and a broadcast in the 32 vector
 * registers of AVX-512 (VL for 8 and 4 lanes), else 16. Arguments (System V): %rdi kc, %rsi
 * Ap, %rdx Bp, %rcx C, %r8 ldc, %r9d accumulate, then mr and nr on the stack. C is row-major
 * with stride ldc. */
static char *
ukr_text(const char *macro, gboolean bf16dot, const char *name, int mr, int nr, int vec,
         int unroll)
{
  const guint has = usable_features();
  if (mr <= 0 || nr <= 0 || unroll <= 0 || unroll > 64 || !symbol_ok(name))
    return NULL;
  gboolean runs;
  int vregs = 16;
  switch (vec) {
  case 16:
    runs = (has & HAS_AVX512F) && (!bf16dot || (has & HAS_AVX512BF16));
    vregs = 32;
    break;
  case 8:
  case 4:
    runs = !bf16dot && (has & HAS_FMA);
    vregs = has & HAS_AVX512VL ? 32 : 16;
    break;
  default:
    runs = FALSE;
  }
  if (!runs || nr % vec != 0)
    return NULL;
  const int nb = nr / vec, acc = mr * nb;
  const gboolean mem_bcast = nb == 1 && vregs == 32;
  if (acc + nb + !mem_bcast > vregs)
    return NULL; /* would spill: GCC places the spills */
  const int a_step = 4 * mr, b_step = 4 * nr;
  GString *s = g_string_new(NULL);
  const Ukr u = {.s = s,
                 .name = name,
                 .vr = vec == 16 ? "zmm" : vec == 8 ? "ymm" : "xmm",
                 .madd = bf16dot ? "vdpbf16ps" : "vfmadd231ps",
                 .mr = mr, .nr = nr, .vec = vec, .vbytes = 4 * vec, .nb = nb,
                 .mem_bcast = mem_bcast};
  g_string_append_printf(s,
                         "# Tessera CPU backend: %s (runtime/cpu/ts-cpu-asm.c)\n"
                         "\t.text\n\t.p2align 5\n\t.globl %s\n\t.hidden %s\n"
                         "\t.type %s, @function\n%s:\n\t.cfi_startproc\n",
                         macro, name, name, name, name);
  for (int r = 0; r < acc; r++)
    zero(&u, r);
  if (bf16dot) { /* kc elements -> (kc + 1) / 2 pairs (no steps for kc <= 0 either way) */
    op(s, "incq %%rdi");
    op(s, "sarq $1, %%rdi");
  }
  op(s, "shlq $2, %%r8"); /* ldc in bytes */
  /* A full tile touches its C lines for writing before the k loop, so the stores hit
   * (TS_UKR_PREFETCH_C). */
  unless_full(&u, "k");
  op(s, "movq %%rcx, %%rax");
  for (int i = 0; i < mr; i++) {
    op(s, "prefetchw (%%rax)");
    op(s, "prefetchw %d(%%rax)", b_step - 4);
    if (i + 1 < mr)
      op(s, "addq %%r8, %%rax");
  }
  g_string_append_printf(s, ".Lk_%s:\n", name);
  op(s, "cmpq $%d, %%rdi", unroll);
  op(s, "jl .Lrest_%s", name);
  g_string_append_printf(s, "\t.p2align 4\n.Lmain_%s:\n", name);
  for (int k = 0; k < unroll; k++)
    step(&u, k * a_step, k * b_step);
  advance(&u, unroll);
  op(s, "cmpq $%d, %%rdi", unroll);
  op(s, "jge .Lmain_%s", name);
  g_string_append_printf(s, ".Lrest_%s:\n", name);
  op(s, "testq %%rdi, %%rdi");
  op(s, "jle .Lstore_%s", name);
  g_string_append_printf(s, ".Lone_%s:\n", name);
  step(&u, 0, 0);
  advance(&u, 1);
  op(s, "jnz .Lone_%s", name);
  g_string_append_printf(s, ".Lstore_%s:\n", name);
  unless_full(&u, "edge");
  /* The full tile: C = accumulate ? C + acc : acc, row by row. */
  op(s, "testl %%r9d, %%r9d");
  op(s, "jz .Lput_%s", name);
  op(s, "movq %%rcx, %%rax");
  for (int i = 0; i < mr; i++) {
    for (int j = 0; j < nb; j++)
      op(s, "vaddps %d(%%rax), %%%s%d, %%%s%d", u.vbytes * j, u.vr, i * nb + j, u.vr,
         i * nb + j);
    if (i + 1 < mr)
      op(s, "addq %%r8, %%rax");
  }
  g_string_append_printf(s, ".Lput_%s:\n", name);
  op(s, "movq %%rcx, %%rax");
  for (int i = 0; i < mr; i++) {
    for (int j = 0; j < nb; j++)
      op(s, "vmovups %%%s%d, %d(%%rax)", u.vr, i * nb + j, u.vbytes * j);
    if (i + 1 < mr)
      op(s, "addq %%r8, %%rax");
  }
  op(s, "vzeroupper");
  op(s, "ret");
  /* A partial tile (mr < MR or nr < NR, a few a row of tiles): the accumulators to an
   * aligned buffer on the stack, then its mr x nr corner into C element by element. */
  g_string_append_printf(s, ".Ledge_%s:\n", name);
  op(s, "movq 8(%%rsp), %%r10"); /* mr */
  op(s, "movq 16(%%rsp), %%r11"); /* nr */
  op(s, "pushq %%rbp");
  op(s, ".cfi_def_cfa_offset 16");
  op(s, ".cfi_offset %%rbp, -16");
  op(s, "movq %%rsp, %%rbp");
  op(s, ".cfi_def_cfa_register %%rbp");
  op(s, "subq $%d, %%rsp", mr * b_step);
  op(s, "andq $-64, %%rsp");
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nb; j++)
      op(s, "vmovaps %%%s%d, %d(%%rsp)", u.vr, i * nb + j, i * b_step + u.vbytes * j);
  op(s, "movq %%rsp, %%rsi");
  op(s, "xorl %%eax, %%eax");
  g_string_append_printf(s, ".Lerow_%s:\n", name);
  op(s, "cmpq %%r10, %%rax");
  op(s, "jge .Ledone_%s", name);
  op(s, "xorl %%edx, %%edx");
  g_string_append_printf(s, ".Lecol_%s:\n", name);
  op(s, "cmpq %%r11, %%rdx");
  op(s, "jge .Lenext_%s", name);
  op(s, "vmovss (%%rsi,%%rdx,4), %%xmm0");
  op(s, "testl %%r9d, %%r9d");
  op(s, "jz .Leput_%s", name);
  op(s, "vaddss (%%rcx,%%rdx,4), %%xmm0, %%xmm0");
  g_string_append_printf(s, ".Leput_%s:\n", name);
  op(s, "vmovss %%xmm0, (%%rcx,%%rdx,4)");
  op(s, "incq %%rdx");
  op(s, "jmp .Lecol_%s", name);
  g_string_append_printf(s, ".Lenext_%s:\n", name);
  op(s, "addq %%r8, %%rcx");
  op(s, "addq $%d, %%rsi", b_step);
  op(s, "incq %%rax");
  op(s, "jmp .Lerow_%s", name);
  g_string_append_printf(s, ".Ledone_%s:\n", name);
  op(s, "leave");
  op(s, ".cfi_def_cfa %%rsp, 8");
  op(s, "vzeroupper");
  op(s, "ret");
  op(s, ".cfi_endproc");
  op(s, ".size %s, .-%s", name, name);
  op(s, ".section .note.GNU-stack,\"\",@progbits");
  return g_string_free(s, FALSE);
}

char *
ts__cpu_asm_ukr_f32(const char *name, int mr, int nr, int vec, int unroll)
{
  g_autofree char *macro =
    g_strdup_printf("TS_DEFINE_UKR_F32(%s, %d, %d, %d, %d)", name, mr, nr, vec, unroll);
  return ukr_text(macro, FALSE, name, mr, nr, vec, unroll);
}

char *
ts__cpu_asm_ukr_bf16dot(const char *name, int mr, int nr, int unroll)
{
  g_autofree char *macro =
    g_strdup_printf("TS_DEFINE_UKR_BF16DOT(%s, %d, %d, %d)", name, mr, nr, unroll);
  return ukr_text(macro, TRUE, name, mr, nr, 16, unroll);
}

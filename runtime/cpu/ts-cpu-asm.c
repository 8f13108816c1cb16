/* ts-cpu-asm.c — f32 micro-kernels as x86-64 assembly (see ts-cpu-asm.h). */
#include "ts-cpu-asm.h"

#include <stdarg.h>
#include <string.h>

#define VREGS 32 /* zmm0-31 */

/* Bits of what the host has: 1 AVX-512F, 2 AVX512_BF16 too. */
static guint
host_features(void)
{
  static gsize features;
  if (g_once_init_enter(&features)) {
    gsize has = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      has |= 1u | (__builtin_cpu_supports("avx512bf16") ? 2u : 0u);
#endif
    g_once_init_leave(&features, has | 0x100u); /* never 0: g_once's "not yet" */
  }
  return (guint)features & 0xffu;
}

gboolean
ts__cpu_asm_usable(gboolean bf16dot)
{
  const char *off = g_getenv("TS_CPU_ASM");
  if (off != NULL && strcmp(off, "0") == 0)
    return FALSE;
  const guint need = bf16dot ? 3u : 1u;
  return (host_features() & need) == need;
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

/* One k step at byte offsets a_off into the A panel (%rsi) and b_off into B's (%rdx): B's nb
 * vectors into registers, then per row of A one 32-bit broadcast and nb multiply-adds `madd`
 * (vfmadd231ps: acc += a * b, one rounding, as the C macro's TS_UKR_STEP_; vdpbf16ps: a pair
 * of bf16 products, as _BF16DOT's). With one vector a row the broadcast is the instruction's
 * own memory operand. */
static void
step(GString *s, const char *madd, int mr, int nb, int a_off, int b_off)
{
  const int breg = mr * nb, tmp = breg + nb;
  for (int j = 0; j < nb; j++)
    op(s, "vmovups %d(%%rdx), %%zmm%d", b_off + 64 * j, breg + j);
  for (int i = 0; i < mr; i++) {
    if (nb == 1) {
      op(s, "%s %d(%%rsi){1to16}, %%zmm%d, %%zmm%d", madd, a_off + 4 * i, breg, i);
      continue;
    }
    op(s, "vbroadcastss %d(%%rsi), %%zmm%d", a_off + 4 * i, tmp);
    for (int j = 0; j < nb; j++)
      op(s, "%s %%zmm%d, %%zmm%d, %%zmm%d", madd, breg + j, tmp, i * nb + j);
  }
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
 * 16-lane B vectors: an f32 each, or a K pair of bf16 (bf16dot, kc then counts elements and
 * its steps are TS_KPAIRS(kc)). Arguments (System V): %rdi kc, %rsi Ap, %rdx Bp, %rcx C, %r8
 * ldc, %r9d accumulate, then mr and nr on the stack. C is row-major with stride ldc. */
static char *
ukr_text(const char *macro, gboolean bf16dot, const char *name, int mr, int nr, int unroll)
{
  if (mr <= 0 || nr <= 0 || nr % 16 != 0 || unroll <= 0 || unroll > 64 || !symbol_ok(name))
    return NULL;
  const int nb = nr / 16, acc = mr * nb;
  if (acc + nb + (nb > 1) > VREGS)
    return NULL; /* would spill: GCC places the spills */
  const int a_step = 4 * mr, b_step = 4 * nr;
  const char *madd = bf16dot ? "vdpbf16ps" : "vfmadd231ps";
  GString *s = g_string_new(NULL);
  g_string_append_printf(s,
                         "# Tessera CPU backend: %s in AVX-512 (runtime/cpu/ts-cpu-asm.c)\n"
                         "\t.text\n\t.p2align 5\n\t.globl %s\n\t.hidden %s\n"
                         "\t.type %s, @function\n%s:\n\t.cfi_startproc\n",
                         macro, name, name, name, name);
  for (int r = 0; r < acc; r++)
    op(s, "vpxord %%zmm%d, %%zmm%d, %%zmm%d", r, r, r);
  if (bf16dot) { /* kc elements -> (kc + 1) / 2 pairs (no steps for kc <= 0 either way) */
    op(s, "incq %%rdi");
    op(s, "sarq $1, %%rdi");
  }
  op(s, "shlq $2, %%r8"); /* ldc in bytes */
  /* A full tile touches its C lines for writing before the k loop, so the stores hit
   * (TS_UKR_PREFETCH_C). */
  op(s, "cmpq $%d, 8(%%rsp)", mr);
  op(s, "jne .Lk_%s", name);
  op(s, "cmpq $%d, 16(%%rsp)", nr);
  op(s, "jne .Lk_%s", name);
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
  for (int u = 0; u < unroll; u++)
    step(s, madd, mr, nb, u * a_step, u * b_step);
  op(s, "addq $%d, %%rsi", unroll * a_step);
  op(s, "addq $%d, %%rdx", unroll * b_step);
  op(s, "subq $%d, %%rdi", unroll);
  op(s, "cmpq $%d, %%rdi", unroll);
  op(s, "jge .Lmain_%s", name);
  g_string_append_printf(s, ".Lrest_%s:\n", name);
  op(s, "testq %%rdi, %%rdi");
  op(s, "jle .Lstore_%s", name);
  g_string_append_printf(s, ".Lone_%s:\n", name);
  step(s, madd, mr, nb, 0, 0);
  op(s, "addq $%d, %%rsi", a_step);
  op(s, "addq $%d, %%rdx", b_step);
  op(s, "decq %%rdi");
  op(s, "jnz .Lone_%s", name);
  g_string_append_printf(s, ".Lstore_%s:\n", name);
  op(s, "movq 8(%%rsp), %%r10"); /* mr */
  op(s, "movq 16(%%rsp), %%r11"); /* nr */
  op(s, "cmpq $%d, %%r10", mr);
  op(s, "jne .Ledge_%s", name);
  op(s, "cmpq $%d, %%r11", nr);
  op(s, "jne .Ledge_%s", name);
  /* The full tile: C = accumulate ? C + acc : acc, row by row. */
  op(s, "testl %%r9d, %%r9d");
  op(s, "jz .Lput_%s", name);
  op(s, "movq %%rcx, %%rax");
  for (int i = 0; i < mr; i++) {
    for (int j = 0; j < nb; j++)
      op(s, "vaddps %d(%%rax), %%zmm%d, %%zmm%d", 64 * j, i * nb + j, i * nb + j);
    if (i + 1 < mr)
      op(s, "addq %%r8, %%rax");
  }
  g_string_append_printf(s, ".Lput_%s:\n", name);
  op(s, "movq %%rcx, %%rax");
  for (int i = 0; i < mr; i++) {
    for (int j = 0; j < nb; j++)
      op(s, "vmovups %%zmm%d, %d(%%rax)", i * nb + j, 64 * j);
    if (i + 1 < mr)
      op(s, "addq %%r8, %%rax");
  }
  op(s, "vzeroupper");
  op(s, "ret");
  /* A partial tile (mr < MR or nr < NR, a few a row of tiles): the accumulators to an
   * aligned buffer on the stack, then its mr x nr corner into C element by element. */
  g_string_append_printf(s, ".Ledge_%s:\n", name);
  op(s, "pushq %%rbp");
  op(s, ".cfi_def_cfa_offset 16");
  op(s, ".cfi_offset %%rbp, -16");
  op(s, "movq %%rsp, %%rbp");
  op(s, ".cfi_def_cfa_register %%rbp");
  op(s, "subq $%d, %%rsp", mr * b_step);
  op(s, "andq $-64, %%rsp");
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nb; j++)
      op(s, "vmovaps %%zmm%d, %d(%%rsp)", i * nb + j, i * b_step + 64 * j);
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
  if (vec != 16)
    return NULL;
  g_autofree char *macro =
    g_strdup_printf("TS_DEFINE_UKR_F32(%s, %d, %d, %d, %d)", name, mr, nr, vec, unroll);
  return ukr_text(macro, FALSE, name, mr, nr, unroll);
}

char *
ts__cpu_asm_ukr_bf16dot(const char *name, int mr, int nr, int unroll)
{
  g_autofree char *macro =
    g_strdup_printf("TS_DEFINE_UKR_BF16DOT(%s, %d, %d, %d)", name, mr, nr, unroll);
  return ukr_text(macro, TRUE, name, mr, nr, unroll);
}

/* test-lang.c — the kernel language's lexer and parser: exact trees for small kernels, the
 * examples/ kernels parsed whole, and one clear error (code, position, caret) for each kind of
 * malformed input. */
#include "ts-lang.h"

#include <string.h>

static char *
parse_to_string(const char *src)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsLangNode) m = ts_lang_parse(src, "t.tsk", &error);
  g_assert_no_error(error);
  g_assert_nonnull(m);
  return ts_lang_node_to_string(m);
}

static void
test_small(void)
{
  g_autofree char *s = parse_to_string(
    "@kernel\n"
    "def saxpy(x: f32[n], y: mut f32[n], alpha: f32):\n"
    "    i = tile.linear_id()  # a comment\n"
    "\n"
    "    y[i] = alpha * x[i] + y[i]\n");
  g_assert_cmpstr(s, ==,
                  "(module\n"
                  "  (def saxpy (decorators (name kernel)) (params (param x (index (name f32) (name "
                  "n)) _) (param y mut (index (name f32) (name n)) _) (param alpha (name f32) _)) _ "
                  "(block\n"
                  "      (assign (name i) (call (attr linear_id (name tile))))\n"
                  "      (assign (index (name y) (name i)) (binop + (binop * (name alpha) (index (name "
                  "x) (name i))) (index (name y) (name i)))))))");
}

/* Precedence and associativity as Python's; policies are the @ operator. */
static void
test_expressions(void)
{
  g_autofree char *s = parse_to_string(
    "def f(a: Tensor[\"B*H\", \"S\", bf16 @accum(f32)], *, p: float = 0.5):\n"
    "    x = -a ** 2 - b * c / d // e % 2 @ w\n"
    "    y = not a and b or c if k < 3 else d\n"
    "    z = l[:, None] + m[1:2, ::3] + t[0]\n"
    "    u, (v, w) = (1, 2.5e-1), [3, 'x\\n']\n"
    "    acc += 1; pass\n"
    "    return\n");
  g_assert_cmpstr(s, ==,
                  "(module\n"
                  "  (def f (decorators) (params (param a (index (name Tensor) (tuple (str \"B*H\") "
                  "(str \"S\") (binop @ (name bf16) (call (name accum) (name f32))))) _) (star) (param "
                  "p (name float) (float 0.5))) _ (block\n"
                  "      (assign (name x) (binop - (unary - (binop ** (name a) (int 2))) (binop @ "
                  "(binop % (binop // (binop / (binop * (name b) (name c)) (name d)) (name e)) (int "
                  "2)) (name w))))\n"
                  "      (assign (name y) (ifexp (boolop or (boolop and (unary not (name a)) (name b)) "
                  "(name c)) (compare < (name k) (int 3)) (name d)))\n"
                  "      (assign (name z) (binop + (binop + (index (name l) (tuple (slice _ _ _) (name "
                  "None))) (index (name m) (tuple (slice (int 1) (int 2) _) (slice _ _ (int 3))))) "
                  "(index (name t) (int 0))))\n"
                  "      (assign (tuple (name u) (tuple (name v) (name w))) (tuple (tuple (int 1) "
                  "(float 0.25)) (list (int 3) (str \"x\\n\"))))\n"
                  "      (augassign + (name acc) (int 1))\n"
                  "      (pass)\n"
                  "      (return _))))");
}

static void
test_statements(void)
{
  g_autofree char *s = parse_to_string(
    "def f(n):\n"
    "    for i, j in tile.range(0, n, 4):\n"
    "        if i: g(x=1)\n"
    "        elif j:\n"
    "            pass\n"
    "        else:\n"
    "            h(\n"
    "              2,\n"
    "            )\n"
    "    return a, \\\n"
    "        b\n"
    "def g(): pass\n");
  g_assert_cmpstr(s, ==,
                  "(module\n"
                  "  (def f (decorators) (params (param n _ _)) _ (block\n"
                  "      (for (tuple (name i) (name j)) (call (attr range (name tile)) (int 0) (name "
                  "n) (int 4)) (block\n"
                  "          (if (name i) (block\n"
                  "              (expr (call (name g) (kw x (int 1))))) (block\n"
                  "              (if (name j) (block\n"
                  "                  (pass)) (block\n"
                  "                  (expr (call (name h) (int 2)))))))))\n"
                  "      (return (tuple (name a) (name b)))))\n"
                  "  (def g (decorators) (params) _ (block\n"
                  "      (pass))))");
}

/* The examples parse whole, with the shapes their kernels have. */
static void
test_examples(void)
{
  static const struct {
    const char *file, *name;
    guint params, decorators;
  } ex[] = {{"saxpy.tsk", "saxpy", 3, 2},
            {"gemm.tsk", "gemm", 3, 2},
            {"flash_attention.tsk", "flash_attention", 5, 2},
            {"softmax.tsk", "softmax", 2, 3},
            {"layernorm.tsk", "layernorm", 5, 2}};
  for (guint i = 0; i < G_N_ELEMENTS(ex); i++) {
    g_autofree char *path = g_test_build_filename(G_TEST_DIST, "..", "examples", ex[i].file, NULL);
    g_autofree char *src = NULL;
    g_autoptr(GError) error = NULL;
    if (!g_file_get_contents(path, &src, NULL, &error))
      g_error("%s: %s", path, error->message);
    g_autoptr(TsLangNode) m = ts_lang_parse(src, ex[i].file, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(m->kids->len, ==, 1);
    const TsLangNode *def = g_ptr_array_index(m->kids, 0);
    g_assert_cmpint(def->kind, ==, TS_LANG_DEF);
    g_assert_cmpstr(def->str, ==, ex[i].name);
    const TsLangNode *decorators = g_ptr_array_index(def->kids, 0);
    const TsLangNode *params = g_ptr_array_index(def->kids, 1);
    g_assert_cmpuint(decorators->kids->len, ==, ex[i].decorators);
    g_assert_cmpuint(params->kids->len, ==, ex[i].params);
  }
}

typedef struct {
  const char *src;
  TsLangError code;
  int line, col;
  const char *needle;
} BadCase;

static const BadCase bad[] = {
  {"def f(:):\n    pass\n", TS_LANG_ERROR_SYNTAX, 1, 7, "expected a parameter name, found ':'"},
  {"def f(x:\n", TS_LANG_ERROR_SYNTAX, 1, 6, "this '(' is never closed"},
  {"def f(q: T[\"S\"]):\n    acc = g((a, b), f32\n    return acc\n", TS_LANG_ERROR_SYNTAX, 2,
   12, "this '(' is never closed"},
  {"def f():\n    x = g(a]\n", TS_LANG_ERROR_SYNTAX, 2, 12, "']' does not close the '(' of line 2"},
  {"def f():\n    x = 1\n  y = 2\n", TS_LANG_ERROR_INDENT, 3, 3, "matches no enclosing block"},
  {"def f():\nx = 1\n", TS_LANG_ERROR_SYNTAX, 2, 1, "expected an indented block"},
  {"def f():\n \tx = 1\n", TS_LANG_ERROR_INDENT, 2, 3, "mixes tabs and spaces"},
  {"def f():\n    x = = 1\n", TS_LANG_ERROR_SYNTAX, 2, 9, "expected an expression, found '='"},
  {"def f():\n    1 = x\n", TS_LANG_ERROR_SYNTAX, 2, 7, "cannot assign to this"},
  {"def f():\n    a < b < c\n", TS_LANG_ERROR_SYNTAX, 2, 11, "chained comparisons"},
  {"def f():\n    else: pass\n", TS_LANG_ERROR_SYNTAX, 2, 5, "'else' without an 'if'"},
  {"def f(x, x):\n    pass\n", TS_LANG_ERROR_SYNTAX, 1, 10, "parameter 'x' is named twice"},
  {"def f():\n    g(a=1, 2)\n", TS_LANG_ERROR_SYNTAX, 2, 12, "positional argument cannot follow"},
  {"x = 1\n", TS_LANG_ERROR_SYNTAX, 1, 1, "expected a kernel: '@' decorators or 'def'"},
  {"def f():\n    s = 'abc\n", TS_LANG_ERROR_SYNTAX, 2, 9, "string is not closed"},
  {"def f():\n    x = 1 if y\n", TS_LANG_ERROR_SYNTAX, 2, 15, "expected 'else'"},
  {"def f():\n    x = $\n", TS_LANG_ERROR_SYNTAX, 2, 9, "unexpected character '$'"},
  {"def f():\n    return 1 2\n", TS_LANG_ERROR_SYNTAX, 2, 14, "expected the end of the line"},
  {"def f():\n    x = a)\n", TS_LANG_ERROR_SYNTAX, 2, 10, "this bracket closes nothing"},
  {"def f():\n    a = b = c\n", TS_LANG_ERROR_SYNTAX, 2, 11, "chained assignment"},
  {"def f():\n    x = 12ab\n", TS_LANG_ERROR_SYNTAX, 2, 11, "a name cannot start right after"},
  {"def f():\n    def g(): pass\n", TS_LANG_ERROR_SYNTAX, 2, 5, "not inside another kernel"},
  {"@kernel\nx = 1\n", TS_LANG_ERROR_SYNTAX, 2, 1, "expected 'def' after the decorators"},
  {"def f():\n    for 1 in x: pass\n", TS_LANG_ERROR_SYNTAX, 2, 5, "must be a name"},
  {"def f():\n    x = 'a\\q'\n", TS_LANG_ERROR_SYNTAX, 2, 11, "unknown escape"},
  {"def f():\n    (a, b) += 1\n", TS_LANG_ERROR_SYNTAX, 2, 12, "cannot update this in place"},
  {"  def f(): pass\n", TS_LANG_ERROR_INDENT, 1, 3, "unexpected indentation"},
};

static void
test_errors(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsLangNode) m = ts_lang_parse(bad[i].src, "k.tsk", &error);
    if (m != NULL)
      g_error("case %u parsed: %s", i, bad[i].src);
    g_assert_nonnull(error);
    g_autofree char *where = g_strdup_printf("k.tsk:%d:%d: ", bad[i].line, bad[i].col);
    if (error->code != (gint)bad[i].code || !g_str_has_prefix(error->message, where) ||
        strstr(error->message, bad[i].needle) == NULL)
      g_error("case %u: wanted %s...%s (code %d), got (code %d):\n%s", i, where, bad[i].needle,
              bad[i].code, error->code, error->message);
    /* The offending line, then a caret under the column. */
    g_auto(GStrv) lines = g_strsplit(error->message, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    g_assert_cmpuint(strlen(lines[2]), ==, 2 + (gsize)bad[i].col);
    g_assert_cmpint(lines[2][1 + bad[i].col], ==, '^');
  }
}

/* Nesting is bounded, so a hostile file cannot exhaust the stack. */
static void
test_limits(void)
{
  g_autoptr(GString) src = g_string_new("def f():\n    x = ");
  for (int i = 0; i < 5000; i++)
    g_string_append_c(src, '(');
  g_string_append_c(src, '1');
  for (int i = 0; i < 5000; i++)
    g_string_append_c(src, ')');
  g_string_append_c(src, '\n');
  g_autoptr(GError) error = NULL;
  g_autoptr(TsLangNode) m = ts_lang_parse(src->str, "deep.tsk", &error);
  g_assert_null(m);
  g_assert_error(error, TS_LANG_ERROR, TS_LANG_ERROR_LIMIT);
  g_assert_nonnull(strstr(error->message, "nested more than 200 levels"));
  /* An empty file is an empty module. */
  g_autoptr(TsLangNode) empty = ts_lang_parse("# nothing\n\n", "e.tsk", NULL);
  g_assert_nonnull(empty);
  g_assert_cmpuint(empty->kids->len, ==, 0);
}

/* ---- the interface checker ---- */

static TsLangKernel *
check_one(const char *src, TsLangNode **tree, GError **error)
{
  g_autoptr(GError) perr = NULL;
  *tree = ts_lang_parse(src, "c.tsk", &perr);
  g_assert_no_error(perr);
  g_assert_cmpuint((*tree)->kids->len, ==, 1);
  return ts_lang_kernel_check(g_ptr_array_index((*tree)->kids, 0), src, "c.tsk", error);
}

/* examples/FILE read into *src and checked (the kernel borrows *tree, which borrows *src). */
static TsLangKernel *
check_example(const char *file, char **src, TsLangNode **tree)
{
  g_autofree char *path = g_test_build_filename(G_TEST_DIST, "..", "examples", file, NULL);
  g_assert_true(g_file_get_contents(path, src, NULL, NULL));
  g_autoptr(GError) error = NULL;
  TsLangKernel *k = check_one(*src, tree, &error);
  g_assert_no_error(error);
  return k;
}

/* "name: type; ..." of what a kernel's body binds. */
static char *
bindings_text(const TsLangKernel *k)
{
  g_autoptr(GString) s = g_string_new(NULL);
  for (guint i = 0; i < k->bindings->len; i++)
    g_string_append_printf(s, "%s%s", i ? "; " : "", (char *)g_ptr_array_index(k->bindings, i));
  return g_strdup(s->str);
}

/* The examples' interfaces: spaces in the Schedule IR's canonical form, metrics, budgets,
 * implemented ops, and each parameter's Graph IR type. */
static void
test_check_examples(void)
{
  static const struct {
    const char *file, *space, *implements, *params;
    double budget_ms;
  } ex[] = {
    {"saxpy.tsk", "block(n=[2048,4096,8192]).vector([4,8]).store([\"cached\",\"stream\"])", "saxpy",
     "x: Tensor[\"N\", f32]; y: mut Tensor[\"N\", f32]; alpha: f32", 30000},
    {"flash_attention.tsk", "block(m=[64,128], n=[64,128]).warps([4,8]).stages([2,3])",
     "flash_attention",
     "q: Tensor[\"B*H\",\"S\",\"D_h\", bf16 @accum(f32)]; "
     "k: Tensor[\"B*H\",\"S\",\"D_h\", bf16 @accum(f32)]; "
     "v: Tensor[\"B*H\",\"S\",\"D_h\", bf16 @accum(f32)]; *causal: bool = False", 180},
  };
  for (guint i = 0; i < G_N_ELEMENTS(ex); i++) {
    g_autofree char *src = NULL;
    g_autoptr(TsLangNode) tree = NULL;
    g_autoptr(TsLangKernel) k = check_example(ex[i].file, &src, &tree);
    g_test_message("%s: space %s", ex[i].file, k->space);
    g_assert_cmpstr(k->space, ==, ex[i].space);
    g_assert_cmpstr(k->metric, ==, "latency_ms");
    g_assert_cmpfloat(k->budget_ms, ==, ex[i].budget_ms);
    g_assert_cmpstr(k->implements, ==, ex[i].implements);
    g_autoptr(GString) params = g_string_new(NULL);
    for (guint j = 0; j < k->params->len; j++) {
      g_autofree char *t = ts_lang_param_to_string(g_ptr_array_index(k->params, j));
      g_string_append_printf(params, "%s%s", j ? "; " : "", t);
    }
    g_assert_cmpstr(params->str, ==, ex[i].params);
  }
}

/* The body's types: every name the examples bind, with the tile shapes derived through the
 * intrinsics in the knobs' terms (T.m is BM) and T.d bound to the dim it spans (D_h). */
static void
test_check_types(void)
{
  static const struct {
    const char *file, *bindings;
  } ex[] = {
    {"saxpy.tsk", "i: index"},
    {"gemm.tsk", "T: tile context; acc: tile[BM, BN] f32; kb: block of K by BK; "
                 "a: tile[BM, BK] bf16; b: tile[BK, BN] bf16"},
    {"flash_attention.tsk",
     "T: tile context; Qb: tile[BM, D_h] bf16; acc: tile[BM, D_h] f32; m: tile[BM] f32; "
     "l: tile[BM] f32; nblk: block of S by BN; Kb: tile[BN, D_h] bf16; "
     "Vb: tile[BN, D_h] bf16; S: tile[BM, BN] f32; P: tile[BM, BN] f32; m_c: tile[BM] f32; "
     "l_c: tile[BM] f32; return: tile[BM, D_h] bf16"},
    {"softmax.tsk", "T: tile context; xr: tile[BM, N] f32; m: tile[BM] f32; e: tile[BM, N] f32; "
                    "s: tile[BM] f32"},
    {"layernorm.tsk", "T: tile context; xr: tile[BM, N] f32; mean: tile[BM] f32; "
                      "d: tile[BM, N] f32; var: tile[BM] f32; rstd: tile[BM] f32"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(ex); i++) {
    g_autofree char *src = NULL;
    g_autoptr(TsLangNode) tree = NULL;
    g_autoptr(TsLangKernel) k = check_example(ex[i].file, &src, &tree);
    g_autofree char *got = bindings_text(k);
    g_assert_cmpstr(got, ==, ex[i].bindings);
  }
  /* A knob of a dict space is an integer the body may use; T.d before any load stays T.d. */
  static const char *knob_src =
    "@kernel.autotune(space=dict(BM=[64], UNROLL=[2, 4]))\n"
    "def f(x: Tensor[\"M\", \"D\", f32]):\n"
    "    T = tile.context()\n"
    "    for r in tile.range(UNROLL):\n"
    "        z = tile.zeros((T.m, UNROLL * 2), f32)\n"
    "    w = tile.zeros((T.d,), f32)\n";
  g_autoptr(TsLangNode) tree = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsLangKernel) k = check_one(knob_src, &tree, &error);
  g_assert_no_error(error);
  g_autofree char *got = bindings_text(k);
  g_assert_cmpstr(got, ==, "T: tile context; r: index; z: tile[BM, UNROLL*2] f32; w: tile[T.d] f32");
}

typedef struct {
  const char *src, *needle;
  int line, col;
} BadKernel;

/* A kernel head for the type errors: three block knobs, GEMM-like tensors and two vectors. */
#define TH                                                                                    \
  "@kernel.autotune(space=dict(BM=[64], BN=[64], BK=[32]))\n"                                \
  "def f(A: Tensor[\"M\", \"K\", bf16 @accum(f32)], B: Tensor[\"K\", \"N\", bf16], "            \
  "C: mut Tensor[\"M\", \"N\", bf16], x: f32[n], y: f32[n]):\n"                                \
  "    T = tile.context()\n"

static const BadKernel bad_kernels[] = {
  {"@kernel.autotun(space=dict(BM=[64]))\ndef f(): pass\n", "did you mean @kernel.autotune?", 1,
   2},
  {"@kernel.autotune(space=dict(BM=[64]), metrc=\"latency_ms\")\ndef f(): pass\n",
   "has no argument 'metrc'; did you mean 'metric'?", 1, 39},
  {"@kernel.autotune(metric=\"latency_ms\")\ndef f(): pass\n", "needs space=dict(...)", 1, 2},
  {"@kernel.autotune(space=dict(BM=[]))\ndef f(): pass\n", "the autotune space does not parse",
   1, 24},
  {"@kernel.autotune(space=dict(BM=[64]), metric=\"gflops\")\ndef f(): pass\n",
   "metric \"gflops\" is not measured", 1, 46},
  {"@kernel.autotune(space=dict(BM=[64]), budget_ms=-5)\ndef f(): pass\n",
   "budget_ms must be positive", 1, 49},
  {"@kernel\n@kernel\ndef f(): pass\n", "@kernel is given twice", 2, 2},
  {"@kernel.implements(3)\ndef f(): pass\n", "the op's name must be a string", 1, 20},
  {"@kernel.schedule(block(m=[64,128]))\ndef f(): pass\n",
   "the schedule does not parse as a point", 1, 18},
  {"@verify.numerics(bounded=[5, 1])\ndef f(): pass\n", "lower end must be below", 1, 26},
  {"@verify.numerics(stable=1)\ndef f(): pass\n", "stable must be True or False", 1, 25},
  {"def f(x):\n    pass\n", "parameter 'x' needs a type", 1, 7},
  {"def f(x: Tensr[\"N\", f32]):\n    pass\n", "did you mean 'Tensor'?", 1, 10},
  {"def f(x: Tensor[\"N\", bf61]):\n    pass\n", "unknown dtype 'bf61' (known:", 1, 22},
  {"def f(x: Tensor[\"N\", bf16 @acum(f32)]):\n    pass\n", "acum", 1, 22},
  {"def f(x: Tensor[N, f32]):\n    pass\n", "a dim is a quoted name", 1, 17},
  {"def f(x: Tensor[f32]):\n    pass\n", "a tensor has 1 to 6 dims", 1, 17},
  {"def f(a: mut f32):\n    pass\n", "cannot be mut", 1, 7},
  {"def f(x: Tensor[\"N\", f32] = 0):\n    pass\n", "cannot have a default", 1, 29},
  {"def f(n: itn):\n    pass\n", "unknown type 'itn'; did you mean 'int'?", 1, 10},
  {"def f(*, a: int, *, b: int):\n    pass\n", "'*' is given twice", 1, 18},
  /* the body: names and intrinsics */
  {"def f(x: f32[n]):\n    y = tile.softmax_onlin(x)\n",
   "unknown intrinsic tile.softmax_onlin; did you mean tile.softmax_online?", 2, 9},
  {"def f(x: f32[n]):\n    y = tile.dot(x)\n", "tile.dot takes 2 positional arguments, not 1",
   2, 9},
  {"def f(x: f32[n]):\n    y = tile.load(x, rowz=4)\n",
   "tile.load has no argument 'rowz'; did you mean 'rows'?", 2, 22},
  {"def f(x: f32[n]):\n    y = tile.exp(x, fast=True)\n",
   "tile.exp has no argument 'fast' (it takes no keyword arguments)", 2, 21},
  {"def f(alpha: f32):\n    y = alpah * 2\n",
   "name 'alpah' is not defined here; did you mean 'alpha'?", 2, 9},
  {"def f(x: f32[n]):\n    y = z + 1\n    z = 2\n", "name 'z' is not defined here", 2, 9},
  {"def f(x: f32[n]):\n    g = tile.load\n", "tile.load is an intrinsic: call it", 2, 9},
  {"def f(x: f32[n]):\n    for i in tile.range(4):\n        acc += i\n",
   "name 'acc' is not defined here", 3, 9},
  /* the body: tile shapes, dtypes, writes, conditions and knobs */
  {TH "    a = tile.zeros((T.m, T.k), f32)\n    b = tile.zeros((T.n, T.k), f32)\n    c = tile.dot(a, b)\n",
   "so BK and BN differ", 6, 9},
  {TH "    acc = tile.zeros((T.m, T.n), f32)\n    for kb in tile.range_k(A.shape[1], T.k):\n        acc += tile.dot(tile.load(A, rows=T.m, cols=kb), tile.load(B, rows=kb, cols=T.n))\n    tile.store(C, acc)\n",
   "tile.store writes bf16 tiles into C (Tensor[\"M\",\"N\", bf16]), and acc is f32: convert it with tile.cast(acc, bf16)", 7, 19},
  {TH "    tile.store(A, tile.zeros((T.m, T.k), bf16))\n    z = tile.zeros((T.n,), f32)\n",
   "tile.store writes A, which is not mut", 4, 16},
  {TH "    for kb in tile.range_k(A.shape[1], T.k):\n        b = tile.load(B, rows=T.n, cols=kb)\n    z = tile.zeros((T.m,), f32)\n",
   "kb walks K, but the columns of B", 5, 41},
  {TH "    i = tile.linear_id()\n    v = x[i]\n    t = tile.zeros((v, T.k), f32)\n",
   "a tile shape cannot be derived from v, which is f32", 6, 21},
  {"@kernel.autotune(space=dict(BM=[64], BK=[32], warps=[4]))\ndef f(x: f32[n]):\n    T = tile.context()\n    z = tile.zeros((T.m,), f32)\n",
   "the space's knob BK is never used by the body (T.k is the block's k extent)", 1, 24},
  {"@kernel.autotune(space=dict(BN=[64]))\ndef f(x: f32[n]):\n    T = tile.context()\n    z = tile.zeros((T.m,), f32)\n",
   "T.m is the knob BM, which the autotune space does not set", 4, 21},
  {TH "    i = tile.linear_id()\n    if x[i] > 0:\n        z = tile.zeros((T.m, T.k), f32)\n",
   "depends on the data (mask the tile instead)", 5, 8},
  {TH "    acc = tile.zeros((T.m, T.n), f32)\n    acc = tile.zeros((T.m, T.k), f32)\n",
   "acc is tile[BM, BN] f32 and is assigned tile[BM, BK] f32", 5, 5},
  {TH "    acc = tile.zeros((T.m, T.n), f32)\n    l = tile.zeros((T.m,), f32)\n    o = acc / l\n    z = tile.zeros((T.k,), f32)\n",
   "the shapes do not broadcast (BN against BM", 6, 9},
  {TH "    acc = tile.zeros((T.m, T.n), f32)\n    a = tile.zeros((T.m, T.k), f32)\n    acc += a\n",
   "+ of tiles [BM, BN] and [BM, BK]", 6, 5},
  {TH "    S = tile.zeros((T.m, T.n), f32)\n    P, m = tile.softmax_online(S)\n    z = tile.zeros((T.k,), f32)\n",
   "2 names are assigned tile.softmax_online(S), which gives 3 values", 5, 5},
  {TH "    z = x * 2\n",
   "load a tile of it with tile.load", 4, 9},
  {TH "    a = tile.zeros((T.m, T.n), f32)\n    b = tile.zeros((T.m, T.n), bf16)\n    c = a + b\n    z = tile.zeros((T.k,), f32)\n",
   "the dtypes differ", 6, 9},
  {TH "    for i in x:\n        pass\n",
   "a kernel loops over tile.range", 4, 14},
  {TH "    a = tile.load(A, rows=T.m, cols=T.k)\n    b = tile.load(a, rows=T.m)\n    z = tile.zeros((T.n,), f32)\n",
   "tile.load reads a tensor parameter, and a is tile[BM, BK] bf16", 5, 19},
  {TH "    i = tile.linear_id()\n    v = x[i, i]\n",
   "x has 1 dim but is indexed with 2", 5, 11},
  {TH "    d = A.shape[2]\n",
   "A has 2 dims, so A.shape[2] does not exist", 4, 17},
  {TH "    q = T.q\n",
   "the tile context has m, n, k", 4, 9},
  {TH "    y[0] = 1.0\n",
   "y is written here but is not mut", 4, 5},
  {TH "    r = tile.range_k(x, T.k)\n",
   "tile.range_k walks a dim", 4, 22},
};

static void
test_check_errors(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(bad_kernels); i++) {
    g_autoptr(TsLangNode) tree = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(TsLangKernel) k = check_one(bad_kernels[i].src, &tree, &error);
    if (k != NULL)
      g_error("kernel case %u checked: %s", i, bad_kernels[i].src);
    g_autofree char *where = g_strdup_printf("c.tsk:%d:%d: ", bad_kernels[i].line,
                                             bad_kernels[i].col);
    if (!g_str_has_prefix(error->message, where) ||
        strstr(error->message, bad_kernels[i].needle) == NULL)
      g_error("kernel case %u: wanted %s...%s, got:\n%s", i, where, bad_kernels[i].needle,
              error->message);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/lang/parse/small", test_small);
  g_test_add_func("/lang/parse/expressions", test_expressions);
  g_test_add_func("/lang/parse/statements", test_statements);
  g_test_add_func("/lang/parse/examples", test_examples);
  g_test_add_func("/lang/parse/errors", test_errors);
  g_test_add_func("/lang/parse/limits", test_limits);
  g_test_add_func("/lang/check/examples", test_check_examples);
  g_test_add_func("/lang/check/errors", test_check_errors);
  g_test_add_func("/lang/check/types", test_check_types);
  return g_test_run();
}

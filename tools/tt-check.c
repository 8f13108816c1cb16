/* tt-check.c — `tessera-tune check`: compile every point of an op's CUDA space for one or more
 * GPU architectures with NVRTC + nvJitLink, without a GPU, and report what each kernel uses
 * (registers, shared memory, spills, resident CTAs per SM). CI runs it for every GPU op so that
 * generated code that stops compiling, or starts spilling, fails on a machine with no device;
 * a kernel engineer runs it to see a space's resource picture before renting a GPU. */
#include "tt-cli.h"

#include "ts-cuda.h"

#include <errno.h>
#include <string.h>

typedef struct {
  TsSchedPoint *point;
  char *text;
  gint64 smem_dynamic, threads;
  gboolean ok;
  char *error;
  TsModuleResources res;
  double ms;
  int ctas_per_sm;
  gboolean reused; /* resources read from --reuse's directory, not compiled */
} Job;

static void
job_free(Job *j)
{
  ts_sched_point_free(j->point);
  g_free(j->text);
  g_free(j->error);
  g_free(j);
}

typedef struct {
  TsOpInstance *inst;
  const TsCudaArch *arch;
  const char *reuse; /* --reuse DIR, or NULL */
} Ctx;

/* --reuse: what the linker reported for a kernel, one small JSON file a compile key
 * (ts_cuda_compile_key). A file that is missing, unreadable or not such a record is a miss:
 * the kernel is compiled again and the file replaced. */
static const char *const reuse_fields[] = {"registers", "smem_static", "local_bytes",
                                           "spill_stores", "spill_loads"};

static gint *
reuse_field(TsModuleResources *r, guint i)
{
  gint *const at[] = {&r->registers, &r->smem_static, &r->local_bytes, &r->spill_stores,
                      &r->spill_loads};
  G_STATIC_ASSERT(G_N_ELEMENTS(at) == G_N_ELEMENTS(reuse_fields));
  return at[i];
}

static gboolean
reuse_load(const char *path, TsModuleResources *out)
{
  g_autoptr(JsonParser) parser = json_parser_new();
  if (!json_parser_load_from_file(parser, path, NULL))
    return FALSE;
  JsonNode *root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
    return FALSE;
  JsonObject *o = json_node_get_object(root);
  TsModuleResources r = *out;
  for (guint i = 0; i < G_N_ELEMENTS(reuse_fields); i++) {
    JsonNode *v = json_object_get_member(o, reuse_fields[i]);
    if (v == NULL || json_node_get_value_type(v) != G_TYPE_INT64)
      return FALSE;
    gint64 x = json_node_get_int(v);
    if (x < -1 || x > G_MAXINT)
      return FALSE;
    *reuse_field(&r, i) = (gint)x;
  }
  *out = r;
  return TRUE;
}

/* Written whole under a temporary name and renamed, so a reader never sees half a record. */
static void
reuse_store(const char *path, TsModuleResources *res)
{
  g_autoptr(GString) text = g_string_new("{");
  for (guint i = 0; i < G_N_ELEMENTS(reuse_fields); i++)
    g_string_append_printf(text, "%s\"%s\": %d", i ? ", " : "", reuse_fields[i],
                           *reuse_field(res, i));
  g_string_append(text, "}\n");
  g_autoptr(GError) error = NULL;
  if (!g_file_set_contents(path, text->str, (gssize)text->len, &error))
    g_printerr("tessera-tune check: cannot keep the kernel's resources for --reuse: %s\n",
               error->message);
}

/* Resident CTAs per SM by registers, shared memory and threads: what limits occupancy. */
static int
ctas_per_sm(const TsCudaArch *arch, const TsModuleResources *r, gint64 threads, gint64 smem)
{
  if (r->registers <= 0 || threads <= 0)
    return 0;
  /* Registers are allocated per warp in units of 256. */
  gint64 warps = (threads + 31) / 32;
  gint64 regs_warp = ((gint64)r->registers * 32 + 255) / 256 * 256;
  gint64 by_regs = arch->regs_per_sm / (regs_warp * warps);
  gint64 total_smem = smem + MAX(r->smem_static, 0) + 1024; /* 1 KiB reserved per CTA */
  gint64 by_smem = total_smem > 0 ? arch->smem_per_sm / total_smem : 32;
  gint64 by_threads = arch->max_threads_per_sm / threads;
  return (int)MIN(MIN(by_regs, by_smem), MIN(by_threads, 32));
}

static void
run_job(gpointer data, gpointer user)
{
  Job *j = data;
  const Ctx *c = user;
  g_autoptr(GError) error = NULL;
  g_autofree char *entry = NULL;
  g_autoptr(TsTileKernel) kernel = ts_op_lower(c->inst, "cuda", j->point, &error);
  g_autofree char *src = kernel ? ts_op_emit(c->inst, "cuda", j->point, &entry, NULL, &error) : NULL;
  if (src == NULL) {
    j->error = g_strdup(error->message);
    return;
  }
  const TsTileNode *grid = ts_tile_kernel_grid(kernel);
  j->smem_dynamic = grid ? grid->ints[4] : 0;
  j->threads = grid ? grid->ints[3] : 0;
  g_autofree char *kept = NULL;
  if (c->reuse != NULL) {
    g_autofree char *key = ts_cuda_compile_key(src, entry, c->arch->arch, &error);
    if (key == NULL) {
      j->error = g_strdup(error->message);
      return;
    }
    g_autofree char *name = g_strconcat(key, ".json", NULL);
    kept = g_build_filename(c->reuse, name, NULL);
    j->reused = reuse_load(kept, &j->res);
  }
  if (!j->reused) {
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GBytes) cubin = ts_cuda_compile(src, entry, c->arch->arch, &j->res, NULL, &error);
    j->ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
    if (cubin == NULL) {
      j->error = g_strdup(error->message);
      return;
    }
    if (kept != NULL)
      reuse_store(kept, &j->res);
  }
  j->res.smem_dynamic = (gint)j->smem_dynamic;
  j->res.threads = (gint)j->threads;
  gint64 smem = j->smem_dynamic + MAX(j->res.smem_static, 0);
  if (smem > c->arch->smem_per_block) {
    j->error = g_strdup_printf("uses %" G_GINT64_FORMAT " bytes of shared memory, more than the "
                               "%u a block may have on %s: the space's constraints should have "
                               "pruned it", smem, c->arch->smem_per_block, c->arch->arch);
    return;
  }
  j->ctas_per_sm = ctas_per_sm(c->arch, &j->res, j->threads, j->smem_dynamic);
  j->ok = TRUE;
}

static void
print_job(const Job *j, const char *arch, gboolean json)
{
  if (json) {
    g_autofree char *p = g_strescape(j->text, NULL);
    g_autofree char *e = j->error ? g_strescape(j->error, NULL) : NULL;
    g_print("{\"arch\": \"%s\", \"schedule\": \"%s\", \"ok\": %s, \"registers\": %d, "
            "\"smem_static\": %d, \"smem_dynamic\": %" G_GINT64_FORMAT ", \"threads\": %"
            G_GINT64_FORMAT ", \"local_bytes\": %d, \"spill_stores\": %d, \"spill_loads\": %d, "
            "\"ctas_per_sm\": %d, \"compile_ms\": %.0f%s%s%s%s}\n",
            arch, p, j->ok ? "true" : "false", j->res.registers, j->res.smem_static,
            j->smem_dynamic, j->threads, j->res.local_bytes, j->res.spill_stores,
            j->res.spill_loads, j->ctas_per_sm, j->ms, j->reused ? ", \"reused\": true" : "",
            e ? ", \"error\": \"" : "", e ? e : "", e ? "\"" : "");
    return;
  }
  if (!j->ok) {
    g_print("  %-7s FAILED  %s\n          %s\n", arch, j->text, j->error);
    return;
  }
  g_autofree char *ms = j->reused ? g_strdup("kept") : g_strdup_printf("%.0f", j->ms);
  g_print("  %-7s %4d %7.1f %6d %5d %4d %6s  %s\n", arch, j->res.registers,
          (j->smem_dynamic + MAX(j->res.smem_static, 0)) / 1024.0, j->res.spill_stores,
          j->res.local_bytes, j->ctas_per_sm, ms, j->text);
}

int
tt_cmd_check(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse("check", "OP",
                "Compile every valid point of OP's CUDA space (or --space, or one --schedule)\n"
                "for each GPU arch with NVRTC + nvJitLink — no GPU needed — and report\n"
                "registers, shared memory, spills and resident CTAs per SM of each kernel.\n"
                "Fails (exit 1) when a point does not compile or exceeds the arch's limits.\n"
                "With --reuse DIR, a kernel whose code was compiled before for the arch (by\n"
                "any op or kernel file) is not compiled again: its resources are read from DIR\n"
                "(ms shows 'kept'). --where EXPR keeps the points of the space that satisfy\n"
                "EXPR as well.",
                TT_OPT_WORKLOAD | TT_OPT_SCHEDULE | TT_OPT_SPACE | TT_OPT_JSON | TT_OPT_ARCH |
                  TT_OPT_KERNEL | TT_OPT_REUSE | TT_OPT_WHERE,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  const char *op = NULL;
  int rc = tt_op_arg(&a, argc, argv, "check", &op);
  if (rc != TT_EXIT_OK)
    return rc;
  if (a.where && a.schedule)
    return tt_usage("--where selects points of a space; --schedule names one point already");
  g_autoptr(GError) error = NULL;
  g_autofree char *toolchain = ts_cuda_toolchain(&error);
  if (toolchain == NULL)
    return tt_fail(TT_EXIT_MACHINE, error);
  g_autoptr(TsOpInstance) inst = tt_workload(op, &a, &error);
  if (inst == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  g_auto(GStrv) archs = g_strsplit(a.arch ? a.arch : "sm_90a,sm_80", ",", -1);
  if (a.reuse != NULL && g_mkdir_with_parents(a.reuse, 0755) != 0) {
    int saved = errno;
    g_set_error(&error, G_FILE_ERROR, g_file_error_from_errno(saved),
                "--reuse %s: cannot create the directory: %s", a.reuse, g_strerror(saved));
    return tt_fail(TT_EXIT_MACHINE, error);
  }

  int status = TT_EXIT_OK;
  guint n_ok = 0, n_failed = 0, n_kept = 0;
  for (guint ai = 0; archs[ai]; ai++) {
    const TsCudaArch *arch = ts_cuda_arch_lookup(g_strstrip(archs[ai]));
    if (arch == NULL)
      return tt_usage("unknown GPU arch '%s' (sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100a, "
                      "sm_120)", archs[ai]);
    /* The constraints see this arch's limits, as they would see a real device's. */
    TsDeviceInfo dev = {.backend = (char *)"cuda", .name = (char *)arch->arch,
                        .arch = (char *)arch->arch, .smem_per_block = arch->smem_per_block};
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, &dev);
    g_autoptr(GPtrArray) jobs = g_ptr_array_new_with_free_func((GDestroyNotify)job_free);
    if (a.schedule) {
      /* An empty --schedule is the op's default point. */
      g_autoptr(TsSchedPoint) user =
        *a.schedule ? ts_sched_point_parse(a.schedule, &error) : ts_sched_point_new();
      TsSchedPoint *p = user ? ts_op_instance_complete_point(inst, "cuda", user, &error) : NULL;
      if (p == NULL)
        return tt_fail(TT_EXIT_USAGE, error);
      Job *j = g_new0(Job, 1);
      j->point = p;
      g_ptr_array_add(jobs, j);
    } else {
      g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cuda", a.space, &error);
      if (space == NULL)
        return tt_fail(TT_EXIT_USAGE, error);
      if (a.where && !ts_sched_space_add_constraint(space, a.where, &error)) {
        g_prefix_error(&error, "--where: ");
        return tt_fail(TT_EXIT_USAGE, error);
      }
      g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
      TsSchedPoint *p = NULL;
      while (ts_sched_iter_next(it, &p, &error)) {
        Job *j = g_new0(Job, 1);
        j->point = p;
        g_ptr_array_add(jobs, j);
      }
      if (error)
        return tt_fail(TT_EXIT_USAGE, error);
    }
    for (guint i = 0; i < jobs->len; i++) {
      Job *j = g_ptr_array_index(jobs, i);
      j->text = ts_sched_point_to_string(j->point);
    }
    /* NVRTC and nvJitLink are thread-safe per program: compile on every core. */
    Ctx ctx = {inst, arch, a.reuse};
    GThreadPool *pool = g_thread_pool_new(run_job, &ctx, (gint)MAX(g_get_num_processors(), 1),
                                          FALSE, NULL);
    for (guint i = 0; i < jobs->len; i++)
      g_thread_pool_push(pool, g_ptr_array_index(jobs, i), NULL);
    g_thread_pool_free(pool, FALSE, TRUE);

    if (!a.json && ai == 0) {
      g_autofree char *what = ts_op_instance_describe(inst);
      g_print("%s — %s\n  arch    regs smem_KiB spills stack ctas/SM  ms    schedule\n", what,
              toolchain);
    }
    for (guint i = 0; i < jobs->len; i++) {
      const Job *j = g_ptr_array_index(jobs, i);
      print_job(j, arch->arch, a.json);
      n_kept += j->reused;
      if (j->ok)
        n_ok++;
      else
        n_failed++;
    }
  }
  if (!a.json && n_kept == 0)
    g_print("%u kernels compiled, %u failed\n", n_ok, n_failed);
  else if (!a.json)
    g_print("%u kernels compiled, %u failed; %u of them compiled before, read from --reuse\n",
            n_ok, n_failed, n_kept);
  if (n_failed)
    status = TT_EXIT_CANDIDATE;
  return status;
}

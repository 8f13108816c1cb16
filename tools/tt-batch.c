/* tt-batch.c — `tessera-tune batch FILE`: tunes a list of workloads (a model's GEMM and
 * attention shapes), one a line, each exactly as `tessera-tune tune` would, with the batch's
 * options under the line's own. Every line is checked before any is tuned, so a typo on line 90
 * does not surface after an hour; a workload the file repeats (the same shape in several
 * layers) is tuned once. A re-run resumes every workload from the cache. */
#include <stdio.h>
#include <string.h>

#include "tt-cli.h"
#include "ts-tune.h"

/* What a line may set, and what only the whole batch may (one cache, one device, one output
 * format for every workload). */
#define LINE_OPTS (TT_OPT_WORKLOAD | TT_OPT_SPACE | TT_OPT_TUNE | TT_OPT_SEED)
#define BATCH_OPTS (TT_OPT_BACKEND | TT_OPT_SEED | TT_OPT_JSON | TT_OPT_DB | TT_OPT_TUNE)

typedef struct {
  guint line;
  char *text;   /* the line as written */
  char **words; /* OP and the line's options */
  char *what;   /* the workload ("gemm M=..,N=..,K=.. f32"), with its space when it has one */
  TsOpInstance *inst; /* checked once; the closing table looks its best up by it */
  guint repeats; /* the line that first named this workload, 0 for a first */
  guint first;   /* ... and its index in the batch */
  int rc;        /* tune's exit status; -1 when not run */
} Workload;

static void
workload_clear(Workload *w)
{
  g_free(w->text);
  g_strfreev(w->words);
  g_free(w->what);
  g_clear_pointer(&w->inst, ts_op_instance_free);
}

/* tune's argv for a workload: OP, the batch's options, then the line's (GOption keeps the
 * last value of an option, so the line's win). */
static char **
tune_argv(const Workload *w, char *const *batch_opts)
{
  GPtrArray *v = g_ptr_array_new();
  g_ptr_array_add(v, g_strdup("tune"));
  g_ptr_array_add(v, g_strdup(w->words[0]));
  for (guint i = 0; batch_opts[i]; i++)
    g_ptr_array_add(v, g_strdup(batch_opts[i]));
  for (guint i = 1; w->words[i]; i++)
    g_ptr_array_add(v, g_strdup(w->words[i]));
  g_ptr_array_add(v, NULL);
  return (char **)g_ptr_array_free(v, FALSE);
}

/* GOption moves the strings it consumed out of argv without freeing them: parse a shallow copy
 * and free the owner. */
static gboolean
parse_copy(const char *name, guint opts, char *const *argv, TtArgs *a, int *n_left)
{
  int argc = (int)g_strv_length((char **)argv);
  g_autofree char **work = g_memdup2(argv, sizeof(char *) * (gsize)(argc + 1));
  if (!tt_parse(name, "OP", "", opts, a, &argc, &work))
    return FALSE;
  *n_left = argc;
  return TRUE;
}

static gboolean
check_line(Workload *w, const char *file, char *const *batch_opts)
{
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) words = NULL;
  if (!g_shell_parse_argv(w->text, NULL, &words, &error)) {
    g_printerr("tessera-tune: %s:%u: %s\n", file, w->line, error->message);
    return FALSE;
  }
  /* The line alone, against what a line may set. */
  g_autoptr(GPtrArray) alone = g_ptr_array_new();
  g_ptr_array_add(alone, (char *)"tune");
  for (guint i = 0; words[i]; i++)
    g_ptr_array_add(alone, words[i]);
  g_ptr_array_add(alone, NULL);
  g_auto(TtArgs) la = {0};
  int left = 0;
  if (!parse_copy("tune", LINE_OPTS, (char *const *)alone->pdata, &la, &left)) {
    g_printerr("tessera-tune: %s:%u: %s\n  (a line names OP with --shape, --dtype, --space, "
               "--strategy, --budget, --budget-ms, --timeout, --seed; --db, --backend and --json "
               "are the whole batch's)\n", file, w->line, w->text);
    return FALSE;
  }
  if (left != 2 || words[0][0] == '-') {
    g_printerr("tessera-tune: %s:%u: a line names one OP first, then its options: '%s'\n",
               file, w->line, w->text);
    return FALSE;
  }
  w->words = g_steal_pointer(&words);
  /* With the batch's options, as tune will see it. */
  g_auto(GStrv) full = tune_argv(w, batch_opts);
  g_auto(TtArgs) a = {.seed = 1, .budget = -1};
  if (!parse_copy("tune", LINE_OPTS | BATCH_OPTS, full, &a, &left))
    return FALSE;
  g_autoptr(TsOpInstance) inst = tt_workload(w->words[0], &a, &error);
  if (inst == NULL) {
    g_printerr("tessera-tune: %s:%u: %s\n", file, w->line, error->message);
    return FALSE;
  }
  g_autofree char *what = ts_op_instance_describe(inst);
  w->what = a.space ? g_strdup_printf("%s in %s", what, a.space) : g_steal_pointer(&what);
  w->inst = g_steal_pointer(&inst);
  return TRUE;
}

static GArray *
read_batch(const char *file, char *const *batch_opts)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  if (!g_file_get_contents(file, &text, NULL, &error)) {
    g_printerr("tessera-tune: %s\n", error->message);
    return NULL;
  }
  if (!g_utf8_validate(text, -1, NULL)) {
    g_printerr("tessera-tune: %s is not a text file of workloads\n", file);
    return NULL;
  }
  g_autoptr(GArray) ws = g_array_new(FALSE, TRUE, sizeof(Workload));
  g_array_set_clear_func(ws, (GDestroyNotify)workload_clear);
  g_autoptr(GHashTable) first = g_hash_table_new(g_str_hash, g_str_equal);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  gboolean ok = TRUE;
  for (guint i = 0; lines[i]; i++) {
    char *l = g_strstrip(lines[i]);
    if (*l == '\0' || *l == '#')
      continue;
    Workload w = {.line = i + 1, .text = g_strdup(l), .rc = -1};
    if (!check_line(&w, file, batch_opts)) {
      workload_clear(&w);
      ok = FALSE; /* every bad line is reported, not just the first */
      continue;
    }
    guint seen = GPOINTER_TO_UINT(g_hash_table_lookup(first, w.what)); /* index + 1, or 0 */
    if (seen) {
      w.first = seen - 1;
      w.repeats = g_array_index(ws, Workload, w.first).line;
    }
    g_array_append_val(ws, w);
    if (!seen) {
      const Workload *stored = &g_array_index(ws, Workload, ws->len - 1);
      g_hash_table_insert(first, stored->what, GUINT_TO_POINTER(ws->len));
    }
  }
  if (!ok)
    return NULL;
  if (ws->len == 0) {
    g_printerr("tessera-tune: %s names no workload (one a line: OP --shape DIMS [--dtype DTYPE] "
               "[--space SPACE] ...; # starts a comment)\n", file);
    return NULL;
  }
  return g_steal_pointer(&ws);
}

/* The stored best of each workload tuned, for the closing table. */
static void
print_summary(GArray *ws, const TtArgs *ga, const char *file)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) backend = tt_backend(ga, &error);
  g_autoptr(TsDb) db = backend ? tt_db(ga, TT_DB_READ, &error) : NULL;
  if (ga->json)
    g_print("{\"batch\": \"%s\", \"workloads\": [", file);
  else
    g_print("\nbatch %s: %u workloads\n%5s  %-10s %11s  %s\n", file, ws->len, "line", "status",
            "best ms", "workload");
  for (guint i = 0; i < ws->len; i++) {
    const Workload *w = &g_array_index(ws, Workload, i);
    double best_ns = 0;
    if (db && w->rc == TT_EXIT_OK) {
      TsDbKey key;
      g_autofree char *shape = NULL, *dtype = NULL;
      g_auto(TsDbLookupResult) r = {0};
      ts_tune_lookup_key(w->inst, backend, &key, &shape, &dtype);
      if (ts_db_lookup(db, &key, &r, NULL))
        best_ns = r.median_ns;
    }
    const char *status = w->repeats      ? "repeat"
                         : w->rc == 0    ? "tuned"
                         : w->rc == 1    ? "no-best"
                         : w->rc < 0     ? "not-run"
                                         : "failed";
    if (ga->json) {
      g_autofree char *what = g_strescape(w->what, NULL);
      g_print("%s{\"line\": %u, \"workload\": \"%s\", \"status\": \"%s\", \"exit\": %d, "
              "\"repeats_line\": %u, \"best_median_ns\": %.1f}",
              i ? ", " : "", w->line, what, status, w->rc, w->repeats, best_ns);
    } else {
      g_autofree char *best = best_ns > 0 ? g_strdup_printf("%.4f", best_ns / 1e6)
                              : w->repeats ? g_strdup_printf("= line %u", w->repeats)
                                           : g_strdup("-");
      g_print("%5u  %-10s %11s  %s\n", w->line, status, best, w->what);
    }
  }
  if (ga->json)
    g_print("]}\n");
  else if (backend == NULL || db == NULL)
    g_print("(best times not shown: %s)\n", error ? error->message : "no cache");
}

int
tt_cmd_batch(int argc, char **argv)
{
  g_auto(TtArgs) ga = {.seed = 1, .budget = -1};
  /* Kept before parsing: the options are handed on to each workload's tune as written. */
  g_autofree char **given = g_memdup2(argv, sizeof(char *) * (gsize)(argc + 1));
  if (!tt_parse("batch", "FILE",
                "Tune every workload of FILE in turn, each as 'tessera-tune tune' does, into one\n"
                "schedule cache. One workload a line: OP and its options, e.g.\n"
                "\n"
                "  # the GEMMs of one transformer layer\n"
                "  gemm --shape M=4096,N=4096,K=4096 --dtype bf16\n"
                "  gemm --shape M=4096,N=11008,K=4096 --dtype bf16 --budget 100\n"
                "  flash_attention --shape B=1,H=32,S=4096,D=128 --dtype bf16\n"
                "\n"
                "A line may set --shape, --dtype, --space, --strategy, --budget, --budget-ms,\n"
                "--timeout and --seed, over the batch's own; --db, --backend and --json are the\n"
                "whole batch's. Every line is checked before anything is tuned. A workload the\n"
                "file repeats is tuned once. A re-run resumes each workload from the cache. The\n"
                "last lines are a table of the workloads and their best times (with --json,\n"
                "each tune's JSON object, then one for the batch). Exit status: the worst of the\n"
                "workloads'; a cache or device failure (3) stops the batch.",
                BATCH_OPTS, &ga, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc != 2)
    return tt_usage("batch takes one FILE of workloads");
  if (ga.budget < -1 || !(ga.budget_ms >= 0) || !(ga.timeout_s >= 0))
    return tt_usage("--budget, --budget-ms and --timeout must be positive numbers");
  const char *file = argv[1];
  /* The batch's options as written: everything given but the subcommand and FILE. */
  g_autoptr(GPtrArray) opts = g_ptr_array_new();
  for (guint i = 1; given[i]; i++)
    if (given[i] != file)
      g_ptr_array_add(opts, given[i]);
  g_ptr_array_add(opts, NULL);
  char *const *batch_opts = (char *const *)opts->pdata;

  g_autoptr(GArray) ws = read_batch(file, batch_opts);
  if (ws == NULL)
    return TT_EXIT_USAGE;
  guint n_unique = 0;
  for (guint i = 0; i < ws->len; i++)
    n_unique += g_array_index(ws, Workload, i).repeats == 0;
  int worst = TT_EXIT_OK;
  guint done = 0;
  for (guint i = 0; i < ws->len; i++) {
    Workload *w = &g_array_index(ws, Workload, i);
    if (w->repeats)
      continue;
    if (!ga.json)
      g_print("%s== workload %u of %u (%s line %u): %s\n", done ? "\n" : "", done + 1, n_unique,
              file, w->line, w->what);
    done++;
    g_auto(GStrv) full = tune_argv(w, batch_opts);
    int n = (int)g_strv_length(full);
    g_autofree char **work = g_memdup2(full, sizeof(char *) * (gsize)(n + 1));
    w->rc = tt_cmd_tune(n, work);
    worst = MAX(worst, w->rc);
    if (w->rc == TT_EXIT_MACHINE) {
      g_printerr("tessera-tune: %s line %u failed on the device or the cache; the batch stops "
                 "(a re-run resumes what is stored)\n", file, w->line);
      break;
    }
  }
  /* A repeat shares its first line's fate. */
  for (guint i = 0; i < ws->len; i++) {
    Workload *w = &g_array_index(ws, Workload, i);
    if (w->repeats)
      w->rc = g_array_index(ws, Workload, w->first).rc;
  }
  print_summary(ws, &ga, file);
  return worst;
}

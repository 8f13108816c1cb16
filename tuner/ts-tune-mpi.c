/* ts-tune-mpi.c — distributed tuning's entry points (ts-tune-mpi.h): they load the MPI module
 * (libtessera-mpi.so, ts-tune-mpi-module.h) the first time mpirun's ranks need it and forward to
 * it. Looked for in $TESSERA_MPI_MODULE, beside the running binary's build tree, then where it
 * is installed. */
#include "config.h"

#include "ts-tune-mpi.h"

#include <gmodule.h>
#include <stdlib.h>

#include "ts-tune-mpi-module.h"
#include "ts-tune-worker.h"

static const TsTuneMpiModule *mod;

gboolean
ts_tune_mpi_launched(void)
{
  /* Open MPI's launcher, then the PMI ones (MPICH's hydra, Slurm's srun). */
  static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
  for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
    const char *v = g_getenv(sizes[i]);
    if (v && atoi(v) > 1)
      return TRUE;
  }
  return FALSE;
}

static GPtrArray *
module_paths(void)
{
  GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
  const char *env = g_getenv("TESSERA_MPI_MODULE");
  if (env && *env)
    g_ptr_array_add(paths, g_strdup(env));
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  if (exe) {
    /* build/tools/tessera-tune beside build/tuner/libtessera-mpi.so */
    g_autofree char *dir = g_path_get_dirname(exe);
    g_ptr_array_add(paths, g_build_filename(dir, "..", "tuner", "libtessera-mpi.so", NULL));
  }
  g_ptr_array_add(paths, g_build_filename(TS_MPI_MODULE_DIR, "libtessera-mpi.so", NULL));
  return paths;
}

gboolean
ts_tune_mpi_init(GError **error)
{
  static const TsTuneMpiHost host = {
    .worker_new = ts_tune_worker_new,
    .worker_answer = ts_tune_worker_answer,
    .worker_free = ts_tune_worker_free,
  };
  if (mod == NULL) {
    g_autoptr(GPtrArray) paths = module_paths();
    g_autoptr(GString) tried = g_string_new(NULL);
    for (guint i = 0; i < paths->len && mod == NULL; i++) {
      const char *path = g_ptr_array_index(paths, i);
      if (!g_file_test(path, G_FILE_TEST_EXISTS))
        continue;
      /* Global symbols: Open MPI's own components expect to find libmpi's. Never unloaded. */
      GModule *m = g_module_open(path, G_MODULE_BIND_LAZY);
      gpointer sym = NULL;
      if (m && g_module_symbol(m, TS_TUNE_MPI_MODULE_SYMBOL, &sym) &&
          ((const TsTuneMpiModule *)sym)->abi == TS_TUNE_MPI_ABI) {
        g_module_make_resident(m);
        mod = sym;
        break;
      }
      g_string_append_printf(tried, "; %s: %s", path,
                             m ? "not this build's MPI module" : g_module_error());
      if (m)
        g_module_close(m);
    }
    if (mod == NULL) {
      g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_FAILED,
                  "started by mpirun as one of several ranks, but this tessera-tune has no MPI "
                  "module (libtessera-mpi.so; built without libopenmpi-dev, or not installed%s)",
                  tried->str);
      return FALSE;
    }
  }
  return mod->init(&host, error);
}

int
ts_tune_mpi_rank(void)
{
  return mod ? mod->rank() : 0;
}

int
ts_tune_mpi_size(void)
{
  return mod ? mod->size() : 1;
}

int
ts_tune_mpi_serve(const char *worker_exe, const char *device)
{
  g_return_val_if_fail(mod != NULL, 3);
  return mod->serve(worker_exe, device);
}

const TsTuneFarm *
ts_tune_mpi_farm(const char *device, GError **error)
{
  g_return_val_if_fail(mod != NULL, NULL);
  return mod->farm(device, error);
}

int
ts_tune_mpi_coll_run(const TsCollRunArgs *args)
{
  g_return_val_if_fail(mod != NULL, 3);
  return mod->coll_run(args);
}

const TsCollComm *
ts_tune_mpi_coll_comm(void)
{
  g_return_val_if_fail(mod != NULL, NULL);
  return mod->coll_comm();
}

void
ts_tune_mpi_finalize(void)
{
  if (mod)
    mod->finalize();
}

"""taputil.py — what the end-to-end Python tests share: TAP lines that stop at the first
failure, a subprocess run that shows what a failing command printed, and SQLite queries on a
schedule cache. Imported from the test's own folder (Python puts it first on sys.path)."""
import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

count = 0


def ok(cond, what):
    """One TAP line; the first failure ends the test with the plan so far."""
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        print("1..%d" % count)
        sys.exit(1)


def scratch(prefix):
    """A fresh directory for the test's files, removed when the test exits however it ends (a
    failed check, an exception); KEEP=1 in the environment keeps it and prints its path."""
    path = tempfile.mkdtemp(prefix=prefix)
    if os.environ.get("KEEP"):
        print("# scratch directory kept: %s" % path)
    else:
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def done():
    print("1..%d" % count)


def run(argv, env, check=None, timeout=900):
    """Runs argv; when its exit status is not check, prints (as TAP comments) what it wrote."""
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        print("# exit %d from %s\n# stdout: %s\n# stderr: %s" % (p.returncode, argv,
                                                               p.stdout[-3000:], p.stderr[-3000:]))
    return p


def rows(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def mpi_env(with_mpi, cache_dir, slow_unwind=True, **extra):
    """For the tests that start MPI jobs: mpirun's path and the environment to run them in, or a
    TAP skip (exit 77) when this build or machine has no MPI. The environment lets root run
    several ranks on a small machine, and keeps Open MPI's components loaded, so a sanitized
    build's leak report can name (and tests/lsan.supp suppress) Open MPI's own never-freed state;
    the slow unwinder walks its frame-pointer-less code. slow_unwind=False keeps ASan's fast
    one, for jobs whose Open MPI blocks are all allocated straight from a suppressed library's
    code (the immediate caller, which the fast unwinder always has): a quarter of the CPU."""
    mpirun = shutil.which("mpirun")
    if not with_mpi or mpirun is None:
        print("1..0 # SKIP %s" % ("tessera-tune was built without MPI (libopenmpi-dev)"
                                  if not with_mpi else "no mpirun (openmpi-bin)"))
        sys.exit(77)
    env = dict(os.environ, XDG_CACHE_HOME=cache_dir, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_mca_base_component_disable_dlclose="1",
               PMIX_MCA_mca_base_component_disable_dlclose="1", **extra)
    if "ASAN_OPTIONS" in env and slow_unwind:
        env["ASAN_OPTIONS"] += ":fast_unwind_on_malloc=0"
    return mpirun, env


def without_leak_check(env):
    """env for MPI jobs that repeat a code path another job of the test leak-checks: under ASan,
    no leak check and the fast unwinder. LSan at exit, over Open MPI's thousands of never-freed
    blocks unwound slowly, costs each rank about a second (2.4 s a launch against 0.6 s), and a
    tune launches its ranks once per candidate."""
    if "ASAN_OPTIONS" not in env:
        return env
    opts = [o for o in env["ASAN_OPTIONS"].split(":")
            if o and not o.startswith(("detect_leaks=", "fast_unwind_on_malloc="))]
    return dict(env, ASAN_OPTIONS=":".join(opts + ["detect_leaks=0"]))

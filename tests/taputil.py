"""taputil.py — what the end-to-end Python tests share: TAP lines that stop at the first
failure, a subprocess run that shows what a failing command printed, and SQLite queries on a
schedule cache. Imported from the test's own folder (Python puts it first on sys.path)."""
import sqlite3
import subprocess
import sys

count = 0


def ok(cond, what):
    """One TAP line; the first failure ends the test with the plan so far."""
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        print("1..%d" % count)
        sys.exit(1)


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

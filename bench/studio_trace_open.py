#!/usr/bin/env python3
"""How fast tessera-studio reads a large Chrome trace, and in how much memory: a synthesised
PyTorch-profiler-like trace of 10^6 events (about 110 MB: CPU ops and kernels on 8 threads with
their args, thread-name metadata, a few counters), read by `tessera-studio --export timeline
--trace` (parse, prepare the timeline, draw one frame to SVG), next to Python's json.load of the
same file (a C-accelerated parser that builds the whole document) in the same run. Then the
window itself (`tessera-studio --timing TRACE` on an X display; the script starts Xvfb when
there is none): seconds from launch until the window is first painted, and until the trace's
timeline is painted. Each figure is the best of --repeats runs; memory is the peak resident set
of the process.

  bench/studio_trace_open.py --studio build/tools/tessera-studio [--events N] [--repeats N]"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time


def synthesise(path, n):
    rng = random.Random(1)
    ops = ["aten::mm", "aten::add_", "aten::linear", "aten::softmax", "cudaLaunchKernel",
           "cudaMemcpyAsync"]
    kernels = ["ampere_sgemm_128x64_tn", "void at::native::vectorized_elementwise_kernel<4>",
               "void cunn_SoftMaxForward<4, float>", "Memcpy HtoD (Pageable -> Device)"]
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        meta = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]
        meta += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": "thread %d" % t}}
                 for t in range(8)]
        for m in meta:
            f.write(json.dumps(m, separators=(",", ":")) + ",\n")
        t = 1.7e15  # epoch microseconds, as the PyTorch profiler writes them
        for i in range(n):
            t += rng.random() * 2
            tid = rng.randrange(8)
            gpu = tid < 3
            e = {"ph": "X", "cat": "kernel" if gpu else "cpu_op",
                 "name": rng.choice(kernels if gpu else ops), "pid": 1, "tid": tid,
                 "ts": round(t, 3), "dur": round(rng.random() * 3, 3),
                 "args": {"External id": i, "correlation": i + 7}}
            if i % 1000 == 0:
                f.write(json.dumps({"ph": "C", "name": "GPU memory", "pid": 1, "ts": round(t, 3),
                                    "args": {"bytes": rng.randrange(1 << 30)}},
                                   separators=(",", ":")) + ",\n")
            f.write(json.dumps(e, separators=(",", ":")) + (",\n" if i + 1 < n else "\n"))
        f.write("]}\n")


def measure(cmd):
    """Wall seconds and peak RSS (MiB) of one run of cmd."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("studio_trace_open: %s failed: %s" % (cmd, p.stderr.read().decode()[-500:]))
    return wall, usage.ru_maxrss / 1024


def start_display():
    """A display for the window: $DISPLAY, else a private Xvfb (None, None: neither)."""
    if os.environ.get("DISPLAY"):
        return os.environ["DISPLAY"], None
    if shutil.which("Xvfb") is None:
        return None, None
    for n in range(90, 110):
        if os.path.exists("/tmp/.X11-unix/X%d" % n) or os.path.exists("/tmp/.X%d-lock" % n):
            continue
        x = subprocess.Popen(["Xvfb", ":%d" % n, "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists("/tmp/.X11-unix/X%d" % n):
                return ":%d" % n, x
            time.sleep(0.05)
        x.kill()
    return None, None


def measure_window(studio, trace, display, tmp):
    """Seconds from launch to the first painted window and to the painted timeline, and the
    peak MiB, of one `tessera-studio --timing` run."""
    env = dict(os.environ, DISPLAY=display, GDK_BACKEND="x11", GTK_A11Y="none",
               GDK_DEBUG="gl-disable")
    log = os.path.join(tmp, "timing.txt")
    with open(log, "w") as out:
        t0 = time.monotonic()
        p = subprocess.Popen([studio, "--timing", trace], stdout=out, stderr=subprocess.PIPE,
                             env=env)
        _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("studio_trace_open: --timing failed: %s" % p.stderr.read().decode()[-500:])
    marks = dict(line.split() for line in open(log) if len(line.split()) == 2)
    return (int(marks["window"]) / 1e6 - t0, int(marks["content"]) / 1e6 - t0,
            usage.ru_maxrss / 1024)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--studio", required=True)
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        synthesise(trace, a.events)
        size = os.path.getsize(trace) / (1 << 20)
        runs = {
            "tessera-studio": [a.studio, "--export", "timeline", "--trace", trace,
                               "--output", os.path.join(tmp, "t.svg")],
            "python json.load": [sys.executable, "-c",
                                 "import json,sys; json.load(open(sys.argv[1]))", trace],
        }
        best = {}
        for _ in range(a.repeats):
            for name, cmd in runs.items():
                w, m = measure(cmd)
                b = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(b[0], w), min(b[1], m))
        print("# %d events, %.0f MiB trace; best of %d runs each, interleaved"
              % (a.events, size, a.repeats))
        print("%-18s %8s %10s %10s" % ("reader", "wall s", "peak MiB", "x file"))
        for name, (w, m) in best.items():
            print("%-18s %8.2f %10.0f %10.2f" % (name, w, m, m / size))
        s, p = best["tessera-studio"], best["python json.load"]
        print("tessera-studio / json.load: %.2fx the time, %.2fx the memory" % (s[0] / p[0], s[1] / p[1]))
        display, xvfb = start_display()
        if display is None:
            print("# window: skipped, no $DISPLAY and no Xvfb")
            return
        try:
            runs = [measure_window(a.studio, trace, display, tmp) for _ in range(a.repeats)]
        finally:
            if xvfb:
                xvfb.kill()
        window = min(r[0] for r in runs)
        content = min(r[1] for r in runs)
        mem = min(r[2] for r in runs)
        print("# the window (tessera-studio --timing, display %s), best of %d" % (display, a.repeats))
        print("window painted      %6.2f s after launch" % window)
        print("timeline painted    %6.2f s after launch, peak %.0f MiB (%.2fx the file)"
              % (content, mem, mem / size))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""test-studio.py — end-to-end tests of tessera-studio through the real binaries: a cache made
by the real tuner (tune, then profile) opened with --screenshots; every page saved as a PNG that
decodes and shows content, and the manifest's figures equal to the cache's (trials, verified
trials on the roofline, profile events on the timeline, the lowering as `tessera-tune lower`
prints it); a cache without profiles, an empty cache, a Chrome trace, a corrupt and a missing
file. Needs a display: meson runs the whole script under xvfb-run when it is installed; skips
(77) without one. Prints TAP."""
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import time
import zlib

from taputil import scratch

TT, STUDIO = sys.argv[1], sys.argv[2]
TMP = scratch("tessera-studio-test-")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"),
           XDG_DATA_HOME=os.path.join(TMP, "data"), XDG_CONFIG_HOME=os.path.join(TMP, "config"),
           GTK_A11Y="none", GSETTINGS_BACKEND="memory",
           # Mesa's software GL driver (all Xvfb offers) leaks 128 bytes when it is unloaded,
           # which fails the ASan build; GTK's cairo renderer draws the same content.
           GDK_DEBUG="gl-disable")
SHAPE = ["gemm", "--shape", "M=64,N=64,K=64"]
PAGES = ["trials", "roofline", "history", "predicted", "timeline", "lowering", "bandwidth",
         "lowering-diff"]
count = 0


def ok(cond, what):
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        print("1..%d" % count)
        sys.exit(1)


def run(cmd, env=None, timeout=300):
    p = subprocess.run(cmd, env=env or ENV, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        print("# exit %d from %s\n# stdout: %s\n# stderr: %s" % (
            p.returncode, cmd[-4:], p.stdout[-2000:], p.stderr[-2000:]))
    return p


def rows(db, sql, *params):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def png_pixels(path):
    """(width, height, list of pixel tuples) of an 8-bit RGB/RGBA PNG, unfiltered."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format %s" % (ihdr,)
    bpp = 3 if colour == 2 else 4
    raw, stride, prev, pixels, i = zlib.decompress(idat), width * bpp, bytearray(width * bpp), [], 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            line[x] = (line[x] + (0, a, b, (a + b) // 2, paeth(a, b, c))[ftype]) & 0xFF
        pixels.extend(bytes(line[x:x + bpp]) for x in range(0, stride, bpp))
        prev = line
    return width, height, pixels


def check_png(out, page):
    """The page's PNG decodes at the manifest's size and is not one flat colour."""
    path = os.path.join(out, page["file"])
    width, height, pixels = png_pixels(path)
    ok((width, height) == (page["width"], page["height"]),
       "%s: the PNG is %dx%d as the manifest says" % (page["page"], width, height))
    colours = {}
    for p in pixels:
        colours[p] = colours.get(p, 0) + 1
    top = max(colours.values()) / len(pixels)
    ok(len(colours) >= 16 and top < 0.98,
       "%s: the picture has content (%d colours, the commonest %.0f%%)" % (
           page["page"], len(colours), 100 * top))
    return hash(bytes(b for p in pixels[::97] for b in p))


def screenshots(path, name):
    out = os.path.join(TMP, name)
    p = run([STUDIO, path, "--screenshots", out])
    manifest = None
    if p.returncode == 0:
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
    return p, out, manifest


if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    print("1..0 # SKIP no display: install xvfb (xvfb-run) to run the studio's tests")
    sys.exit(77)

# ---- a real cache: six tuned trials, then a profile of the best ----
DB = os.path.join(TMP, "t.db")
p = run([TT, "tune", *SHAPE, "--budget", "6", "--db", DB])
ok(p.returncode == 0, "tessera-tune tune makes a cache")
p = run([TT, "profile", *SHAPE, "--db", DB])
ok(p.returncode == 0, "tessera-tune profile stores a profile")

NO_DISPLAY = {k: v for k, v in ENV.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
p = run([STUDIO, "--version"], env=NO_DISPLAY)
ok(p.returncode == 0 and p.stdout.startswith("tessera-studio "), "--version, without a display")
p = run([STUDIO, "--help"])
ok(p.returncode == 0 and "--screenshots" in p.stdout, "--help documents --screenshots")
p = run([STUDIO, "--no-such-option"])
ok(p.returncode == 2 and "--no-such-option" in p.stderr, "an unknown option is a usage error")

# --timing: the window's first paint, then the content's, on CLOCK_MONOTONIC (what
# bench/studio_trace_open.py times the open of a large trace with), then it quits by itself.
t0 = time.monotonic()
p = run([STUDIO, "--timing", os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                              "foreign-trace.json")])
t1 = time.monotonic()
marks = dict(line.split() for line in p.stdout.splitlines() if len(line.split()) == 2)
ok(p.returncode == 0 and set(marks) == {"window", "content"},
   "--timing prints when the window and the trace were painted")
ok(t0 <= int(marks.get("window", 0)) / 1e6 <= int(marks.get("content", 0)) / 1e6 <= t1,
   "--timing's marks are in order, within the run, on the caller's monotonic clock")
p = run([STUDIO, "--timing"], env=dict(ENV, XDG_CACHE_HOME=os.path.join(TMP, "nocache")))
ok(p.returncode == 2 and "PATH" in p.stderr, "--timing without a file is a usage error")

p, out, m = screenshots(DB, "shots")
ok(p.returncode == 0 and m is not None, "--screenshots exits 0 and writes a manifest")
ok(m["state"] == "workbench" and [pg["page"] for pg in m["pages"]] == PAGES,
   "every page is in the manifest, in order")
ok(sorted(f for f in os.listdir(out) if f.endswith(".png")) == sorted(pg + ".png" for pg in PAGES),
   "one PNG per page")
hashes = {check_png(out, pg) for pg in m["pages"]}
ok(len(hashes) == len(PAGES), "the pages' pictures all differ")
page = {pg["page"]: pg for pg in m["pages"]}

w, d, t = (int(x) for x in m["workload"]["key"].split("/"))
KEY = "workload_id = ? AND device_id = ? AND toolchain_id = ?"
(n_trials,), = rows(DB, "SELECT count(*) FROM trial WHERE " + KEY, w, d, t)
(n_ok,), = rows(DB, "SELECT count(*) FROM trial WHERE status = 'ok' AND " + KEY, w, d, t)
(best,), = rows(DB, "SELECT trial_id FROM best WHERE " + KEY, w, d, t)
(all_trials,), = rows(DB, "SELECT count(*) FROM trial")
ok(m["workload"]["n_trials"] == n_trials == all_trials and page["trials"]["rows"] == n_trials,
   "the trials list has every trial of the cache (%d)" % n_trials)
ok(m["sidebar_rows"] == 2, "the sidebar: one device, one workload")
ok(page["trials"]["selected"] == [best], "the best trial is selected when the workload opens")
ok(page["roofline"]["view"] == "roofline" and page["roofline"]["n_marks"] == n_ok,
   "the roofline holds one mark per verified trial (%d)" % n_ok)
ok(page["history"]["view"] == "history" and page["predicted"]["view"] == "predicted",
   "the history and predicted pages show their views")
ok(page["bandwidth"]["view"] == "bandwidth" and page["bandwidth"]["n_marks"] == 0,
   "the bandwidth page says a gemm is not a collective, with nothing drawn")
ok(all(page[x]["n_drawn"] > 0 for x in ("roofline", "history", "predicted", "timeline")),
   "every plot drew marks")

(profile_id, n_events), = rows(
    DB, "SELECT p.id, (SELECT count(*) FROM profile_event e WHERE e.profile_id = p.id) "
        "FROM profile p WHERE p.workload_id = ? ORDER BY p.id DESC LIMIT 1", w)
tl = page["timeline"]
ok(tl["placeholder"] is None and tl["profile_id"] == profile_id, "the timeline shows the profile")
ok(tl["view"] == "timeline" and tl["n_marks"] == n_events,
   "the timeline holds the profile's %d events" % n_events)

# The lowering is what `tessera-tune lower` prints for the selected trial.
lo = page["lowering"]
(schedule,), = rows(DB, "SELECT schedule FROM trial WHERE id = ?", lo["selected"][0])
p = run([TT, "lower", *SHAPE, "--backend", "cpu", "--schedule", schedule])
sections, current = {}, None
for line in p.stdout.splitlines():
    if line.startswith("== ") and line.endswith(" =="):
        current = line[3:-3].split(" ")[0]
    elif current and current not in sections:
        sections[current] = line
stages = lo["stages"]
ok([s["name"] for s in stages] == ["Graph", "Schedule", "Tile", "Target IR"],
   "the lowering has its four stages")
ok(stages[0]["first_line"].startswith("graph gemm") and
   stages[2]["first_line"].startswith("tile.kernel"), "graph and tile stages start as they should")
ok([s["first_line"] for s in stages] ==
   [sections.get(k) for k in ("graph", "schedule", "tile", "target")],
   "each stage starts as tessera-tune lower prints it")
diff = page["lowering-diff"]
ok(diff["diff"] and len(diff["selected"]) == 2 and best in diff["selected"] and
   diff["n_changed"] > 0, "the diff page compares the best with another trial")

# ---- the same cache without its profiles: the timeline's empty state ----
NOPROF = os.path.join(TMP, "noprof.db")
shutil.copy(DB, NOPROF)
con = sqlite3.connect(NOPROF)
con.execute("DELETE FROM profile_event")
con.execute("DELETE FROM profile")
con.commit()
con.close()
p, out, m = screenshots(NOPROF, "noprof")
ok(p.returncode == 0, "a cache without profiles opens")
tl = {pg["page"]: pg for pg in m["pages"]}["timeline"]
ok(tl["placeholder"] and tl["placeholder"].startswith("No profile in this cache") and
   "tessera-tune profile" in tl["placeholder"] and "view" not in tl,
   "the timeline says how to record a profile")
check_png(out, tl)

# ---- an empty cache ----
EMPTY = os.path.join(TMP, "empty.db")
p = run([TT, "export", "--db", EMPTY])
ok(p.returncode == 0 and os.path.exists(EMPTY), "tessera-tune makes an empty cache")
p, out, m = screenshots(EMPTY, "empty")
ok(p.returncode == 0 and m["state"] == "empty" and [pg["page"] for pg in m["pages"]] == ["empty"],
   "an empty cache shows the empty state")
ok("no trials yet" in m["pages"][0]["placeholder"] and
   "tessera-tune tune" in m["pages"][0]["placeholder"], "the empty state says what to run")
check_png(out, m["pages"][0])

# ---- a Chrome trace, as tessera-tune writes it ----
TRACE = os.path.join(TMP, "trace.json")
p = run([TT, "profile", "export", str(profile_id), "--output", TRACE, "--db", DB])
ok(p.returncode == 0, "the profile exported as a Chrome trace")
p, out, m = screenshots(TRACE, "trace")
ok(p.returncode == 0 and m["state"] == "trace" and m["pages"][0]["view"] == "timeline",
   "a trace opens as a standalone timeline")
ok(m["pages"][0]["n_marks"] == n_events, "the trace's timeline holds the same %d events" % n_events)
check_png(out, m["pages"][0])

# ---- files that cannot be opened ----
# The real cache with its first page (the schema) overwritten after the 100-byte header.
BAD = os.path.join(TMP, "corrupt.db")
shutil.copy(DB, BAD)
with open(BAD, "r+b") as f:
    f.seek(100)
    f.write(bytes(range(256)) * 15)
p, out, m = screenshots(BAD, "bad")
ok(p.returncode != 0 and BAD in p.stderr and "corrupt" in p.stderr,
   "a corrupt file fails with a message naming it")
ok(not os.path.exists(os.path.join(out, "manifest.json")), "and no manifest is written")
MISSING = os.path.join(TMP, "missing.db")
p, out, m = screenshots(MISSING, "missing")
ok(p.returncode != 0 and MISSING in p.stderr, "a missing file fails with a message naming it")
BADTRACE = os.path.join(TMP, "bad.json")
with open(BADTRACE, "w") as f:
    f.write("{\"traceEvents\": [")
p, out, m = screenshots(BADTRACE, "badtrace")
ok(p.returncode != 0 and BADTRACE in p.stderr, "a malformed trace fails with a message naming it")

print("1..%d" % count)

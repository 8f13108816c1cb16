#!/usr/bin/env bash
# dev.sh — one-command set-up for a fresh Debian 12 machine: installs the Debian packages the
# build needs (when missing), configures and builds, then runs the main job or the tests.
#   ./dev.sh tune [tessera-tune args...]   build, then the main job (default: tune f32 GEMM 1024^3)
#   ./dev.sh test                          build, then the whole test suite, then the same suite
#                                          under ASan+UBSan built by gcc, then the unit and fuzz
#                                          tests under ASan+UBSan built by clang
set -euo pipefail
cd "$(dirname "$0")"

# libopenblas-dev, libdnnl-dev: the anchors bench/cpu_gemm measures against (OpenBLAS, oneDNN).
# libgtk-4-dev: tessera-studio; xvfb + xauth: its tests run the real window on a virtual display;
# libxtst6: they click in it through the X server (XTEST), as a user does.
# patchelf: bench/gpu-bundle.sh sets the rpath of what it carries to a GPU machine (its
# rehearsal is part of the suite). clang-14 + libclang-rt-14-dev: libFuzzer, for the fuzz
# harnesses (tests/fuzz/). openmpi-bin + libopenmpi-dev: distributed tuning (mpirun -np N
# tessera-tune tune|batch) and its end-to-end test.
PACKAGES=(gcc g++ pkg-config meson ninja-build libglib2.0-dev libjson-glib-dev libsqlite3-dev
          libopenblas-dev libdnnl-dev libxgboost-dev python3 libgtk-4-dev xvfb xauth libxtst6 patchelf clang-14
          libclang-rt-14-dev openmpi-bin libopenmpi-dev)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "dev.sh: installing ${missing[*]}" >&2
    local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

build() {  # build DIR [meson options...]; build-clang* is configured with clang 14
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    case "$dir" in
      build-clang*) CC=clang-14 meson setup "$dir" "$@" >/dev/null ;;
      *) meson setup "$dir" "$@" >/dev/null ;;
    esac
  fi
  # Quiet when it builds; the compiler's errors (ninja prints them on stdout) when it does not.
  if ! meson compile -C "$dir" > "$dir/compile.log" 2>&1; then
    grep -E -A12 'FAILED|error' "$dir/compile.log" | head -80
    echo "dev.sh: building $dir failed (whole log: $dir/compile.log)" >&2
    return 1
  fi
}

# Each stage of the test command says how long it took: the whole run must stay well inside
# CI's limit, and this is where to look first when it grows.
timed() {  # timed LABEL command...
  local label=$1 t0=$SECONDS rc=0; shift
  "$@" || rc=$?
  echo "dev.sh: $label: $((SECONDS - t0)) s" >&2
  return $rc
}

cmd=${1:-}; shift || true
case "$cmd" in
  tune)
    install_missing
    build build
    # The main job: tune bf16 GEMM 1024^3 (f32 accumulation; the tensor-core dtype, so the same
    # job runs on a GPU and on the CPU) on the best backend found, into the default schedule
    # cache ($XDG_CACHE_HOME/tessera/schedules.db). A re-run resumes where it stopped.
    [ $# -gt 0 ] || set -- tune gemm --shape M=1024,N=1024,K=1024 --dtype bf16 --backend auto \
                            --strategy model --budget 30
    exec ./build/tools/tessera-tune "$@"
    ;;
  test)
    install_missing
    # One artifact cache for the tests of all three builds: their kernels are the same code for
    # the same compiler (the system cc, whichever compiler built the tools), and the cache is
    # content-addressed, so each kernel compiles once, not once a test and a build. Each test's
    # schedule caches stay its own.
    export TESSERA_ARTIFACT_DIR=${TESSERA_ARTIFACT_DIR:-$PWD/build/test-artifacts}
    timed "build (gcc)" build build
    timed "tests (gcc)" meson test -C build --print-errorlogs
    # The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
    timed "build (gcc, ASan+UBSan)" build build-asan -Db_sanitize=address,undefined \
      -Db_lundef=false -Dbuildtype=debug
    # (Without the 'cuda' suite: compiling every GPU kernel again proves nothing new about our
    # memory safety — test-cuda exercises the same NVRTC path under the sanitizers. Without
    # 'gpu-kit': it bundles release-style binaries for a GPU machine, which sanitized ones are
    # not. Without 'gate': the project's perf gate times the same kernels as above, alone on the
    # machine for 25 s; the perfgate binary's every path runs under the sanitizers in the e2e
    # test 'perfgate'.)
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      timed "tests (gcc, ASan+UBSan)" meson test -C build-asan --print-errorlogs \
        --no-suite cuda --no-suite gpu-kit --no-suite gate
    # Built by clang 14 with ASan and UBSan (its sanitizers and warnings are not gcc's), plus
    # libFuzzer: the unit tests and the fuzz suite (each harness in tests/fuzz/ briefly, seeded
    # from the test data and with inputs nested past every depth limit). The end-to-end tests,
    # the MPI ones among them, and test-strategy (the longest unit test, suite 'strategy') run
    # the same code paths as under gcc's sanitizers above, at twice the time again.
    timed "build (clang, ASan+UBSan, libFuzzer)" build build-clang -Dfuzz=true \
      -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      timed "tests (clang, ASan+UBSan, libFuzzer)" meson test -C build-clang --print-errorlogs \
        --suite unit --suite fuzz --no-suite strategy
    ;;
  *)
    echo "usage: ./dev.sh tune [tessera-tune args...] | ./dev.sh test" >&2
    exit 2
    ;;
esac

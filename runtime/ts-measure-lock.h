/* ts-measure-lock.h — host-wide turns at timing a device. Timings are only comparable when the
 * kernel had its device to itself: two tuners (or the MPI ranks of one tune) measuring on the
 * same host's CPU at once, or compiling beside a CPU measurement, each slow the other by an
 * amount that changes from sample to sample. So a measurement holds its device's lock
 * exclusively, and compiling or verifying holds the host's lock shared: measurements on the
 * CPU wait for compiles and for each other, GPU measurements only for other GPU measurements of
 * the same GPU. Locks are flock(2)s on files under $TESSERA_LOCK_DIR (default
 * <tmp>/tessera-locks), released by the kernel when their process dies.
 *
 * Waiting is bounded: after $TESSERA_MEASURE_LOCK seconds (default 120) the work goes ahead
 * without the lock and the lock says so (ts_measure_lock_note), so a stopped process holding a
 * lock slows others down but never stalls them. TESSERA_MEASURE_LOCK=off turns locking off. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The unit every host has: its CPU, measured on by the CPU backend, and compiled on by all. */
#define TS_MEASURE_LOCK_HOST "host"

typedef enum {
  TS_MEASURE_LOCK_SHARED,    /* compiling, verifying: others may too, no one measures */
  TS_MEASURE_LOCK_EXCLUSIVE, /* measuring */
} TsMeasureLockMode;

/* Told, when the lock is held elsewhere, who holds it (before waiting), then NULL once the wait
 * is over (the lock taken, or given up). */
typedef void (*TsMeasureLockWait)(gpointer data, const char *holder);

typedef struct _TsMeasureLock TsMeasureLock;

/* Takes unit's lock (any text: "host", "cuda-0000:19:00"), waiting while another process holds
 * it. what describes this holder to the processes that wait for it ("gemm 1024x1024x1024").
 * Never fails: with locking off, or the lock directory unusable, the work goes ahead and the
 * note says why. */
TsMeasureLock *ts_measure_lock_acquire(const char *unit, TsMeasureLockMode mode, const char *what,
                                       TsMeasureLockWait wait, gpointer data);
/* NULL when the lock was held as asked (or locking is off); else why the work went ahead
 * without it: "waited 120 s for pid 4242 (tessera-tune worker: ...)". */
const char *ts_measure_lock_note(const TsMeasureLock *lock);
double ts_measure_lock_waited_s(const TsMeasureLock *lock);
void ts_measure_lock_release(TsMeasureLock *lock);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsMeasureLock, ts_measure_lock_release)

/* How long a wait lasts at most, in seconds; < 0 when locking is off. */
double ts_measure_lock_max_wait_s(void);

G_END_DECLS

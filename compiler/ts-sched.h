/* ts-sched.h — Schedule IR: spaces of schedule points in the seeds' syntax, constraints,
 * lazy enumeration, counting, uniform sampling, printing and stable hashing.
 *
 * Syntax (whitespace, including newlines, is free; `#` starts a comment to end of line):
 *
 *   chained form  block(m=[64,128], n=[64,96,128], k=[64]).warps([4,8]).stages([2,3])
 *                 .vector([4,8]).swizzle(["none","xor"])
 *   dict form     space=dict(BM=[128,256], stages=[2,3])        (also plain dict(...))
 *   point         block(m=128,n=128,k=64).warps(8).stages(3)    (a space whose lists all have
 *                 one value; a scalar v is the same as [v])
 *   constraints   ... .where(BM*BK*stages*2 <= 232448, M % BM == 0, swizzle != "xor" || vector >= 4)
 *   inheritance   base = block(m=128,n=128,k=64).warps(8).stages(3)
 *                 base.with_block(64,64).with_warps(4)
 *                 (statements separated by newlines or ';'; the last one is the result;
 *                 with_X(...) replaces the knobs of method X that it names and keeps the
 *                 others (with_block(64,64) keeps BK); with_block takes m, n[, k]
 *                 positionally; any chained method may also be repeated to override. A line
 *                 starting with '.' continues the previous statement. A replaced knob keeps its
 *                 position; a new knob goes last.)
 *
 * Knobs. Chained methods map onto canonical knob names; the dict form takes any identifier:
 *   block(m,n,k) -> BM BN BK     micro(m,n) -> MR NR     warps -> warps    stages -> stages
 *   vector -> vector    swizzle -> swizzle    threads -> threads    unroll -> unroll
 *   raster -> raster    mma -> mma
 * A chained method with an unknown name is an error ("unknown knob 'wraps' ...; did you mean
 * 'warps'?"). Values are integers (int64) or double-quoted strings, never mixed in one knob.
 *
 * Constraint expressions: int64 arithmetic + - * / % (C semantics, / truncates), comparisons
 * < <= > >= == !=, logical && || ! (also `and`, `or`, `not`), parentheses, integer and string
 * literals, min(a,b), max(a,b). Precedence and associativity are C's: `not` is the unary `!`
 * and binds tighter than comparisons (`not a == b` is `(!a) == b`); && and || short-circuit.
 * Names refer to knobs or to environment values (shape dims M,N,K, device limits such as
 * smem_bytes) given at enumeration time; a knob shadows an environment value of its name. Overflow and division by zero are errors naming the
 * constraint and the point, never a silent wrap. Checked at parse time: string misuse
 * (TS_SCHED_ERROR_TYPE; strings only compare with == and !=), a divisor that is the constant 0
 * and overflow in constant sub-expressions (TS_SCHED_ERROR_EVAL). Checked once when enumeration,
 * counting, sampling or check starts: every name is a knob or in the environment
 * (TS_SCHED_ERROR_EVAL naming it).
 *
 * Printing is canonical: the chained form when every knob belongs to a chained method and each
 * method's knobs are adjacent, else the dict form; knobs in the order first declared (that order
 * is the index order); a one-value list prints as a scalar; constraints re-printed with minimal
 * parentheses, all in one trailing .where(). parse(print(s)) equals s structurally, and
 * print(parse(print(s))) == print(s).
 *
 * Points print in canonical knob order instead — the chained methods in the order block, micro,
 * warps, stages, vector, swizzle, threads, unroll, raster, mma, load (m, n, k inside), then other
 * knobs by name — so a point's text and hash do not depend on how it was written or which
 * space produced it.
 *
 * Errors (TS_SCHED_ERROR) report "schedule:LINE:COLUMN: message" (1-based, columns in bytes)
 * followed by the source line and a caret under the column, e.g.
 *   schedule:1:19: unknown knob 'wraps'; did you mean 'warps'?
 *     block(m=[64,128]).wraps([4,8])
 *                       ^
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_SCHED_ERROR (ts_sched_error_quark())
GQuark ts_sched_error_quark(void);

typedef enum {
  TS_SCHED_ERROR_PARSE,        /* syntax: unbalanced brackets, empty list, bad token, huge number */
  TS_SCHED_ERROR_UNKNOWN_KNOB, /* chained method / block() argument not known */
  TS_SCHED_ERROR_TYPE,         /* mixed int/string list, string in arithmetic ... */
  TS_SCHED_ERROR_EVAL,         /* division by zero, overflow, unknown name at evaluation */
  TS_SCHED_ERROR_NOT_POINT,    /* a space with several values where a point was required */
  TS_SCHED_ERROR_EMPTY,        /* no valid point */
} TsSchedError;

typedef enum { TS_SCHED_INT, TS_SCHED_STR } TsSchedKind;

typedef struct {
  TsSchedKind kind;
  gint64 i;      /* when kind == TS_SCHED_INT */
  const char *s; /* when kind == TS_SCHED_STR; interned (g_intern_string), never freed */
} TsSchedValue;

/* Names and integer values that constraints may refer to besides knobs. */
typedef struct _TsSchedEnv TsSchedEnv;
TsSchedEnv *ts_sched_env_new(void);
void ts_sched_env_free(TsSchedEnv *env);
void ts_sched_env_set(TsSchedEnv *env, const char *name, gint64 value);
gboolean ts_sched_env_get(const TsSchedEnv *env, const char *name, gint64 *value);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsSchedEnv, ts_sched_env_free)

typedef struct _TsSchedSpace TsSchedSpace;
typedef struct _TsSchedPoint TsSchedPoint;

/* ---- spaces ---- */
TsSchedSpace *ts_sched_space_parse(const char *text, GError **error);
TsSchedSpace *ts_sched_space_copy(const TsSchedSpace *space);
void ts_sched_space_free(TsSchedSpace *space);
char *ts_sched_space_to_string(const TsSchedSpace *space);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsSchedSpace, ts_sched_space_free)

guint ts_sched_space_n_knobs(const TsSchedSpace *space);
const char *ts_sched_space_knob_name(const TsSchedSpace *space, guint knob);
guint ts_sched_space_n_values(const TsSchedSpace *space, guint knob);
TsSchedValue ts_sched_space_value(const TsSchedSpace *space, guint knob, guint value_index);
int ts_sched_space_knob_index(const TsSchedSpace *space, const char *name); /* -1 if absent */
guint ts_sched_space_n_constraints(const TsSchedSpace *space);
char *ts_sched_space_constraint_to_string(const TsSchedSpace *space, guint i);

/* Adds a constraint (same expression syntax as in .where()). */
gboolean ts_sched_space_add_constraint(TsSchedSpace *space, const char *expr, GError **error);
/* Adds or replaces a knob with the given values (used by ops to add defaults and by the
 * replay backend to build a recorded space). */
void ts_sched_space_set_knob(TsSchedSpace *space, const char *name, const TsSchedValue *values,
                             guint n_values);

/* Product of the value-list lengths, i.e. points before constraints. FALSE on overflow of
 * guint64 (the count is then G_MAXUINT64). */
gboolean ts_sched_space_size(const TsSchedSpace *space, guint64 *size);
/* Points satisfying every constraint under env. Prunes subtrees as soon as a constraint's
 * names are all bound, so heavily constrained 10^7-point spaces count in well under a second. */
gboolean ts_sched_space_count_valid(const TsSchedSpace *space, const TsSchedEnv *env,
                                    guint64 *count, GError **error);
/* The point at a mixed-radix index in [0, size): first knob most significant. No constraint
 * check. */
TsSchedPoint *ts_sched_space_point_at(const TsSchedSpace *space, guint64 index);
/* *valid = whether point satisfies the constraints (point may lack no knob of the space). */
gboolean ts_sched_space_check(const TsSchedSpace *space, const TsSchedEnv *env,
                              const TsSchedPoint *point, gboolean *valid, GError **error);
/* The same check prepared for many points (a tuner's candidates): the constraints are compiled
 * against env once, not for every point. space must outlive the checker; env is read when it is
 * made. Not for use by two threads at once. */
typedef struct _TsSchedChecker TsSchedChecker;
TsSchedChecker *ts_sched_checker_new(const TsSchedSpace *space, const TsSchedEnv *env,
                                     GError **error);
gboolean ts_sched_checker_check(TsSchedChecker *checker, const TsSchedPoint *point,
                                gboolean *valid, GError **error);
void ts_sched_checker_free(TsSchedChecker *checker);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsSchedChecker, ts_sched_checker_free)
/* Index of point in the space (inverse of point_at); FALSE if a value is not in the space. */
gboolean ts_sched_space_index_of(const TsSchedSpace *space, const TsSchedPoint *point,
                                 guint64 *index);
/* A copy of point in which each knob it lacks that the space fixes to one value takes that
 * value: a schedule stored before the knob existed, read in a space where the knob can only be
 * its default (an op's new knob defaults to what its kernels did before). NULL, with
 * TS_SCHED_ERROR_NOT_POINT naming the knob, when a knob it lacks has several values. */
TsSchedPoint *ts_sched_space_complete(const TsSchedSpace *space, const TsSchedPoint *point,
                                      GError **error);

/* Lazy enumeration of the valid points in index order. The iterator copies the space and
 * resolves env names when created, so neither need outlive it; a compile error (unknown name,
 * type) is reported by the first ts_sched_iter_next(). */
typedef struct _TsSchedIter TsSchedIter;
TsSchedIter *ts_sched_iter_new(const TsSchedSpace *space, const TsSchedEnv *env);
/* Returns TRUE and a new point in *point, or FALSE at the end (error unset) or on error. */
gboolean ts_sched_iter_next(TsSchedIter *iter, TsSchedPoint **point, GError **error);
void ts_sched_iter_free(TsSchedIter *iter);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsSchedIter, ts_sched_iter_free)

/* n distinct valid points drawn uniformly at random among the valid ones (fewer if the space
 * has fewer). Deterministic for a given rng state. Rejection sampling on the index space, with
 * a fall back to enumerating the valid set when acceptance is low. Returns a GPtrArray of
 * TsSchedPoint* owning its elements; TS_SCHED_ERROR_EMPTY when no point is valid (n == 0 gives
 * an empty array). Digits are drawn per knob, so spaces whose size overflows 64 bits sample
 * too. */
GPtrArray *ts_sched_space_sample(const TsSchedSpace *space, const TsSchedEnv *env, guint n,
                                 GRand *rng, GError **error);

/* ---- points ---- */
TsSchedPoint *ts_sched_point_parse(const char *text, GError **error); /* NOT_POINT if a list
                                                                          has several values */
TsSchedPoint *ts_sched_point_new(void);
TsSchedPoint *ts_sched_point_copy(const TsSchedPoint *point);
void ts_sched_point_free(TsSchedPoint *point);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsSchedPoint, ts_sched_point_free)
char *ts_sched_point_to_string(const TsSchedPoint *point);
/* 16 lowercase hex digits: SHA-256 of the canonical text, truncated. Stable across runs and
 * machines; names the point in the DB. Owned by the point. */
const char *ts_sched_point_hash(const TsSchedPoint *point);
gboolean ts_sched_point_equal(const TsSchedPoint *a, const TsSchedPoint *b);

guint ts_sched_point_n_knobs(const TsSchedPoint *point);
const char *ts_sched_point_knob_name(const TsSchedPoint *point, guint i);
TsSchedValue ts_sched_point_knob_value(const TsSchedPoint *point, guint i);
gboolean ts_sched_point_has(const TsSchedPoint *point, const char *knob);
/* Integer knob value, or def when the point lacks the knob (or it is a string). */
gint64 ts_sched_point_get_int(const TsSchedPoint *point, const char *knob, gint64 def);
/* String knob value (interned), or def. */
const char *ts_sched_point_get_str(const TsSchedPoint *point, const char *knob, const char *def);
void ts_sched_point_set_int(TsSchedPoint *point, const char *knob, gint64 value);
void ts_sched_point_set_str(TsSchedPoint *point, const char *knob, const char *value);

G_END_DECLS

/* ts-studio-export.c — builds the view an export names from the cache (or a trace file) and
 * draws it through the canvas into the file. The window builds its views the same way, so an
 * export is what the window shows at that size. */
#include "ts-studio-export.h"

#include <string.h>

#include "ts-studio-data.h"
#include "ts-studio-timeline.h"
#include "ts-studio-view.h"

static const char *const views[] = {
  "roofline", "history", "history-wall", "predicted", "learned", "bandwidth", "timeline",
  "lowering", "diff", NULL,
};

const char *const *
ts_studio_export_views(void)
{
  return views;
}

static void
draw_view(TsCanvas *canvas, double width, double height, gpointer data)
{
  ts_studio_view_draw(data, canvas, width, height);
}

/* A collective's bus bandwidth; for another workload the view says it is not one. */
static TsStudioView *
bandwidth_view(TsStudioDb *db, const TsStudioWorkload *w, GError **error)
{
  g_autoptr(GError) why = NULL;
  g_autoptr(GPtrArray) series = ts_studio_db_bandwidth(db, w, &why);
  if (series == NULL && !g_error_matches(why, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND)) {
    g_propagate_error(error, g_steal_pointer(&why));
    return NULL;
  }
  return ts_studio_bandwidth_new(w, series, why ? why->message : NULL);
}

static const TsStudioWorkload *
pick_workload(TsStudioDb *db, const char *key, GError **error)
{
  if (key)
    return ts_studio_db_find_workload(db, key, error);
  GPtrArray *all = ts_studio_db_workloads(db);
  const TsStudioWorkload *best = NULL;
  for (guint i = 0; i < all->len; i++) {
    const TsStudioWorkload *w = all->pdata[i];
    if (best == NULL || w->n_trials > best->n_trials)
      best = w;
  }
  if (best == NULL)
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                "%s has no trials yet: run `tessera-tune tune OP --shape ... --db %s` first",
                ts_studio_db_path(db), ts_studio_db_path(db));
  return best;
}

static const TsStudioTrial *
find_trial(GPtrArray *trials, gint64 id)
{
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (id == 0 ? t->best : t->id == id)
      return t;
  }
  return NULL;
}

/* The fastest verified trial other than `not`: the natural second side of a diff. */
static const TsStudioTrial *
fastest_other(GPtrArray *trials, const TsStudioTrial *not)
{
  const TsStudioTrial *best = NULL;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (t == not || t->status != TS_DB_TRIAL_OK || !(t->median_ns > 0))
      continue;
    if (not && strcmp(t->schedule, not->schedule) == 0)
      continue;
    if (best == NULL || t->median_ns < best->median_ns)
      best = t;
  }
  return best;
}

static TsStudioView *
timeline_view(TsStudioDb *db, const TsStudioWorkload *w, const TsStudioExportOptions *o,
              char **note, GError **error)
{
  g_autoptr(GArray) events = NULL;
  if (o->trace_path) {
    events = ts_studio_trace_load(o->trace_path, error);
  } else {
    gint64 id = o->profile_id;
    if (id == 0) {
      g_autoptr(GPtrArray) profiles = ts_studio_db_profiles(db, w, error);
      if (profiles == NULL)
        return NULL;
      gboolean other = profiles->len == 0 && w != NULL;
      if (other) {
        g_clear_pointer(&profiles, g_ptr_array_unref);
        profiles = ts_studio_db_profiles(db, NULL, error);
        if (profiles == NULL)
          return NULL;
      }
      if (profiles->len == 0) {
        g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                    "%s holds no profile: run `tessera-tune profile OP --shape ... --db %s`, "
                    "or pass a trace file with --trace",
                    ts_studio_db_path(db), ts_studio_db_path(db));
        return NULL;
      }
      const TsDbProfile *p = profiles->pdata[0];
      id = p->id;
      g_autofree char *subject = ts_studio_db_profile_subject(db, p);
      /* Never a silent substitute: say whose timeline this is. */
      *note = other ? g_strdup_printf("%s has no profile; shown instead: profile %" G_GINT64_FORMAT
                                      " of %s", w->label, id, subject)
                    : g_strdup_printf("profile %" G_GINT64_FORMAT " of %s", id, subject);
    }
    events = ts_studio_db_events(db, id, error);
  }
  return events ? ts_studio_timeline_new(events) : NULL;
}

static TsStudioView *
lowering_view(const TsStudioWorkload *w, GPtrArray *trials, const TsStudioExportOptions *o,
              gboolean diff, GError **error)
{
  const TsStudioTrial *a = find_trial(trials, o->trial_id);
  if (a == NULL && o->trial_id == 0)
    a = fastest_other(trials, NULL); /* no best stored: the fastest verified */
  if (a == NULL) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                o->trial_id ? "workload %s has no trial %" G_GINT64_FORMAT
                            : "workload %s has no verified trial to lower (pass --trial ID)",
                w->key, o->trial_id);
    return NULL;
  }
  if (!diff) {
    g_autoptr(TsStudioLowering) l = ts_studio_lower(w, a->schedule, error);
    if (l == NULL)
      return NULL;
    g_autofree char *title = g_strdup_printf("%s — trial %" G_GINT64_FORMAT ": %s", w->label,
                                             a->id, a->schedule);
    return ts_studio_lowering_view_new(g_steal_pointer(&l), title);
  }
  const TsStudioTrial *b = o->trial_b_id ? find_trial(trials, o->trial_b_id)
                                         : fastest_other(trials, a);
  if (b == NULL) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                o->trial_b_id ? "workload %s has no trial %" G_GINT64_FORMAT
                              : "workload %s has no second verified schedule to compare with",
                w->key, o->trial_b_id);
    return NULL;
  }
  g_autoptr(TsStudioLowering) la = ts_studio_lower(w, a->schedule, error);
  if (la == NULL)
    return NULL;
  g_autoptr(TsStudioLowering) lb = ts_studio_lower(w, b->schedule, error);
  if (lb == NULL)
    return NULL;
  g_autofree char *an = g_strdup_printf("trial %" G_GINT64_FORMAT, a->id);
  g_autofree char *bn = g_strdup_printf("trial %" G_GINT64_FORMAT, b->id);
  return ts_studio_diff_view_new(ts_studio_diff(la->target, lb->target), an, bn);
}

gboolean
ts_studio_export(const TsStudioExportOptions *o, char **summary, GError **error)
{
  g_return_val_if_fail(o != NULL && o->output != NULL, FALSE);
  const char *name = o->view ? o->view : "";
  if (!g_strv_contains(views, name)) {
    g_autofree char *list = g_strjoinv(", ", (char **)views);
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "unknown view '%s' (one of: %s)", name, list);
    return FALSE;
  }
  if (!g_str_has_suffix(o->output, ".svg") && !g_str_has_suffix(o->output, ".png")) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "%s: unknown image format (the output's name must end in .svg or .png)",
                o->output);
    return FALSE;
  }
  gboolean timeline = strcmp(name, "timeline") == 0;
  g_autoptr(TsStudioView) view = NULL;
  g_autofree char *note = NULL;
  if (timeline && o->trace_path) {
    /* A trace file alone needs no cache. */
    view = timeline_view(NULL, NULL, o, &note, error);
  } else {
    g_autofree char *path = o->db_path ? g_strdup(o->db_path) : ts_db_default_path();
    g_autoptr(TsStudioDb) db = ts_studio_db_open(path, error);
    if (db == NULL)
      return FALSE;
    const TsStudioWorkload *w = NULL;
    if (!timeline || o->workload) {
      w = pick_workload(db, o->workload, error);
      if (w == NULL)
        return FALSE;
    }
    if (timeline) {
      view = timeline_view(db, w, o, &note, error);
    } else {
      g_autoptr(GPtrArray) trials = ts_studio_db_trials(db, w, error);
      if (trials == NULL)
        return FALSE;
      if (strcmp(name, "roofline") == 0) {
        view = ts_studio_roofline_new(w, trials);
        if (o->color_by && strcmp(o->color_by, "strategy") == 0)
          ts_studio_roofline_set_color_by(view, TS_STUDIO_COLOR_BY_STRATEGY);
        else if (o->color_by && strcmp(o->color_by, "status") != 0) {
          g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                      "unknown --color-by '%s' (status or strategy)", o->color_by);
          return FALSE;
        }
      } else if (g_str_has_prefix(name, "history")) {
        g_autoptr(GPtrArray) runs = ts_studio_db_runs(db, w, error);
        if (runs == NULL)
          return FALSE;
        view = ts_studio_history_new(w, trials, runs,
                                     strcmp(name, "history-wall") == 0
                                       ? TS_STUDIO_HISTORY_BY_WALL
                                       : TS_STUDIO_HISTORY_BY_INDEX);
      } else if (strcmp(name, "predicted") == 0) {
        view = ts_studio_predicted_new(w, trials);
      } else if (strcmp(name, "bandwidth") == 0) {
        view = bandwidth_view(db, w, error);
      } else if (strcmp(name, "learned") == 0) {
        g_autoptr(GError) why = NULL;
        g_autoptr(TsStudioLearned) learned = ts_studio_db_learned(db, w, trials, &why);
        if (learned == NULL && !g_error_matches(why, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NO_MODEL)) {
          g_propagate_error(error, g_steal_pointer(&why));
          return FALSE;
        }
        view = ts_studio_learned_new(w, trials, learned, why ? why->message : NULL);
      } else {
        view = lowering_view(w, trials, o, strcmp(name, "diff") == 0, error);
      }
    }
  }
  if (view == NULL)
    return FALSE;
  ts_studio_view_set_theme(view, ts_studio_theme(o->dark));
  double width = o->width > 0 ? o->width : 1200, height = o->height > 0 ? o->height : 800;
  if (!ts_canvas_export(o->output, width, height, o->scale > 0 ? o->scale : 1, draw_view, view,
                        error))
    return FALSE;
  if (summary)
    *summary = g_strdup_printf("%s: %u of %u %s drawn into %s%s%s", name, view->n_drawn,
                               view->n_marks, ts_studio_view_unit(view), o->output,
                               note ? " — " : "", note ? note : "");
  return TRUE;
}

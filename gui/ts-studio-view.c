/* ts-studio-view.c — dispatch through a view's class. */
#include "ts-studio-view.h"

void
ts_studio_view_free(TsStudioView *view)
{
  if (view == NULL)
    return;
  g_clear_pointer(&view->selection, g_hash_table_unref);
  view->klass->finalize(view);
}

const char *
ts_studio_view_unit(const TsStudioView *view)
{
  g_return_val_if_fail(view != NULL, NULL);
  return view->klass->unit ? view->klass->unit : "marks";
}

const char *
ts_studio_view_name(const TsStudioView *view)
{
  return view->klass->name;
}

void
ts_studio_view_set_theme(TsStudioView *view, const TsStudioTheme *theme)
{
  view->theme = theme;
}

void
ts_studio_view_draw(TsStudioView *view, TsCanvas *canvas, double width, double height)
{
  g_return_if_fail(view != NULL && canvas != NULL);
  if (view->theme == NULL)
    view->theme = ts_studio_theme(FALSE);
  view->n_drawn = 0;
  view->klass->draw(view, canvas, width, height);
}

gint64
ts_studio_view_hit(TsStudioView *view, double x, double y, double width, double height)
{
  g_return_val_if_fail(view != NULL, 0);
  return view->klass->hit ? view->klass->hit(view, x, y, width, height) : 0;
}

char *
ts_studio_view_describe(TsStudioView *view, gint64 id)
{
  g_return_val_if_fail(view != NULL, NULL);
  return view->klass->describe && id != 0 ? view->klass->describe(view, id) : NULL;
}

GArray *
ts_studio_view_brush(TsStudioView *view, double x0, double y0, double x1, double y1,
                     double width, double height)
{
  g_return_val_if_fail(view != NULL, NULL);
  GArray *ids = view->klass->brush ? view->klass->brush(view, MIN(x0, x1), MIN(y0, y1),
                                                        MAX(x0, x1), MAX(y0, y1), width, height)
                                   : NULL;
  return ids ? ids : g_array_new(FALSE, FALSE, sizeof(gint64));
}

void
ts_studio_view_set_selection(TsStudioView *view, const gint64 *ids, guint n)
{
  g_return_if_fail(view != NULL && (ids != NULL || n == 0));
  view->selected = n ? ids[0] : 0;
  g_clear_pointer(&view->selection, g_hash_table_unref);
  if (n < 2)
    return;
  view->selection = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  for (guint i = 0; i < n; i++)
    g_hash_table_add(view->selection, g_memdup2(&ids[i], sizeof(gint64)));
}

gboolean
ts_studio_view_is_selected(const TsStudioView *view, gint64 id)
{
  g_return_val_if_fail(view != NULL, FALSE);
  return id != 0 && (id == view->selected ||
                     (view->selection && g_hash_table_contains(view->selection, &id)));
}

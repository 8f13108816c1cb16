/* ts-studio-view.c — dispatch through a view's class. */
#include "ts-studio-view.h"

void
ts_studio_view_free(TsStudioView *view)
{
  if (view == NULL)
    return;
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

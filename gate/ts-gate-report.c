/* ts-gate-report.c — verdicts and the three views of a gate run: an aligned table for the
 * terminal, Markdown for a PR comment, JUnit XML for CI systems.
 *
 * Numbers are formatted with g_ascii_formatd: reports are artefacts that tests, CI parsers and
 * other machines read, so a decimal comma from the user's locale must never get into them. */
#include "ts-gate.h"

#include <math.h>
#include <string.h>

#define DASH "—" /* a number that was not measured or not compared */

/* ---- verdicts ---- */

static const char *const verdict_names[] = {
    [TS_GATE_PASS] = "pass",
    [TS_GATE_IMPROVED] = "improved",
    [TS_GATE_REGRESSION] = "regression",
    [TS_GATE_FAILED] = "failed",
    [TS_GATE_NEW] = "new",
};
#define N_VERDICTS G_N_ELEMENTS(verdict_names)

const char *
ts_gate_verdict_name(TsGateVerdict verdict)
{
  g_return_val_if_fail((guint)verdict < N_VERDICTS, "unknown");
  return verdict_names[verdict];
}

gboolean
ts_gate_verdict_parse(const char *name, TsGateVerdict *verdict)
{
  for (guint i = 0; name && i < N_VERDICTS; i++)
    if (g_ascii_strcasecmp(name, verdict_names[i]) == 0) {
      if (verdict)
        *verdict = (TsGateVerdict)i;
      return TRUE;
    }
  return FALSE;
}

gboolean
ts_gate_verdict_fails(TsGateVerdict verdict)
{
  return verdict == TS_GATE_REGRESSION || verdict == TS_GATE_FAILED;
}

/* ---- results ---- */

TsGateResult *
ts_gate_result_new(void)
{
  TsGateResult *r = g_new0(TsGateResult, 1);
  r->base_median_ns = r->cur_median_ns = NAN;
  r->change = r->p_value = r->threshold = NAN;
  r->verdict = TS_GATE_PASS;
  return r;
}

void
ts_gate_result_free(TsGateResult *result)
{
  if (result == NULL)
    return;
  g_free(result->name);
  g_free(result->workload);
  g_free(result->schedule);
  g_free(result->base_schedule);
  g_clear_pointer(&result->base_ns, g_array_unref);
  g_clear_pointer(&result->cur_ns, g_array_unref);
  g_clear_pointer(&result->round_ratios, g_array_unref);
  g_free(result->note);
  g_free(result);
}

void
ts_gate_result_add_note(TsGateResult *result, const char *fmt, ...)
{
  g_return_if_fail(result != NULL && fmt != NULL);
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *part = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *note = result->note ? g_strconcat(result->note, "; ", part, NULL) : g_strdup(part);
  g_free(result->note);
  result->note = note;
}

/* ---- the overall verdict ---- */

TsGateVerdict
ts_gate_report_verdict(const TsGateReport *report)
{
  g_return_val_if_fail(report != NULL, TS_GATE_FAILED);
  TsGateVerdict overall = TS_GATE_PASS;
  for (guint i = 0; report->results && i < report->results->len; i++) {
    const TsGateResult *r = g_ptr_array_index(report->results, i);
    if (r->verdict == TS_GATE_FAILED)
      return TS_GATE_FAILED;
    if (r->verdict == TS_GATE_REGRESSION)
      overall = TS_GATE_REGRESSION;
  }
  return overall;
}

int
ts_gate_report_exit_code(const TsGateReport *report)
{
  return ts_gate_verdict_fails(ts_gate_report_verdict(report)) ? 1 : 0;
}

typedef struct {
  guint total;
  guint n[N_VERDICTS];
} Counts;

static Counts
count_verdicts(const TsGateReport *report)
{
  Counts c = {0};
  for (guint i = 0; report->results && i < report->results->len; i++) {
    const TsGateResult *r = g_ptr_array_index(report->results, i);
    if ((guint)r->verdict < N_VERDICTS)
      c.n[r->verdict]++;
    c.total++;
  }
  return c;
}

static guint
n_results(const TsGateReport *report)
{
  return report->results ? report->results->len : 0;
}

static const TsGateResult *
result_at(const TsGateReport *report, guint i)
{
  return g_ptr_array_index(report->results, i);
}

/* ---- numbers ---- */

static char *
format_fixed(double v, int decimals)
{
  char fmt[16], buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_snprintf(fmt, sizeof fmt, "%%.%df", decimals);
  return g_strdup(g_ascii_formatd(buf, sizeof buf, fmt, v));
}

/* Three significant digits in the unit that keeps the number under 1000. */
static char *
format_time(double ns)
{
  static const struct {
    double scale;
    const char *unit;
  } units[] = {{1, "ns"}, {1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}};
  if (!isfinite(ns))
    return g_strdup(DASH);
  guint u = 0;
  /* 999.5 and not 1000: what would round to "1000 ns" is "1.00 µs". */
  while (u + 1 < G_N_ELEMENTS(units) && fabs(ns) / units[u].scale >= 999.5)
    u++;
  double v = ns / units[u].scale;
  int decimals = fabs(v) < 9.995 ? 2 : fabs(v) < 99.95 ? 1 : 0;
  g_autofree char *num = format_fixed(v, decimals);
  return g_strdup_printf("%s %s", num, units[u].unit);
}

static char *
format_change(double change)
{
  if (!isfinite(change))
    return g_strdup(DASH);
  double pct = change * 100;
  /* No "-0.0%": what rounds to zero is shown as no change. */
  gboolean negative = pct <= -0.05;
  g_autofree char *num = format_fixed(fabs(pct), 1);
  return g_strdup_printf("%s%s%%", negative ? "-" : "+", num);
}

/* "0.42", "0.0003", "<1e-6": one significant digit is all a p-value near alpha needs. */
static char *
format_p(double p)
{
  if (!isfinite(p))
    return g_strdup(DASH);
  if (p < 1e-6)
    return g_strdup("<1e-6");
  if (p >= 0.01)
    return format_fixed(p, 2);
  return format_fixed(p, CLAMP((int)ceil(-log10(p)), 3, 6));
}

/* A fraction as a percentage: 0.05 → "5%", 0.025 → "2.5%". */
static char *
format_percent(double fraction)
{
  if (!isfinite(fraction))
    return g_strdup(DASH);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup_printf("%s%%", g_ascii_formatd(buf, sizeof buf, "%.3g", fraction * 100));
}

static char *
format_number(double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup(g_ascii_formatd(buf, sizeof buf, "%.3g", v));
}

/* ---- what every view says about a result ---- */

/* Notes carry compiler diagnostics, which bring their own ANSI colours: in a file, a PR comment
 * or XML they are garbage, and in a terminal they would fight the report's own colours. CSI
 * sequences and carriage returns are dropped, other control characters but tab and newline
 * become '?'. */
static char *
plain_text(const char *text)
{
  GString *s = g_string_new(NULL);
  for (const char *p = text; *p; p++) {
    if (p[0] == '\033' && p[1] == '[') {
      p += 2;
      while (*p && !(*p >= 0x40 && *p <= 0x7e))
        p++;
      if (*p == '\0')
        break;
      continue;
    }
    guchar c = (guchar)*p;
    if (c == '\r')
      continue;
    g_string_append_c(s, c < 0x20 && c != '\t' && c != '\n' ? '?' : *p);
  }
  return g_string_free(s, FALSE);
}

static gboolean
compared(const TsGateResult *r)
{
  return r->verdict != TS_GATE_NEW && r->verdict != TS_GATE_FAILED && isfinite(r->change);
}

/* How the numbers were obtained, for results that were compared: "A/B, re-measured 2×",
 * "stored, threshold 3%"; NULL when there is nothing to say. */
static char *
method_text(const TsGateResult *r, double suite_threshold)
{
  if (!compared(r))
    return NULL;
  GString *s = g_string_new(r->ab ? "A/B" : "stored");
  if (r->remeasured > 0)
    g_string_append_printf(s, ", re-measured %u×", r->remeasured);
  if (isfinite(r->threshold) && isfinite(suite_threshold) &&
      fabs(r->threshold - suite_threshold) > 1e-12) {
    g_autofree char *t = format_percent(r->threshold);
    g_string_append_printf(s, ", threshold %s", t);
  }
  return g_string_free(s, FALSE);
}

typedef enum { COL_NAME, COL_BASE, COL_CUR, COL_CHANGE, COL_P, COL_VERDICT, N_COLS } Column;

static const char *const column_titles[N_COLS] = {"workload", "baseline", "current",
                                                  "change",   "p",        "verdict"};

/* The plain text of a row's cells (the verdict cell without the method). */
static void
row_cells(const TsGateResult *r, char *cells[N_COLS])
{
  cells[COL_NAME] = g_strdup(r->name ? r->name : "?");
  cells[COL_BASE] = format_time(r->base_median_ns);
  cells[COL_CUR] = format_time(r->cur_median_ns);
  cells[COL_CHANGE] = compared(r) ? format_change(r->change) : g_strdup(DASH);
  cells[COL_P] = compared(r) ? format_p(r->p_value) : g_strdup(DASH);
  cells[COL_VERDICT] = g_strdup(ts_gate_verdict_name(r->verdict));
}

static void
row_cells_clear(char *cells[N_COLS])
{
  for (guint c = 0; c < N_COLS; c++)
    g_clear_pointer(&cells[c], g_free);
}

/* "3 workloads: 2 pass, 1 regression — FAIL" (without colour). */
static char *
summary_counts(const Counts *c)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%u workload%s", c->total, c->total == 1 ? "" : "s");
  const char *sep = ": ";
  for (guint v = 0; v < N_VERDICTS; v++)
    if (c->n[v]) {
      g_string_append_printf(s, "%s%u %s", sep, c->n[v], verdict_names[v]);
      sep = ", ";
    }
  return g_string_free(s, FALSE);
}

/* ---- text ---- */

#define ANSI_RED "\033[31m"
#define ANSI_GREEN "\033[32m"
#define ANSI_BOLD "\033[1m"
#define ANSI_RESET "\033[0m"

static const char *
verdict_color(TsGateVerdict verdict)
{
  switch (verdict) {
  case TS_GATE_REGRESSION:
  case TS_GATE_FAILED:
    return ANSI_RED;
  case TS_GATE_IMPROVED:
    return ANSI_GREEN;
  default:
    return NULL;
  }
}

/* Pads by characters, not bytes: "µs" and "—" are one column each. */
static void
append_padded(GString *s, const char *text, guint width, gboolean right)
{
  guint len = (guint)g_utf8_strlen(text, -1);
  guint pad = width > len ? width - len : 0;
  if (right)
    for (guint i = 0; i < pad; i++)
      g_string_append_c(s, ' ');
  g_string_append(s, text);
  if (!right)
    for (guint i = 0; i < pad; i++)
      g_string_append_c(s, ' ');
}

static void
append_header_line(GString *s, const char *label, const char *value)
{
  if (value && *value)
    g_string_append_printf(s, "  %-7s %s\n", label, value);
}

/* Continuation lines of a multi-line note line up under its first line. */
static void
append_indented(GString *s, const char *text, const char *indent)
{
  for (const char *p = text; *p; p++) {
    g_string_append_c(s, *p);
    if (*p == '\n' && p[1])
      g_string_append(s, indent);
  }
}

static void
append_text_row(GString *s, const TsGateReport *report, const TsGateResult *r,
                const guint widths[N_COLS], gboolean color)
{
  char *cells[N_COLS];
  row_cells(r, cells);
  g_string_append(s, "  ");
  for (guint c = 0; c < COL_VERDICT; c++) {
    append_padded(s, cells[c], widths[c], c != COL_NAME);
    g_string_append(s, "  ");
  }
  const char *on = color ? verdict_color(r->verdict) : NULL;
  g_string_append_printf(s, "%s%s%s", on ? on : "", cells[COL_VERDICT], on ? ANSI_RESET : "");
  g_autofree char *method = method_text(r, report->threshold);
  if (method)
    g_string_append_printf(s, " (%s)", method);
  g_string_append_c(s, '\n');
  if (r->note) {
    g_autofree char *note = plain_text(r->note);
    g_string_append(s, "      note: ");
    append_indented(s, note, "            ");
    g_string_append_c(s, '\n');
  }
  row_cells_clear(cells);
}

char *
ts_gate_report_text(const TsGateReport *report, gboolean color)
{
  g_return_val_if_fail(report != NULL, NULL);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "Perf gate: suite %s\n", report->suite ? report->suite : "?");
  append_header_line(s, "device", report->device);
  append_header_line(s, "base", report->base);
  append_header_line(s, "head", report->head);
  g_autofree char *thr = format_percent(report->threshold);
  g_autofree char *alpha = format_number(report->alpha);
  g_string_append_printf(s, "  threshold %s, alpha %s\n\n", thr, alpha);

  guint widths[N_COLS];
  for (guint c = 0; c < N_COLS; c++)
    widths[c] = (guint)strlen(column_titles[c]);
  for (guint i = 0; i < n_results(report); i++) {
    char *cells[N_COLS];
    row_cells(result_at(report, i), cells);
    for (guint c = 0; c < N_COLS; c++)
      widths[c] = MAX(widths[c], (guint)g_utf8_strlen(cells[c], -1));
    row_cells_clear(cells);
  }
  g_string_append(s, "  ");
  for (guint c = 0; c < COL_VERDICT; c++) {
    append_padded(s, column_titles[c], widths[c], c != COL_NAME);
    g_string_append(s, "  ");
  }
  g_string_append_printf(s, "%s\n", column_titles[COL_VERDICT]);
  for (guint i = 0; i < n_results(report); i++)
    append_text_row(s, report, result_at(report, i), widths, color);

  Counts counts = count_verdicts(report);
  g_autofree char *summary = summary_counts(&counts);
  gboolean fails = ts_gate_verdict_fails(ts_gate_report_verdict(report));
  const char *on = !color ? "" : fails ? ANSI_BOLD ANSI_RED : ANSI_BOLD ANSI_GREEN;
  g_string_append_printf(s, "\n%s — %s%s%s\n", summary, on, fails ? "FAIL" : "PASS",
                         color ? ANSI_RESET : "");
  return g_string_free(s, FALSE);
}

/* ---- Markdown ---- */

/* Text inside a table cell or list item: a '|' would end the cell and a newline the row; the
 * other characters escaped here would otherwise turn compiler messages into emphasis, links
 * or raw HTML. */
static char *
md_escape(const char *text)
{
  GString *s = g_string_new(NULL);
  for (const char *p = text; *p; p++) {
    if (*p == '\n')
      g_string_append(s, "<br>");
    else if (*p == '\r')
      continue;
    else if (strchr("\\`*_[]<>|&~", *p))
      g_string_append_printf(s, "\\%c", *p);
    else
      g_string_append_c(s, *p);
  }
  return g_string_free(s, FALSE);
}

static char *
md_title(const TsGateReport *report, const Counts *c)
{
  const char *s = c->total == 1 ? "" : "s";
  if (!ts_gate_verdict_fails(ts_gate_report_verdict(report))) {
    if (c->n[TS_GATE_IMPROVED])
      return g_strdup_printf("## ✅ Perf gate: pass (%u workload%s, %u improved)", c->total, s,
                             c->n[TS_GATE_IMPROVED]);
    return g_strdup_printf("## ✅ Perf gate: pass (%u workload%s)", c->total, s);
  }
  guint reg = c->n[TS_GATE_REGRESSION], fail = c->n[TS_GATE_FAILED];
  if (reg && fail)
    return g_strdup_printf("## ❌ Perf gate: regression in %u and failure in %u of %u workload%s",
                           reg, fail, c->total, s);
  return g_strdup_printf("## ❌ Perf gate: %s in %u of %u workload%s",
                         reg ? "regression" : "failure", reg ? reg : fail, c->total, s);
}

static void
md_context(GString *s, const TsGateReport *report)
{
  g_autofree char *suite = md_escape(report->suite ? report->suite : "?");
  g_string_append_printf(s, "Suite **%s**", suite);
  const char *labels[] = {"on", "base:", "head:"};
  const char *values[] = {report->device, report->base, report->head};
  for (guint i = 0; i < G_N_ELEMENTS(values); i++)
    if (values[i] && *values[i]) {
      g_autofree char *v = md_escape(values[i]);
      g_string_append_printf(s, " · %s %s", labels[i], v);
    }
  g_autofree char *thr = format_percent(report->threshold);
  g_autofree char *alpha = format_number(report->alpha);
  g_string_append_printf(s, " · threshold %s, α %s\n\n", thr, alpha);
}

/* Failing rows first, so the reason for a red check is the first thing a reviewer reads. */
static guint
md_rank(TsGateVerdict verdict)
{
  return verdict == TS_GATE_REGRESSION ? 0 : verdict == TS_GATE_FAILED ? 1 : 2;
}

static GPtrArray *
md_order(const TsGateReport *report)
{
  GPtrArray *order = g_ptr_array_new();
  for (guint rank = 0; rank < 3; rank++)
    for (guint i = 0; i < n_results(report); i++)
      if (md_rank(result_at(report, i)->verdict) == rank)
        g_ptr_array_add(order, (gpointer)result_at(report, i));
  return order;
}

static void
md_row(GString *s, const TsGateReport *report, const TsGateResult *r)
{
  char *cells[N_COLS];
  row_cells(r, cells);
  g_string_append(s, "|");
  for (guint c = 0; c < COL_VERDICT; c++) {
    g_autofree char *cell = md_escape(cells[c]);
    g_string_append_printf(s, " %s |", cell);
  }
  if (ts_gate_verdict_fails(r->verdict))
    g_string_append_printf(s, " ❌ **%s**", cells[COL_VERDICT]);
  else
    g_string_append_printf(s, " %s", cells[COL_VERDICT]);
  g_autofree char *method = method_text(r, report->threshold);
  if (method) {
    g_autofree char *m = md_escape(method);
    g_string_append_printf(s, " (%s)", m);
  }
  g_string_append(s, " |\n");
  row_cells_clear(cells);
}

char *
ts_gate_report_markdown(const TsGateReport *report)
{
  g_return_val_if_fail(report != NULL, NULL);
  GString *s = g_string_new(NULL);
  Counts counts = count_verdicts(report);
  g_autofree char *title = md_title(report, &counts);
  g_string_append_printf(s, "%s\n\n", title);
  md_context(s, report);

  g_autoptr(GPtrArray) order = md_order(report);
  g_string_append(s, "| workload | baseline | current | change | p | verdict |\n");
  g_string_append(s, "|:--|--:|--:|--:|--:|:--|\n");
  for (guint i = 0; i < order->len; i++)
    md_row(s, report, g_ptr_array_index(order, i));

  g_autofree char *summary = summary_counts(&counts);
  g_string_append_printf(s, "\n%s\n", summary);

  gboolean any_note = FALSE;
  for (guint i = 0; i < order->len; i++) {
    const TsGateResult *r = g_ptr_array_index(order, i);
    if (r->note == NULL)
      continue;
    if (!any_note)
      g_string_append(s, "\n**Notes**\n\n");
    any_note = TRUE;
    g_autofree char *name = md_escape(r->name ? r->name : "?");
    g_autofree char *plain = plain_text(r->note);
    g_autofree char *note = md_escape(plain);
    g_string_append_printf(s, "- **%s**: %s\n", name, note);
  }
  return g_string_free(s, FALSE);
}

/* ---- JUnit XML ---- */

/* XML 1.0 cannot carry most control characters, not even as references, nor invalid UTF-8. */
static char *
xml_clean(const char *text)
{
  g_autofree char *valid = g_utf8_make_valid(text ? text : "", -1);
  return plain_text(valid);
}

static double
result_threshold(const TsGateReport *report, const TsGateResult *r)
{
  return isfinite(r->threshold) ? r->threshold : report->threshold;
}

static double
sum_seconds(const GArray *samples)
{
  double sum = 0;
  for (guint i = 0; samples && i < samples->len; i++)
    sum += g_array_index(samples, double, i);
  return sum * 1e-9;
}

static double
case_seconds(const TsGateResult *r)
{
  return sum_seconds(r->base_ns) + sum_seconds(r->cur_ns);
}

static char *
format_seconds(double s)
{
  return format_fixed(s, 6);
}

static guint
n_samples(const GArray *samples)
{
  return samples ? samples->len : 0;
}

static void
append_side(GString *s, const char *label, double median_ns, const GArray *samples)
{
  if (!isfinite(median_ns)) {
    g_string_append_printf(s, "%s: %s\n", label, DASH);
    return;
  }
  g_autofree char *median = format_time(median_ns);
  g_string_append_printf(s, "%s: %s (median of %u samples)\n", label, median, n_samples(samples));
}

/* The numbers of one case, for <system-out> and the failure body. */
static char *
case_details(const TsGateReport *report, const TsGateResult *r)
{
  GString *s = g_string_new(NULL);
  if (r->workload)
    g_string_append_printf(s, "workload: %s\n", r->workload);
  if (r->schedule || r->base_schedule)
    g_string_append_printf(s, "schedule: %s (baseline: %s)\n", r->schedule ? r->schedule : DASH,
                           r->base_schedule ? r->base_schedule : DASH);
  append_side(s, "baseline", r->base_median_ns, r->base_ns);
  append_side(s, "current", r->cur_median_ns, r->cur_ns);
  g_autofree char *change = format_change(r->change);
  g_autofree char *thr = format_percent(result_threshold(report, r));
  g_autofree char *p = format_p(r->p_value);
  g_autofree char *alpha = format_number(report->alpha);
  g_string_append_printf(s, "change: %s (threshold %s)\np: %s (alpha %s)\n", change, thr, p, alpha);
  g_autofree char *method = method_text(r, report->threshold);
  if (method)
    g_string_append_printf(s, "measured: %s\n", method);
  g_string_append_printf(s, "verdict: %s\n", ts_gate_verdict_name(r->verdict));
  if (r->note)
    g_string_append_printf(s, "note: %s\n", r->note);
  return g_string_free(s, FALSE);
}

/* The one-line message of a <failure>. */
static char *
failure_message(const TsGateReport *report, const TsGateResult *r)
{
  if (r->verdict == TS_GATE_FAILED) {
    g_autofree char *first = g_strdup(r->note ? r->note : "the kernel failed");
    char *nl = strchr(first, '\n');
    if (nl)
      *nl = '\0';
    return g_strdup_printf("kernel failed: %s", first);
  }
  g_autofree char *change = format_change(r->change);
  g_autofree char *base = format_time(r->base_median_ns);
  g_autofree char *cur = format_time(r->cur_median_ns);
  g_autofree char *thr = format_percent(result_threshold(report, r));
  g_autofree char *p = format_p(r->p_value);
  return g_strdup_printf("regression %s: %s → %s (threshold %s, p %s)", change, base, cur, thr, p);
}

static void
junit_case(GString *s, const TsGateReport *report, const char *classname, const TsGateResult *r)
{
  g_autofree char *name = xml_clean(r->name ? r->name : "?");
  g_autofree char *time = format_seconds(case_seconds(r));
  g_autofree char *open = g_markup_printf_escaped(
      "    <testcase classname=\"%s\" name=\"%s\" time=\"%s\">\n", classname, name, time);
  g_string_append(s, open);
  if (ts_gate_verdict_fails(r->verdict)) {
    g_autofree char *msg = failure_message(report, r);
    g_autofree char *clean_msg = xml_clean(msg);
    g_autofree char *body = xml_clean(r->verdict == TS_GATE_FAILED && r->note ? r->note : msg);
    g_autofree char *failure =
        g_markup_printf_escaped("      <failure message=\"%s\" type=\"%s\">%s</failure>\n",
                                clean_msg, ts_gate_verdict_name(r->verdict), body);
    g_string_append(s, failure);
  } else if (r->verdict == TS_GATE_NEW) {
    g_string_append(s, "      <skipped message=\"no baseline\"/>\n");
  }
  g_autofree char *details = case_details(report, r);
  g_autofree char *clean = xml_clean(details);
  g_autofree char *out = g_markup_printf_escaped("      <system-out>%s</system-out>\n", clean);
  g_string_append(s, out);
  g_string_append(s, "    </testcase>\n");
}

static void
junit_property(GString *s, const char *name, const char *value)
{
  if (value == NULL)
    return;
  g_autofree char *clean = xml_clean(value);
  g_autofree char *p =
      g_markup_printf_escaped("      <property name=\"%s\" value=\"%s\"/>\n", name, clean);
  g_string_append(s, p);
}

char *
ts_gate_report_junit(const TsGateReport *report)
{
  g_return_val_if_fail(report != NULL, NULL);
  Counts c = count_verdicts(report);
  guint failures = c.n[TS_GATE_REGRESSION] + c.n[TS_GATE_FAILED];
  double total = 0;
  for (guint i = 0; i < n_results(report); i++)
    total += case_seconds(result_at(report, i));
  g_autofree char *suite = xml_clean(report->suite ? report->suite : "suite");
  g_autofree char *classname = g_strconcat("perfgate.", suite, NULL);
  g_autofree char *time = format_seconds(total);

  GString *s = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  g_autofree char *head = g_markup_printf_escaped(
      "<testsuites name=\"perfgate\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"%u\" "
      "time=\"%s\">\n"
      "  <testsuite name=\"%s\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"%u\" "
      "time=\"%s\">\n",
      c.total, failures, c.n[TS_GATE_NEW], time, suite, c.total, failures, c.n[TS_GATE_NEW], time);
  g_string_append(s, head);
  g_string_append(s, "    <properties>\n");
  junit_property(s, "device", report->device);
  junit_property(s, "base", report->base);
  junit_property(s, "head", report->head);
  g_autofree char *thr = format_percent(report->threshold);
  g_autofree char *alpha = format_number(report->alpha);
  junit_property(s, "threshold", thr);
  junit_property(s, "alpha", alpha);
  g_string_append(s, "    </properties>\n");
  for (guint i = 0; i < n_results(report); i++)
    junit_case(s, report, classname, result_at(report, i));
  g_string_append(s, "  </testsuite>\n</testsuites>\n");
  return g_string_free(s, FALSE);
}

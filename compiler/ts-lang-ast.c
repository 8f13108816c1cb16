/* ts-lang-ast.c — the kernel language's syntax tree: freeing and printing. */
#include "ts-lang.h"

#include <string.h>

static const char *const kind_names[] = {
  [TS_LANG_MODULE] = "module",     [TS_LANG_DEF] = "def",
  [TS_LANG_DECORATORS] = "decorators", [TS_LANG_PARAMS] = "params",
  [TS_LANG_PARAM] = "param",       [TS_LANG_STAR] = "star",
  [TS_LANG_BLOCK] = "block",       [TS_LANG_ASSIGN] = "assign",
  [TS_LANG_AUGASSIGN] = "augassign", [TS_LANG_EXPR_STMT] = "expr",
  [TS_LANG_FOR] = "for",           [TS_LANG_IF] = "if",
  [TS_LANG_RETURN] = "return",     [TS_LANG_PASS] = "pass",
  [TS_LANG_NAME] = "name",         [TS_LANG_INT] = "int",
  [TS_LANG_FLOAT] = "float",       [TS_LANG_STRING] = "str",
  [TS_LANG_BINOP] = "binop",       [TS_LANG_COMPARE] = "compare",
  [TS_LANG_BOOLOP] = "boolop",     [TS_LANG_UNARY] = "unary",
  [TS_LANG_CALL] = "call",         [TS_LANG_KEYWORD] = "kw",
  [TS_LANG_ATTR] = "attr",         [TS_LANG_SUBSCRIPT] = "index",
  [TS_LANG_SLICE] = "slice",       [TS_LANG_TUPLE] = "tuple",
  [TS_LANG_LIST] = "list",         [TS_LANG_IFEXP] = "ifexp",
};

const char *
ts_lang_kind_name(TsLangKind kind)
{
  return (guint)kind < G_N_ELEMENTS(kind_names) && kind_names[kind] ? kind_names[kind] : "?";
}

void
ts_lang_node_free(TsLangNode *node)
{
  if (node == NULL)
    return;
  if (node->kids) {
    for (guint i = 0; i < node->kids->len; i++)
      ts_lang_node_free(g_ptr_array_index(node->kids, i));
    g_ptr_array_free(node->kids, TRUE);
  }
  g_free(node->str);
  g_free(node);
}

static gboolean
is_statement(TsLangKind k)
{
  return k == TS_LANG_DEF || k == TS_LANG_ASSIGN || k == TS_LANG_AUGASSIGN ||
         k == TS_LANG_EXPR_STMT || k == TS_LANG_FOR || k == TS_LANG_IF || k == TS_LANG_RETURN ||
         k == TS_LANG_PASS;
}

static void
print(GString *out, const TsLangNode *n, int depth)
{
  if (n == NULL) {
    g_string_append(out, "_");
    return;
  }
  if (is_statement(n->kind) && depth > 0) {
    g_string_append_c(out, '\n');
    for (int i = 0; i < depth; i++)
      g_string_append(out, "  ");
  }
  g_string_append_printf(out, "(%s", ts_lang_kind_name(n->kind));
  switch (n->kind) {
  case TS_LANG_INT:
    g_string_append_printf(out, " %.17g", n->num);
    break;
  case TS_LANG_FLOAT:
    g_string_append_printf(out, " %.17g", n->num);
    break;
  case TS_LANG_STRING: {
    g_autofree char *esc = g_strescape(n->str, NULL);
    g_string_append_printf(out, " \"%s\"", esc);
    break;
  }
  default:
    if (n->str)
      g_string_append_printf(out, " %s", n->str);
  }
  if (n->flags & TS_LANG_MUT)
    g_string_append(out, " mut");
  const int inner = is_statement(n->kind) || n->kind == TS_LANG_BLOCK || n->kind == TS_LANG_MODULE
                      ? depth + 1
                      : depth;
  for (guint i = 0; n->kids && i < n->kids->len; i++) {
    const TsLangNode *kid = g_ptr_array_index(n->kids, i);
    if (!(kid && is_statement(kid->kind) && inner > 0)) /* those start a line of their own */
      g_string_append_c(out, ' ');
    print(out, kid, inner);
  }
  g_string_append_c(out, ')');
}

char *
ts_lang_node_to_string(const TsLangNode *node)
{
  GString *out = g_string_new(NULL);
  print(out, node, 0);
  return g_string_free(out, FALSE);
}

/* Python-like source of an expression (what decorators hand to the Schedule IR parser, what
 * messages quote): fully parenthesised binary operators, so the text reads back the same. */
static void
unparse(GString *out, const TsLangNode *n)
{
  if (n == NULL)
    return;
  switch (n->kind) {
  case TS_LANG_NAME:
    g_string_append(out, n->str);
    break;
  case TS_LANG_INT:
    g_string_append_printf(out, "%.17g", n->num);
    break;
  case TS_LANG_FLOAT: {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(out, g_ascii_dtostr(buf, sizeof buf, n->num));
    if (!strpbrk(buf, ".eEn")) /* keep it a float: 2.0, not 2 */
      g_string_append(out, ".0");
    break;
  }
  case TS_LANG_STRING: {
    g_autofree char *esc = g_strescape(n->str, NULL);
    g_string_append_printf(out, "\"%s\"", esc);
    break;
  }
  case TS_LANG_BINOP:
  case TS_LANG_COMPARE:
  case TS_LANG_BOOLOP:
    g_string_append_c(out, '(');
    unparse(out, g_ptr_array_index(n->kids, 0));
    g_string_append_printf(out, " %s ", n->str);
    unparse(out, g_ptr_array_index(n->kids, 1));
    g_string_append_c(out, ')');
    break;
  case TS_LANG_UNARY:
    g_string_append_printf(out, "%s%s", n->str, strcmp(n->str, "not") == 0 ? " " : "");
    unparse(out, g_ptr_array_index(n->kids, 0));
    break;
  case TS_LANG_CALL:
    unparse(out, g_ptr_array_index(n->kids, 0));
    g_string_append_c(out, '(');
    for (guint i = 1; i < n->kids->len; i++) {
      if (i > 1)
        g_string_append(out, ", ");
      unparse(out, g_ptr_array_index(n->kids, i));
    }
    g_string_append_c(out, ')');
    break;
  case TS_LANG_KEYWORD:
    g_string_append_printf(out, "%s=", n->str);
    unparse(out, g_ptr_array_index(n->kids, 0));
    break;
  case TS_LANG_ATTR:
    unparse(out, g_ptr_array_index(n->kids, 0));
    g_string_append_printf(out, ".%s", n->str);
    break;
  case TS_LANG_SUBSCRIPT: {
    unparse(out, g_ptr_array_index(n->kids, 0));
    g_string_append_c(out, '[');
    const TsLangNode *idx = g_ptr_array_index(n->kids, 1);
    if (idx && idx->kind == TS_LANG_TUPLE)
      for (guint i = 0; i < idx->kids->len; i++) {
        if (i > 0)
          g_string_append(out, ", ");
        unparse(out, g_ptr_array_index(idx->kids, i));
      }
    else
      unparse(out, idx);
    g_string_append_c(out, ']');
    break;
  }
  case TS_LANG_SLICE:
    unparse(out, g_ptr_array_index(n->kids, 0));
    g_string_append_c(out, ':');
    unparse(out, g_ptr_array_index(n->kids, 1));
    if (g_ptr_array_index(n->kids, 2)) {
      g_string_append_c(out, ':');
      unparse(out, g_ptr_array_index(n->kids, 2));
    }
    break;
  case TS_LANG_TUPLE:
  case TS_LANG_LIST:
    g_string_append_c(out, n->kind == TS_LANG_LIST ? '[' : '(');
    for (guint i = 0; i < n->kids->len; i++) {
      if (i > 0)
        g_string_append(out, ", ");
      unparse(out, g_ptr_array_index(n->kids, i));
    }
    if (n->kind == TS_LANG_TUPLE && n->kids->len == 1)
      g_string_append_c(out, ',');
    g_string_append_c(out, n->kind == TS_LANG_LIST ? ']' : ')');
    break;
  case TS_LANG_IFEXP:
    g_string_append_c(out, '(');
    unparse(out, g_ptr_array_index(n->kids, 0));
    g_string_append(out, " if ");
    unparse(out, g_ptr_array_index(n->kids, 1));
    g_string_append(out, " else ");
    unparse(out, g_ptr_array_index(n->kids, 2));
    g_string_append_c(out, ')');
    break;
  default:
    g_string_append_printf(out, "<%s>", ts_lang_kind_name(n->kind));
  }
}

char *
ts_lang_expr_to_source(const TsLangNode *expr)
{
  GString *out = g_string_new(NULL);
  unparse(out, expr);
  return g_string_free(out, FALSE);
}

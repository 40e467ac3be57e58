/* bt_pyname.c - the Python face of a declaration (see bt_pyname.h). */
#include "bt_pyname.h"

#include <string.h>

const char *const bt_pyname_keywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",    NULL};

int bt_pyname_is_keyword(const char *s)
{
    int i;

    for (i = 0; bt_pyname_keywords[i]; i++)
        if (strcmp(s, bt_pyname_keywords[i]) == 0)
            return 1;
    return 0;
}

int bt_pyname_takes(const BtDecl *d, int i)
{
    return d->params[i].size_of < 0 && !d->params[i].hidden;
}

void bt_pyname_put(BtBuf *b, const BtDecl *d, int i)
{
    const char *s = d->params[i].name;

    bt_buf_puts(b, s);
    if (bt_pyname_is_keyword(s))
        bt_buf_putc(b, '_');
}

int bt_pyname_posonly(const BtDecl *d)
{
    int i, k = 0, n = 0;

    for (i = 0; i < d->n_params; i++) {
        const BtParam *p = &d->params[i];
        if (!bt_pyname_takes(d, i))
            continue;
        k++;
        if (p->unnamed || bt_pyname_is_keyword(p->name))
            n = k;
    }
    return n;
}

void bt_pyname_signature(BtBuf *b, const BtDecl *d, const char *const *defaults)
{
    int i, k = 0, posonly = bt_pyname_posonly(d);

    bt_buf_putc(b, '(');
    for (i = 0; i < d->n_params; i++) {
        if (!bt_pyname_takes(d, i))
            continue;
        bt_buf_puts(b, k ? ", " : "");
        bt_pyname_put(b, d, i);
        if (defaults && defaults[i])
            bt_buf_printf(b, "=%s", defaults[i]);
        if (++k == posonly)
            bt_buf_puts(b, ", /");
    }
    bt_buf_putc(b, ')');
}

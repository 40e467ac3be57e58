/* bt_diag.c - diagnostics: first error wins. */
#include "bt_diag.h"

#include <stdio.h>
#include <string.h>

#define BT_RULE_DOC(name, page)                                                                    \
    {                                                                                              \
        name, "docs/" page, " (see docs/" page ")"                                                 \
    }

const BtRuleDoc bt_rule_docs[BT_RULE_COUNT] = {
    [BT_RULE_UNBINDABLE] = BT_RULE_DOC("unbindable", "dialect.rst#unbindable"),
    [BT_RULE_SIZES] = BT_RULE_DOC("sizes", "dialect.rst#sizes"),
    [BT_RULE_TEMPLATES] = BT_RULE_DOC("templates", "dialect.rst#templates"),
    [BT_RULE_YAML_TYPES] = BT_RULE_DOC("yaml-types", "dialect.rst#yaml-types"),
};

/* Only what is read before an error is recorded: the buffers are written
 * whole (NUL-terminated) when one is, and a launch or call initializes
 * several records, so clearing 5 KiB each time costs more than the call. */
void bt_diag_init(BtDiag *d)
{
    d->kind = BT_DIAG_NONE;
    d->file[0] = '\0';
    d->line = d->col = d->code = 0;
    d->message[0] = '\0';
}

/* Records kind, code and the message unless an error is recorded. */
static int record(BtDiag *d, BtDiagKind kind, int code, const char *fmt, va_list ap)
    BT_PRINTF(4, 0);

static int record(BtDiag *d, BtDiagKind kind, int code, const char *fmt, va_list ap)
{
    if (d->kind != BT_DIAG_NONE)
        return 0;
    d->kind = kind;
    d->code = code;
    vsnprintf(d->message, sizeof d->message, fmt, ap);
    return 1;
}

int bt_diag_set(BtDiag *d, BtDiagKind kind, const char *file, int line, int col, const char *fmt,
                ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (record(d, kind, 0, fmt, ap)) {
        snprintf(d->file, sizeof d->file, "%s", file ? file : "");
        d->line = line;
        d->col = col;
    }
    va_end(ap);
    return -1;
}

int bt_diag_fail(BtDiag *d, BtDiagKind kind, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    record(d, kind, code, fmt, ap);
    va_end(ap);
    return -1;
}

int bt_diag_nomem(BtDiag *d) { return bt_diag_set(d, BT_DIAG_NOMEM, NULL, 0, 0, "out of memory"); }

void bt_diag_format(const BtDiag *d, char *buf, size_t size)
{
    if (d->file[0] && d->line > 0 && d->col > 0)
        snprintf(buf, size, "%s:%d:%d: %s", d->file, d->line, d->col, d->message);
    else if (d->file[0] && d->line > 0)
        snprintf(buf, size, "%s:%d: %s", d->file, d->line, d->message);
    else if (d->file[0])
        snprintf(buf, size, "%s: %s", d->file, d->message);
    else
        snprintf(buf, size, "%s", d->message);
}

/* driver.h - what the C test drivers (dump_header.c, dump_plan.c, scale.c)
 * share: their error report. */
#ifndef BT_TEST_DRIVER_H
#define BT_TEST_DRIVER_H

#include <stdio.h>

#include "bt_diag.h"

/* Prints diag's formatted message (file:line:col: message) on stdout. */
static inline void print_diag(const BtDiag *diag)
{
    char msg[4096];

    bt_diag_format(diag, msg, sizeof msg);
    printf("%s\n", msg);
}

#endif

/*
 * dump.h — plain-text dump of a model's config and one run's attention.
 */
#ifndef ATTNSCOPE_DUMP_H
#define ATTNSCOPE_DUMP_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"
#include "util.h"

/* Two lines describing the config ("config vocab ... ", "config norm ..."). */
void dump_config(FILE *out, const struct model *m);

/* Runs m natively on text and prints the config, the tokens, the loss and,
 * for every layer and head, the T rows of attention weights.  0 or -1 (the
 * run failed, or out could not be written: "error writing standard
 * output: REASON"). */
int dump_run(FILE *out, struct model *m, const char *text, size_t len, struct err *e);

#endif

/*
 * flags.c — the table-driven flag parser and help of flags.h.
 */
#include "flags.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int parse_num(const char *name, const char *v, double lo, double hi, bool integer,
		     double *out, struct err *e)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || *end || errno == ERANGE || !isfinite(x))
		return err_set(e, "%s: '%s' is not a number", name, v);
	if (integer && x != floor(x))
		return err_set(e, "%s: '%s' is not a whole number", name, v);
	if (x < lo || x > hi)
		return err_set(e, "%s: %s is outside %g..%g", name, v, lo, hi);
	*out = x;
	return 0;
}

/* Sets one flag's field from its value (NULL for booleans). */
static int flag_set(void *opts, const struct flag *f, const char *v, struct err *e)
{
	char *field = (char *)opts + f->off;
	double x = 0;
	switch (f->kind) {
	case FLAG_STR:
		if (!*v)
			return err_set(e, "%s: empty value", f->name);
		*(const char **)field = v;
		return 0;
	case FLAG_INT:
	case FLAG_LONG:
	case FLAG_DOUBLE:
		if (parse_num(f->name, v, f->lo, f->hi, f->kind != FLAG_DOUBLE, &x, e))
			return -1;
		if (f->kind == FLAG_INT)
			*(int *)field = (int)x;
		else if (f->kind == FLAG_LONG)
			*(long *)field = (long)x;
		else
			*(double *)field = x;
		return 0;
	case FLAG_NATURAL: {
		char *end;
		errno = 0;
		long long s = strtoll(v, &end, 10);
		if (end == v || *end || errno || s < 0)
			return err_set(e, "%s: '%s' is not a non-negative integer", f->name, v);
		*(long long *)field = s;
		return 0;
	}
	case FLAG_BOOL:
		*(bool *)field = true;
		return 0;
	case FLAG_CHOICE:
		if (f->choice(v, field) != 0)
			return err_set(e, "%s: unknown value '%s' (expected %s)", f->name, v, f->arg);
		return 0;
	}
	return err_set(e, "%s: unknown kind of flag", f->name);
}

int flags_defaults(const struct flag *t, size_t n, void *opts, struct err *e)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].def && flag_set(opts, &t[i], t[i].def, e))
			return -1;
	return 0;
}

int flags_parse(const struct flag *t, size_t n, void *opts, int argc, char **args,
		void (*seen)(void *ctx, const struct flag *f, const char *v), void *ctx,
		struct err *e)
{
	for (int i = 0; i < argc; i++) {
		const char *a = args[i];
		const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);
		const struct flag *f = NULL;
		for (size_t j = 0; j < n && !f; j++)
			if (strlen(t[j].name) == klen && strncmp(t[j].name, a, klen) == 0)
				f = &t[j];
		if (!f) {
			if (strncmp(a, "--", 2) == 0)
				return err_set(e, "unknown option '%.*s'", (int)klen, a);
			return err_set(e, "unexpected argument '%s'", a);
		}
		const char *v = NULL;
		if (f->kind == FLAG_BOOL) {
			if (eq)
				return err_set(e, "%s takes no value", f->name);
		} else if (eq) {
			v = eq + 1;
		} else {
			if (i + 1 >= argc)
				return err_set(e, "%s needs a value (%s)", f->name, f->arg);
			v = args[++i];
		}
		if (flag_set(opts, f, v, e))
			return -1;
		if (seen)
			seen(ctx, f, v);
	}
	return 0;
}

void flags_usage(FILE *f, const struct flag *t, size_t n, int width)
{
	for (size_t i = 0; i < n; i++) {
		char left[128];
		snprintf(left, sizeof left, "%s%s%s", t[i].name, t[i].arg ? " " : "",
			 t[i].arg ? t[i].arg : "");
		fprintf(f, "  %-*s %s", width, left, t[i].help);
		if (t[i].def)
			fprintf(f, " (%s)", t[i].def);
		fputc('\n', f);
	}
}

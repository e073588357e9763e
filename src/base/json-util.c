/*
 * json-util.c — jansson builders that die when out of memory, and the
 * config getters (json-util.h).  Below every module that reads or writes
 * JSON; it calls only util.c and jansson.
 */
#include "json-util.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- building */

json_t *ju_check(json_t *j)
{
	if (!j)
		die("out of memory building JSON");
	return j;
}

void ju_set(json_t *obj, const char *key, json_t *value)
{
	if (json_object_set_new(obj, key, ju_check(value)) != 0)
		die("out of memory building JSON");
}

void ju_append(json_t *arr, json_t *value)
{
	if (json_array_append_new(arr, ju_check(value)) != 0)
		die("out of memory building JSON");
}

json_t *ju_real(double x)
{
	return ju_check(isfinite(x) ? json_real(x) : json_null());
}

json_t *ju_strings(char *const *v, int n)
{
	json_t *a = ju_check(json_array());
	for (int i = 0; i < n; i++) {
		json_t *s = json_string(v[i]);
		ju_append(a, s ? s : json_string("?"));
	}
	return a;
}

/* Into our own buffer (jansson's allocator need not be malloc), sized by a
 * first pass. */
char *ju_dump(const json_t *j, size_t flags)
{
	size_t len = json_dumpb(j, NULL, 0, flags);
	if (!len)
		die("cannot serialise JSON");
	char *s = xmalloc(len + 1);
	if (json_dumpb(j, s, len, flags) != len)
		die("cannot serialise JSON");
	s[len] = '\0';
	return s;
}

/* ------------------------------------------------------- config getters */

/* Type masks for get(). */
#define T(type) (1u << (type))
#define T_NUMBER (T(JSON_INTEGER) | T(JSON_REAL))
#define T_BOOL (T(JSON_TRUE) | T(JSON_FALSE))

/* The value of key into *v when its type is in types: 0; 1 when absent
 * (or null, with JU_NULL_ABSENT); -1 with e set when it is absent but
 * required, or of another type ("must be WHAT"). */
static int get(const json_t *o, const char *key, const char *where, unsigned flags,
	       unsigned types, const char *what, json_t **v, struct err *e)
{
	*v = json_object_get(o, key);
	if (!*v || ((flags & JU_NULL_ABSENT) && json_is_null(*v))) {
		if (flags & JU_REQUIRED)
			return err_set(e, "%s: missing key \"%s\"", where, key);
		return 1;
	}
	if (!(T(json_typeof(*v)) & types))
		return err_set(e, "%s: \"%s\" must be %s", where, key, what);
	return 0;
}

int ju_get_int(const json_t *o, const char *key, const char *where, unsigned flags,
	       json_int_t min, json_int_t max, int *out, struct err *e)
{
	json_t *v;
	int r = get(o, key, where, flags, T(JSON_INTEGER), "an integer", &v, e);
	if (r)
		return r;
	json_int_t x = json_integer_value(v);
	if (x < min || x > max || x < INT_MIN || x > INT_MAX)
		return err_set(e, "%s: \"%s\" is out of range (%lld)", where, key, (long long)x);
	*out = (int)x;
	return 0;
}

int ju_get_float(const json_t *o, const char *key, const char *where, unsigned flags,
		 float *out, struct err *e)
{
	json_t *v;
	int r = get(o, key, where, flags, T_NUMBER, "a number", &v, e);
	if (r)
		return r;
	double x = json_number_value(v);
	if (!isfinite(x) || fabs(x) > FLT_MAX)
		return err_set(e, "%s: \"%s\" is out of range (%g)", where, key, x);
	*out = (float)x;
	return 0;
}

int ju_get_floats(const json_t *o, const char *key, const char *where, unsigned flags,
		  float *out, int max, int *n, struct err *e)
{
	json_t *v, *x;
	int r = get(o, key, where, flags, T(JSON_ARRAY), "an array of numbers", &v, e);
	if (r)
		return r;
	if (json_array_size(v) > (size_t)max)
		return err_set(e, "%s: \"%s\" holds %zu numbers, more than %d", where, key,
			       json_array_size(v), max);
	size_t i;
	json_array_foreach(v, i, x) {
		double d = json_is_number(x) ? json_number_value(x) : NAN;
		if (!json_is_number(x) || !isfinite(d) || fabs(d) > FLT_MAX)
			return err_set(e, "%s: \"%s\"[%zu] must be a number a float holds", where, key, i);
		out[i] = (float)d;
	}
	*n = (int)json_array_size(v);
	return 0;
}

int ju_get_bool(const json_t *o, const char *key, const char *where, unsigned flags,
		bool *out, struct err *e)
{
	json_t *v;
	int r = get(o, key, where, flags, T_BOOL, "true or false", &v, e);
	if (r == 0)
		*out = json_is_true(v);
	return r;
}

int ju_get_str(const json_t *o, const char *key, const char *where, unsigned flags,
	       const char **out, struct err *e)
{
	json_t *v;
	int r = get(o, key, where, flags, T(JSON_STRING), "a string", &v, e);
	if (r == 0)
		*out = json_string_value(v);
	return r;
}

/* ---------------------------------------------------------------- reading */

json_t *ju_load_file(const char *path, size_t flags, json_error_t *jerr)
{
	json_error_t local;
	jerr = jerr ? jerr : &local;
	struct err e;
	size_t len;
	char *text = read_file_max(path, JU_FILE_MAX, "a JSON file", &len, &e);
	if (!text) {
		memset(jerr, 0, sizeof *jerr);
		jerr->line = -1;
		size_t n = strlen(e.msg) < sizeof jerr->text ? strlen(e.msg) : sizeof jerr->text - 1;
		memcpy(jerr->text, e.msg, n);
		jerr->text[n] = '\0';
		return NULL;
	}
	json_t *j = json_loadb(text, len, flags, jerr);
	free(text);
	return j;
}

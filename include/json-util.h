/*
 * json-util.h — jansson with attnscope's error rules: building JSON where
 * running out of memory is fatal, and reading the values of a config
 * object with one-line messages.
 *
 * Building: jansson's constructors return NULL when out of memory (and
 * json_string() when given invalid UTF-8), and its setters return -1.  The
 * wrappers below die() instead ("out of memory building JSON"), as
 * xmalloc() does, so that a builder is a list of calls without checks.  A
 * value that may legitimately be refused (a user's string that is not
 * UTF-8) is checked by the caller before it is handed over.
 *
 * Reading: ju_get_*() fetch one key of a config object (attnscope's
 * "config" metadata, a Hugging Face config.json) with messages that start
 * with where the object came from.
 *
 * Only .c files include this header (train.c keeps its own static copies
 * of the builders until it moves over).
 */
#ifndef ATTNSCOPE_JSON_UTIL_H
#define ATTNSCOPE_JSON_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util.h"

/* ---------------------------------------------------------------- building */

/* Returns j; dies when it is NULL (a constructor out of memory). */
json_t *ju_check(json_t *j);

/* obj[key] = value, taking the reference to value.  Dies when value is
 * NULL or jansson cannot store it (out of memory, a key that is not
 * UTF-8). */
void ju_set(json_t *obj, const char *key, json_t *value);

/* Appends value to the array arr, taking the reference.  Dies as ju_set. */
void ju_append(json_t *arr, json_t *value);

/* x as a JSON real, or null when x is NaN or infinite (JSON has neither).
 * Never NULL. */
json_t *ju_real(double x);

/* A new array of the strings v[0..n); one that is not valid UTF-8 (an
 * argument from the command line, say) becomes "?".  Never NULL. */
json_t *ju_strings(char *const *v, int n);

/* j serialised with jansson's flags (JSON_COMPACT, ...) into a malloc'd
 * NUL-terminated string that the caller frees with free().  j keeps its
 * reference.  Dies when jansson cannot serialise it (out of memory, or a
 * root that is not an object or array without JSON_ENCODE_ANY). */
char *ju_dump(const json_t *j, size_t flags);

/* ------------------------------------------------------- config getters */

enum {
	JU_REQUIRED = 1u << 0,	  /* absent is an error: "WHERE: missing key \"KEY\"" */
	JU_NULL_ABSENT = 1u << 1, /* a JSON null counts as absent */
};

/*
 * The value of key in the object o.  Each returns 0 with *out set, 1 when
 * the key is absent (*out untouched; only without JU_REQUIRED), or -1 with
 * one line in e that starts with where ("config", "config.json"):
 *   WHERE: missing key "KEY"
 *   WHERE: "KEY" must be an integer    (a number, true or false, a string)
 *   WHERE: "KEY" is out of range (N)
 * ju_get_int takes integers in [min, max]; ju_get_float any number a float
 * holds (finite, |x| <= FLT_MAX).  *out of ju_get_str points into o (valid
 * while o is).
 */
int ju_get_int(const json_t *o, const char *key, const char *where, unsigned flags,
	       json_int_t min, json_int_t max, int *out, struct err *e);
int ju_get_float(const json_t *o, const char *key, const char *where, unsigned flags,
		 float *out, struct err *e);
int ju_get_bool(const json_t *o, const char *key, const char *where, unsigned flags,
		bool *out, struct err *e);
/* An array of at most max numbers, each one a float holds, into
 * out[0 .. *n); more, or another element, is -1 ("WHERE: "KEY"[I] must be
 * a number a float holds"). */
int ju_get_floats(const json_t *o, const char *key, const char *where, unsigned flags,
		  float *out, int max, int *n, struct err *e);
int ju_get_str(const json_t *o, const char *key, const char *where, unsigned flags,
	       const char **out, struct err *e);

/* ---------------------------------------------------------------- reading */

/* The largest JSON file ju_load_file() reads: 256 MiB (a tokenizer.json is
 * tens of MiB at most, a config.json a few KiB). */
#define JU_FILE_MAX ((size_t)256 << 20)

/* json_load_file() through read_file_max(): a FIFO, a device or a file of
 * more than JU_FILE_MAX bytes is refused without blocking or reading it.
 * NULL with jerr (may be NULL) set as jansson does for bad JSON; when the
 * file could not be read, jerr->line is -1 and jerr->text the one-line
 * reason ("PATH: is a FIFO, not a regular file", truncated to jansson's
 * 160 bytes). */
json_t *ju_load_file(const char *path, size_t flags, json_error_t *jerr);

#endif

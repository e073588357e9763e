/*
 * utf8.h — UTF-8, one code point at a time.  Invalid input is never an
 * error: a bad byte decodes as U+FFFD and consumes one byte, and the
 * caller is told, so that it can count and report them.
 */
#ifndef ATTNSCOPE_UTF8_H
#define ATTNSCOPE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one code point at s[0..len).  Stores the code point (U+FFFD for
 * an invalid sequence, which then consumes one byte) and returns the bytes
 * consumed (>= 1 when len >= 1).  *bad is set when the sequence was invalid. */
int utf8_decode(const unsigned char *s, size_t len, uint32_t *cp, int *bad);

/* Encodes cp into out (at least 4 bytes); returns the length.  Surrogates
 * and values past U+10FFFF encode as U+FFFD. */
int utf8_encode(uint32_t cp, char *out);

/* s[0..len) made safe for a terminal into buf (NUL-terminated, cut at a
 * whole character to fit size): control characters (C0, DEL, C1) and bytes
 * that are not valid UTF-8 become \xNN, a backslash becomes \\; the rest
 * stays.  Returns the length written. */
size_t utf8_printable(const char *s, size_t len, char *buf, size_t size);

#endif

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

#endif

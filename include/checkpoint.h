/*
 * checkpoint.h — models in one safetensors file.
 *
 * Layout (the public safetensors format): 8-byte little-endian header length
 * N, then N bytes of JSON, then the raw little-endian tensor data.  The JSON
 * maps each tensor name (config.h param_name) to {dtype, shape,
 * data_offsets: [begin, end)} relative to the end of the header, and
 * "__metadata__" (string values only) carries:
 *   "format":     "attnscope"          "version": "1"
 *   "config":     JSON text of the model config (checkpoint_config_json)
 *   "tokenizer":  JSON text from the tokenizer's to_json
 *   "training":   JSON text of the training record (optional)
 *   "name":       the model's short name (optional)
 * Tensors are read from F32, F16 and BF16 and converted to float; written
 * as F32 or F16.
 */
#ifndef ATTNSCOPE_CHECKPOINT_H
#define ATTNSCOPE_CHECKPOINT_H

#include "model.h"
#include "util.h"

enum ckpt_dtype { CKPT_F32, CKPT_F16 };

/* Loads a model (weights, config, tokenizer, training record).  Every
 * problem — short file, header length past the end, JSON errors, unknown
 * dtype, shapes that do not match the config, overlapping or out-of-range
 * offsets, missing tensors, NaN/Inf weights, invalid configs — returns NULL
 * with one line "PATH: problem".  Nothing leaks on failure. */
struct model *checkpoint_load(const char *path, struct err *e);

/* The config of the checkpoint at path, from its header alone (no tensor
 * is read or checked against it).  0, or -1 with one line "PATH: problem". */
int checkpoint_describe(const char *path, struct model_config *c, struct err *e);

/* Writes m to path under the rules for the files attnscope writes (util.h:
 * atomically, links followed, the mode kept, anything but a regular file
 * refused).  0 or -1 with a message. */
int checkpoint_save(const struct model *m, const char *path, enum ckpt_dtype dtype, struct err *e);

/* Config <-> JSON text (malloc'd / parsed with validation). */
char *checkpoint_config_json(const struct model_config *c);
int checkpoint_config_parse(const char *json, struct model_config *c, struct err *e);

#endif

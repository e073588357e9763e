/*
 * fuzz_optim.c — libFuzzer target for the trainer's FILE.optim reader,
 * optim_file_read() (optim.h), which `attnscope train --resume FILE` runs
 * before anything else of the file is used.
 *
 * Each input is written as model.safetensors.optim in a private temporary
 * directory and read as is.  Since the file ends with an FNV-1a hash of
 * everything before it, almost every mutation would stop at the checksum;
 * when it does not match, the input is read a second time with the hash
 * recomputed, so that the header checks, the sizes and the arrays behind
 * them are what gets fuzzed.  Every failure is fine as long as it is one
 * line that starts with the path.  A file that reads must have a
 * consistent header, finite weights and moments (v >= 0), and must be
 * written back by optim_file_write() byte for byte as it was read (the
 * layout has exactly one encoding).
 *
 * train.c's own checks after reading (its JSON run description against
 * the checkpoint and the options) are static in train.c and only run by
 * a whole `train --resume`, so they are not fuzzed here.
 *
 * Seeds: fuzz/seeds/optim, the FILE.optim of two `attnscope train` runs on
 * a three-line text (1 layer, d_model 8, 3 steps, --keep-optim; 2 layers
 * MQA RoPE, --stop-after 2), 15-22 KB.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "dataset.h"
#include "optim.h"

static char in_path[128], out_path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_initialize(argc, argv, false);
	fuzz_path(in_path, sizeof in_path, "model.safetensors.optim");
	fuzz_path(out_path, sizeof out_path, "again.optim");
	return 0;
}

/* Reads the file at in_path, which holds data[0 .. size), and checks the
 * outcome as described at the top. */
static void read_and_check(const uint8_t *data, size_t size)
{
	struct optim_file f;
	struct err e = { "" };

	if (optim_file_read(in_path, &f, &e) != 0) {
		fuzz_check_error(&e, in_path);
		CHECK(!f.json && !f.params && !f.m && !f.v && !f.hist && !f.val);
		return;
	}
	CHECK(f.n_layer >= 1 && f.n_layer <= CFG_MAX_LAYERS);
	CHECK(f.hist_n == f.step && f.val_n <= f.step + 1 && f.n_params >= 1);
	CHECK(f.json && f.params && f.m && f.v && f.hist && f.val);
	for (uint64_t i = 0; i < f.n_params; i++)
		CHECK(isfinite(f.params[i]) && isfinite(f.m[i]) && isfinite(f.v[i]) &&
		      f.v[i] >= 0);

	CHECK(optim_file_write(out_path, &f, &e) == 0);
	size_t len;
	char *again = read_file(out_path, &len, &e);
	CHECK(again && len == size && memcmp(again, data, size) == 0);
	free(again);
	optim_file_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_put_file(in_path, data, size);
	read_and_check(data, size);

	/* again with the checksum that makes the rest count */
	if (size >= 16) {
		uint8_t *fixed = malloc(size);
		CHECK(fixed);
		memcpy(fixed, data, size);
		uint64_t h = dataset_fnv1a(fixed, size - 8);
		for (int i = 0; i < 8; i++)
			fixed[size - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
		if (memcmp(fixed, data, size) != 0) {
			fuzz_put_file(in_path, fixed, size);
			read_and_check(fixed, size);
		}
		free(fixed);
	}
	return 0;
}

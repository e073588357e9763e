/*
 * train-run.h — one training run as a library call: train_run(spec,
 * hooks, outcome).  It builds or borrows the model, loads or borrows the
 * data, restores an interrupted run, loops over trainer_step (trainer.h)
 * with validation, and writes the checkpoint, its training record
 * (train-record.h) and the resumable optimizer state FILE.optim (layout in
 * optim.h, struct optim_file).  `attnscope train` (train.h) turns flags
 * into a spec and adds progress, signals and the session database through
 * the hooks; the lab (lab-arm.h) trains its arms through it with no files.
 *
 * Lifetimes: a spec only points at what the caller owns (strings, a
 * borrowed model and dataset, a stored run); train_run frees everything it
 * allocates, except the trainer it leaves in spec->trainer when asked.
 *
 * Determinism: for a given spec, seed and thread count every number is
 * the same, and a run stopped (should_stop, or *hooks->stop_now) and
 * resumed from its FILE.optim ends with the same weights, bit for bit, as
 * one that was not.
 *
 * Layer: below the analysis (the lab, curves) and above the formats
 * (checkpoints, model_open); it knows nothing of flags, terminals,
 * signals or SQLite.
 */
#ifndef ATTNSCOPE_TRAIN_RUN_H
#define ATTNSCOPE_TRAIN_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "dataset.h"
#include "model.h"
#include "optim.h"
#include "trainer.h"
#include "util.h"

/* Where a run is recorded outside its files (a session database's path
 * and row id), kept in FILE.optim so that the run resuming it can link to
 * it.  path NULL: nowhere. */
struct train_link {
	char *path;
	int64_t run;
};

/* A stored run read from FILE.optim: its state and its description. */
struct train_saved {
	char *path;             /* the FILE.optim read, owned */
	struct optim_file f;
	char **args;            /* (n_args) the replayable flags of the run, owned */
	int n_args;
	char **cmds;            /* (n_cmds) every command line that ran it, owned */
	int n_cmds;
	char *config;           /* the model config's JSON (checkpoint_config_json), owned */
	struct train_link link; /* owned; path NULL when the run was not recorded */
};

/* Reads and checks path (FILE.optim, see train_optim_path) into s.  0, or
 * -1 with "PATH: problem" and s zeroed; *unreadable (when not NULL) tells
 * a file that cannot be read or fails its checks (optim_file_read) from
 * one whose JSON description is damaged. */
int train_saved_read(const char *path, struct train_saved *s, bool *unreadable, struct err *e);
/* Frees what s owns and zeroes it; a zeroed one is fine. */
void train_saved_free(struct train_saved *s);

/* FILE.optim for the checkpoint FILE (malloc'd). */
char *train_optim_path(const char *out);

/* The default model name for checkpoint out: its base name without
 * ".safetensors" (malloc'd). */
char *train_default_name(const char *out);

/* What to train, on what, and where it goes.  Plain data. */
struct train_spec {
	/* The model: a borrowed one (trained in place), else a copy of from's
	 * weights, shape and tokenizer, else a fresh model of cfg initialised
	 * from hp.seed (vocab_size from the data's vocabulary). */
	struct model *model;
	const char *from;        /* a model_open spec, or NULL */
	int from_kv_heads;       /* with from: convert to this many K/V heads, 0 = its own */
	struct model_config cfg; /* without model and from; also context = the window length */

	/* The data: a borrowed dataset with its windows set (only together
	 * with model), else the UTF-8 file data, split and windowed so. */
	const struct dataset *dataset;
	const char *data;
	int min_count;           /* without from: rarer characters become <unk> */
	double val_fraction;
	bool line_starts;
	double repeat;
	int repeat_min, repeat_max;
	bool repeat_random;

	struct train_hparams hp; /* hp.steps: the run's total, including steps restored */
	long val_every;          /* validate every N steps and after the last; 0: only
				  * after the last; -1: never */
	int threads;             /* 0: all cores */

	/* Output: the checkpoint (dtype), with FILE.optim when stopped early
	 * or with keep_optim; NULL: nothing is written (nor checked). */
	const char *out;
	const char *name;        /* the model's name; NULL: train_default_name(out) */
	enum ckpt_dtype dtype;
	bool keep_optim;

	/* Continue this stored run (read from out's FILE.optim): the model's
	 * config and the data must be the ones it started on, and it must have
	 * fewer than hp.steps steps done.  NULL: start at step 0. */
	const struct train_saved *resume;

	/* The run's description, kept in FILE.optim and the record: its
	 * replayable flags and the command lines that ran it (first: the one
	 * that started it). */
	char *const *args;
	int n_args;
	char *const *cmds;
	int n_cmds;

	/* When not NULL, the trainer is left here (its history and
	 * validation rows) for the caller to trainer_release, also on
	 * failure or stop (zeroed when the run failed before its trainer
	 * existed). */
	struct trainer *trainer;
};

/* What the hooks see of the run.  Pointers valid during the call only. */
struct train_state {
	const struct trainer *tr;  /* step, tokens, history and validation rows */
	const struct model *m;
	const struct dataset *d;
	long session;              /* steps done by this train_run call */
	bool validated;            /* in on_step: a validation followed this step */
	double seconds_before;     /* wall time of the earlier sessions of a resumed run */
};

/* Every hook may be NULL.  ctx is passed to each. */
struct train_hooks {
	void *ctx;
	/* Once everything is loaded (and restored), before the first step.
	 * May fill *link (a strdup'd path; train_run frees it) to have the
	 * run's record linked from FILE.optim.  0, or -1 with a message to
	 * fail the run (nothing trained, nothing written). */
	int (*on_start)(void *ctx, const struct train_state *s, struct train_link *link,
			struct err *e);
	/* Before every step of this session: true to stop (the files are
	 * written as for an interrupt). */
	bool (*should_stop)(void *ctx, const struct train_state *s);
	/* After each validation (loss: its mean loss). */
	void (*on_validate)(void *ctx, const struct train_state *s, double loss);
	/* After each step and the validation that follows it. */
	void (*on_step)(void *ctx, const struct train_state *s);
	/* After the last step of the session, before the files are written
	 * (also when the run failed: nothing is written then). */
	void (*after_steps)(void *ctx, const struct train_state *s);
	/* At the end of a run that started (on_start succeeded): status 0
	 * done, 1 stopped early, -1 failed with message. */
	void (*on_end)(void *ctx, const struct train_state *s, int status, double seconds,
		       const char *message);
	/* When not NULL and >= 2, a step in progress is dropped and a
	 * validation abandoned (trainer.h's stop; a signal handler's). */
	const volatile sig_atomic_t *stop_now;
};

/* How a run ended. */
struct train_outcome {
	long step;               /* steps done, in all sessions */
	uint64_t tokens;         /* tokens seen */
	size_t n_params;
	double final_loss;       /* trainer_final_loss */
	double val_loss;         /* the last validation loss, NAN without one */
	double val_acc;          /* MLM: its masked-position accuracy (trainer.h), else NAN */
	bool validated;          /* a validation loss was recorded */
	double seconds;          /* wall time of every session */
	bool spec_error;         /* failed for the spec whatever the data (too big
				  * for this machine's memory) */
};

/* Trains.  0 when all hp.steps are done (checkpoint written, FILE.optim
 * written with keep_optim, else a stale one removed); 1 when stopped early
 * (checkpoint and FILE.optim written: resumable); -1 with a one-line
 * message (the data, a file, a model, a diverged loss, a hook).  outcome
 * is filled in every case (zeroes before a model exists). */
int train_run(const struct train_spec *spec, const struct train_hooks *hooks,
	      struct train_outcome *outcome, struct err *e);

#endif

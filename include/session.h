/*
 * session.h — what one attnscope user is looking at: a model, a text, the
 * run options, the current run and the baseline run on the same text, and
 * what is selected.  Every face (REPL, scripts, TUI) changes a session only
 * through commands (cmd.h); commands mark what changed in `dirty` and the
 * TUI redraws from that.
 */
#ifndef ATTNSCOPE_SESSION_H
#define ATTNSCOPE_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "compose.h"
#include "heads.h"
#include "heat.h"
#include "lab.h"
#include "model.h"
#include "padding.h"
#include "patch.h"
#include "util.h"
#include "why.h"

enum {
	DIRTY_MODEL   = 1u << 0,
	DIRTY_TEXT    = 1u << 1,
	DIRTY_OPTIONS = 1u << 2,
	DIRTY_RUN     = 1u << 3,  /* a new forward pass finished */
	DIRTY_SELECT  = 1u << 4,
	DIRTY_ALL     = 0xffu,
};

struct store; /* store.h; NULL when nothing is recorded */

/* One run's numbers (session_update fills them after every new pass). */
struct run_numbers {
	bool valid;                 /* false: no such run yet */
	int tokens;
	double loss, ppl;           /* mean NLL (NAN without targets), exp(loss) */
	double kl, top1, dloss, drift; /* struct comparison against the baseline */
	char model[64];             /* the model's name */
};

/* The language demos narrate in (attnscope --lang; script.h: zh twins). */
enum narrate_lang {
	NARRATE_EN, /* the echo and expect lines as written */
	NARRATE_ZH, /* their zh twins, where a line has one */
};

struct session {
	struct model *model;       /* owned; NULL before the first load */
	int model_files;           /* util.h group of its files and its tokenizer's; 0: none */
	char *model_spec;          /* what the user typed to load it; owned */
	char *text;                /* current text; owned; NULL when none */
	int *tokens;               /* (n_tokens) ids of text; owned */
	int n_tokens;
	int32_t *unk_src;          /* (n_tokens) code point each <unk> came from, else -1; owned */

	struct run_options opt;    /* what the current run used */
	struct run_options native; /* the model's native options (baseline) */
	struct run *run;           /* current run (RUN_LOGITS | RUN_ATTN); owned */
	/* The baseline run on the same tokens under the native options: run
	 * itself while opt equals native (one pass, not two), else base_own. */
	struct run *base;
	bool base_valid;           /* base matches model + tokens */
	struct run *base_own;      /* the baseline's own run, allocated when first
				    * needed; owned */
	bool base_own_valid;       /* base_own matches model + tokens */
	bool run_valid;            /* run matches model + tokens + opt */
	struct comparison cmp;     /* run vs base */
	unsigned long run_gen;     /* counts the passes of run: caches derived from it key on it */
	struct head_scores *scores; /* (L * H) heads.h scores of run with induction; owned */
	bool scores_valid;         /* scores match run (see session_head_scores) */

	enum heat_kind heat;       /* what heatmaps show (`heat`); weights by default */
	struct heat heat_vals;     /* heat of the current run when it is not weights */
	float *heat_disp;          /* (L, H, T, T) heat_display of heat_vals; owned */
	struct patch_result patch; /* the last `patch` (L = 0: none yet); owned */
	unsigned long patch_gen;   /* run_gen of the run it patched from */
	char *patch_text;          /* its corrupted text; owned */
	struct why_result why;     /* the last `why` (parts NULL: none yet); owned */
	unsigned long why_gen;     /* run_gen of the run it split */
	double qkov_copy;          /* the last `qkov`'s copying score (NAN: none yet) */
	int qkov_layer, qkov_head; /* and its head */
	struct compose_result compose; /* the last `circuits` of this model (n = 0: none yet;
					* a load drops it); owned */
	int compose_kv;            /* the K/V heads and placement it was computed under */
	enum norm_place compose_place;

	/* The numbers of the current run and of the one before it, as the
	 * summary line shows them (what `expect` calls loss and prev.loss). */
	struct run_numbers cur, prev;
	/* The last results of commands `expect` reads (cmd-expect.c), each as
	 * the command printed it: */
	struct sweep_result sweep;  /* the last finished sweep (L = 0: none); owned */
	struct lab_result lab;      /* the last lab run (table.rows = 0: none); owned */
	char lab_name[16];          /* its experiment */
	struct pad_result batch;    /* the last `batch` (n = 0: none); owned */
	struct variant_row *variants; /* (n_variants) the last `compare variants`; owned */
	int n_variants;

	enum narrate_lang lang;    /* what echo and expect print in command files */
	const char *narration;     /* while the script runner runs a narrated line in
				    * Chinese: its zh twin, which echo or expect prints
				    * instead of its own text; else NULL (not owned) */
	int tour_lesson;           /* the lesson `tour` ran last (1..), 0: none yet */

	int sel_layer, sel_head, sel_token;
	unsigned dirty;

	FILE *out;                 /* where commands print (stdout) */
	bool out_paged;            /* out is a buffer for the pager: lay out for
				    * the terminal on standard output */
	bool interactive;          /* a person at a terminal (pause waits) */
	bool quiet;                /* suppress the summary line after changes */
	volatile sig_atomic_t *cancel; /* set by SIGINT during long work; may be NULL */
	struct store *store;       /* recording; NULL when off */
	void (*on_run)(struct session *s); /* called after each new run (store_attach sets
					    * the recorder); NULL: nothing */
	int threads;
	char store_note[96];       /* "not recording" when a database was asked for but
				    * nothing is recorded (prompt, status line); else "" */
};

/* Initialises an empty session printing to out.  Never fails. */
void session_init(struct session *s, FILE *out);

/* Frees everything the session owns (not the store). */
void session_free(struct session *s);

/* Loads a model (see loader.h; tokenizer: --tokenizer PATH, or NULL for
 * the one beside the model), replacing the current one; options reset to
 * the new model's native ones; the text is re-encoded and run when set.
 * Its files (the model file, or every file of its directory; the
 * tokenizer's; whatever the loader read with read_file) are in use (util.h)
 * while it stays loaded.  On failure the session is unchanged. 0 or -1. */
int session_load(struct session *s, const char *spec, const char *tokenizer, struct err *e);

/* Replaces the text and runs the model on it.  An empty text clears it.
 * On failure (too long, no model) the session is unchanged. 0 or -1. */
int session_set_text(struct session *s, const char *text, struct err *e);

/* Generate's run: the session's pass made of the decoder's steps, not a
 * pass of its own (decode.h, decoder_keep).
 *
 * session_run_to_fill(s, T) gives the run for a text of up to T tokens
 * that a decoder fills, its first rows from the current pass (s->run,
 * valid): the session's own when it holds T rows — from then on the
 * session holds no valid pass, until session_set_text_run or
 * session_update — else a new one, the caller's.  NULL when the session
 * holds no valid pass (s->run_valid false).
 *
 * session_set_text_run(s, text, r, ids, n, e) is session_set_text with r
 * (NULL: none) standing in for the pass when it is a pass over the text's
 * own tokens: the text tokenizes to ids[0..n), r's pass (decoder_kept) is
 * over them under the session's options.  Otherwise r is dropped (freed
 * unless it is s->run) and the text runs.  The session owns r from the
 * call on, whatever it returns.  0 or -1, as session_set_text. */
struct run *session_run_to_fill(struct session *s, int T);
int session_set_text_run(struct session *s, const char *text, struct run *r, const int *ids,
			 int n, struct err *e);

/* Replaces the run options (validated) and re-runs.  On failure the options
 * are unchanged.  0 or -1. */
int session_set_options(struct session *s, const struct run_options *o, struct err *e);

/* Brings run and base up to date with model, tokens and options; cheap when
 * nothing changed.  0 or -1 (no model: error; no text: 0, nothing run). */
int session_update(struct session *s, struct err *e);

/* The heads.h scores and roles of every head of the current run (index
 * l * H + h), induction included, computed on first use after each new
 * run and kept until the next.  The pointer stays owned by the session.
 * NULL with e set when there is no run or the induction pass fails. */
const struct head_scores *session_head_scores(struct session *s, struct err *e);

/* What heatmaps show from now on (heat.h); computed for the current run
 * and after every new one.  0 or -1 (session unchanged). */
int session_set_heat(struct session *s, enum heat_kind k, struct err *e);

/* Layer l, head h's (T, T) heatmap of the current run as views draw it:
 * the weights, or heat_display of the chosen quantity (NAN: masked). */
const float *session_att(const struct session *s, int l, int h);

/* The same as computed (scores unscaled, norms not row-normalised): what
 * CSV and JSON exports write. */
const float *session_heat_values(const struct session *s, int l, int h);

/* Layer l, head h's weights in the current run minus the native run's on
 * the same tokens (T, T), malloc'd: what the options changed.  Needs a
 * finished run. */
float *session_diff(const struct session *s, int l, int h);

/* True when there is a model and a text with a finished run. */
bool session_ready(const struct session *s);

/* 0 when a model is loaded, else -1 with "no model loaded (try: ...)". */
int session_need_model(const struct session *s, struct err *e);

/* 0 when session_ready(), else -1 saying what is missing (model or text). */
int session_need_run(const struct session *s, struct err *e);

/* 0 when the loaded model has an output head (cfg_has_head) or none is
 * loaded, else -1: "WHAT reads the model's predictions, and M has none". */
int session_need_head(const struct session *s, const char *what, struct err *e);

/* One-line summary of the current run: tokens, loss, KL vs baseline, top-1
 * agreement, KV bytes, forward ms; when the run made a value that is not
 * finite (run.nonfinite), where it first did instead of the agreement,
 * "first NaN at layer L (SITE), position P: loss nan  KL nan".  Writes
 * into buf. */
void session_summary(const struct session *s, char *buf, size_t size);

/* Where the current run first made a value that is not finite, as
 * session_summary says it ("at layer 0 (norm1), position 6", "in the
 * logits, position 2"), into buf; false (buf "") when the run is finite or
 * there is none.  Views use it to say so instead of drawing NaN. */
bool session_nonfinite_text(const struct session *s, char *buf, size_t size);

/* Labels of the session's tokens for views (render_labels_free them):
 * tok_label's, except that a <unk> whose source character is known shows
 * that character in angle brackets ("<举>"). */
char **session_labels(const struct session *s);

/* Short description of the options that differ from native, e.g.
 * "gqa2 post-norm mask:none -2.1" ("" when native).  Writes into buf. */
void session_variant(const struct session *s, char *buf, size_t size);

/* Whether head (l, h) is ablated in the current options. */
bool session_head_ablated(const struct session *s, int l, int h);

/* Like session_variant, for options o instead of the current ones. */
void session_variant_of(const struct session *s, const struct run_options *o, char *buf,
			size_t size);

/* KV-cache bytes of the current text under options o (float32 cache). */
double session_kv_bytes(const struct session *s, const struct run_options *o);

/* Parses a head id "L.H" or "LxHy"-style "L2H1" within the model's bounds.
 * 0 or -1 with a message. */
int session_parse_head(const struct session *s, const char *arg, int *layer, int *head,
		       struct err *e);

#endif

/*
 * fuzz_script_model.c — libFuzzer target for the script runner with a
 * model loaded, so that every command gets past "no model loaded" and
 * runs: text, show, top, generate, stats, heads, sweep, compare, export,
 * attn, norm, mask, scale, ablate, restore, reset, kv and the rest
 * (fuzz_script runs the same reader without a model).
 *
 * Four small random-weight models with a character vocabulary (printable
 * ASCII, newline and a few non-ASCII characters, as tests/tool_mkmodel
 * builds them) are made once at start and saved in a private temporary
 * directory; each input then starts a fresh session (no session database:
 * store stays NULL) that loads one of them.  The first byte of the input
 * chooses batch mode (bit 0, as in fuzz_script) and the model (bits 1-2):
 *   0  2 layers x 4 heads, LayerNorm pre-norm, learned positions, GELU
 *   1  2 layers x 4 heads over 2 K/V heads (native GQA), RMSNorm, RoPE,
 *      SwiGLU, no biases, untied, BOS
 *   2  1 layer x 2 heads over 1 K/V head (MQA), LayerNorm post-norm
 *   3  3 layers x 2 heads, RMSNorm post-norm, RoPE, GELU, untied, BOS,
 *      context 32
 * The input then runs as a command file, output and messages to /dev/null.
 *
 * Lines are blanked first when they could reach outside the run: `load`
 * (the model must stay, and a FIFO or /dev/zero would hang the run),
 * `view` (the visualizer wants a terminal), and any line with a '/' (a path
 * elsewhere: `export --out`, `text --file` and `--corpus` stay in the
 * current directory, a fresh temporary one that is emptied after each
 * input).  The warnings commands print on stderr (<unk> characters, sweep
 * progress) are silenced while the script runs; set FUZZ_VERBOSE=1 to see
 * them when reproducing a crash.
 *
 * Checks beyond "no crash": the runner's result is one of its three
 * values, the model is still loaded, and the selection (token, layer,
 * head) stays within the text and the model.
 *
 * Seeds: fuzz/seeds/script_model, one short script per model (the first
 * letter of its first command picks it: "help" model 0, "reset" 1, "echo"
 * 2 in batch mode, "?" 3 in batch mode), and sessions/demos (whose `load`
 * lines are blanked).
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include <sys/stat.h>

#include "checkpoint.h"

#define N_MODELS 4

static FILE *real_stderr;
static bool verbose;
static char workdir[96], model_path[N_MODELS][128];

/* Builds model k (see the table at the top) and saves it in the temporary
 * directory. */
static void make_model(int k)
{
	static const char extra[] = "é—床前明月光";
	struct model_config c;
	uint32_t cps[128];
	int n = 0, with_bos = k & 1;
	struct err e;

	cps[n++] = '\n';
	for (uint32_t ch = ' '; ch < 127; ch++)
		cps[n++] = ch;
	for (const char *p = extra; *p;) {
		int bad;
		p += utf8_decode((const unsigned char *)p, strlen(p), &cps[n++], &bad);
	}
	struct tokenizer *t = tok_char_new(cps, n, with_bos, &e);
	CHECK(t);

	config_default(&c);
	c.vocab_size = t->vocab_size;
	c.context = 64;
	c.d_model = 16;
	c.d_ff = 32;
	c.n_layer = 2;
	c.n_head = c.n_kv_head = 4;
	switch (k) {
	case 1:
		c.n_kv_head = 2;
		c.norm = NORM_RMS;
		c.pos = POS_ROPE;
		c.mlp = MLP_SWIGLU;
		c.bias = false;
		c.tied = false;
		break;
	case 2:
		c.n_layer = 1;
		c.n_head = 2;
		c.n_kv_head = 1;
		c.d_model = 8;
		c.d_ff = 16;
		c.placement = PLACE_POST;
		break;
	case 3:
		c.n_layer = 3;
		c.n_head = c.n_kv_head = 2;
		c.d_model = 8;
		c.d_ff = 16;
		c.context = 32;
		c.norm = NORM_RMS;
		c.placement = PLACE_POST;
		c.pos = POS_ROPE;
		c.tied = false;
		break;
	}
	struct model *m = model_new(&c, &e);
	CHECK(m);
	m->tok = t;
	model_init_random(m, 1 + (uint64_t)k);
	/* larger weights than GPT-2's init so that heads attend distinctly */
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] *= 20.0f;
	m->name = xstrdup("fuzz");
	snprintf(model_path[k], sizeof model_path[k], "%s/model%d.safetensors", fuzz_tmpdir, k);
	CHECK(checkpoint_save(m, model_path[k], CKPT_F32, &e) == 0);
	model_free(m);
}

/* Runs before libFuzzer reads the corpus: give corpus paths absolute. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	real_stderr = stderr;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	fuzz_initialize(argc, argv, true);
	fuzz_path(workdir, sizeof workdir, "work");
	if (mkdir(workdir, 0700) != 0 || chdir(workdir) != 0)
		abort();
	for (int k = 0; k < N_MODELS; k++)
		make_model(k);
	return 0;
}

/* True when the line (up to its end or a NUL) must not run: it holds a
 * '/' or names the load or view command. */
static bool blanked(const char *line, size_t len)
{
	static const char *const names[] = { "load", "view", NULL };
	return memchr(line, '/', len) || fuzz_line_runs(line, len, names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	unsigned flags = (data[0] & 1) ? SCRIPT_BATCH : 0;
	int k = (data[0] >> 1) & 3;
	char *text = fuzz_blank_lines(data, size, blanked);
	struct session s;
	struct err e = { "" };

	fuzz_session_init(&s);
	CHECK(session_load(&s, model_path[k], NULL, &e) == 0);
	if (!verbose)
		stderr = fuzz_devnull();
	fuzz_run_script(&s, text, size, flags);
	stderr = real_stderr;
	CHECK(s.model != NULL && s.store == NULL);
	const struct model_config *c = &s.model->cfg;
	CHECK(s.n_tokens >= 0 && s.n_tokens <= c->context);
	CHECK(s.n_tokens == 0 || (s.sel_token >= 0 && s.sel_token < s.n_tokens));
	CHECK(s.sel_layer >= 0 && s.sel_layer < c->n_layer);
	CHECK(s.sel_head >= 0 && s.sel_head < c->n_head);
	session_free(&s);
	free(text);
	fuzz_empty_dir(workdir);
	return 0;
}

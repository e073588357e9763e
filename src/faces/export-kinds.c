/*
 * export-kinds.c — the table of everything `export` writes (export.h:
 * export_kinds[]) and export_run, which checks a format against an
 * export's own and makes PNG from its SVG.  A new export is one file with
 * its write function and one row here; the `export` command, its usage,
 * completion and `help export` read the table.
 */
#include "export.h"

#include <stdio.h>
#include <string.h>

/* The exports that predate the request, adapted to it. */
static int stats_w(const struct session *s, const struct export_req *r, enum export_format f,
		   struct render_buf *out, struct err *e)
{
	(void)r;
	return export_stats(s, f, out, e);
}

static int lens_w(const struct session *s, const struct export_req *r, enum export_format f,
		  struct render_buf *out, struct err *e)
{
	(void)r;
	return export_lens(s, f, out, e);
}

static int patch_w(const struct session *s, const struct export_req *r, enum export_format f,
		   struct render_buf *out, struct err *e)
{
	(void)r;
	return export_patch(s, f, out, e);
}

#define TEXTS (EXPORT_BIT(EXPORT_TXT) | EXPORT_BIT(EXPORT_ASCII) | EXPORT_BIT(EXPORT_ANSI))
#define DATA (EXPORT_BIT(EXPORT_CSV) | EXPORT_BIT(EXPORT_JSON))
#define FIGURE (EXPORT_BIT(EXPORT_SVG) | EXPORT_BIT(EXPORT_PNG))

const struct export_kind export_kinds[] = {
	{ "heatmap", "L.H", TEXTS | DATA | FIGURE, "one head", true, export_heatmap_req },
	{ "layer", "L", TEXTS | DATA | FIGURE, "every head of one layer", true, export_layer },
	{ "grid", NULL, TEXTS | DATA | FIGURE, "every head", true, export_grid_req },
	{ "stats", NULL, EXPORT_BIT(EXPORT_TXT) | EXPORT_BIT(EXPORT_ASCII) | DATA, "the numbers",
	  false, stats_w },
	{ "lens", NULL, EXPORT_BIT(EXPORT_TXT) | DATA | FIGURE, "the logit lens", false, lens_w },
	{ "patch", NULL, EXPORT_BIT(EXPORT_TXT) | DATA | FIGURE, "the last patch", false, patch_w },
	{ "mask", NULL, EXPORT_BIT(EXPORT_TXT) | EXPORT_BIT(EXPORT_ASCII) | DATA | FIGURE,
	  "the mask matrix", false, export_mask },
	{ "groups", NULL, EXPORT_BIT(EXPORT_TXT) | EXPORT_BIT(EXPORT_ASCII) | DATA | FIGURE,
	  "GQA's query-head to K/V-head grouping", false, export_groups },
	{ "lab", NULL, EXPORT_BIT(EXPORT_TXT) | EXPORT_BIT(EXPORT_ASCII) | DATA | FIGURE,
	  "the last lab experiment's arms", false, export_lab },
	{ "circuits", NULL, TEXTS | DATA | FIGURE, "composition scores between heads", false,
	  export_circuits },
	{ "dla", NULL, TEXTS | DATA | FIGURE, "direct logit attribution at the last position", false,
	  export_dla },
	{ "why", "L.H I J", TEXTS | DATA | FIGURE, "one score split into its parts", false, export_why },
	{ "qkov", "L.H", TEXTS | DATA | FIGURE, "one head's OV and QK circuits", false, export_qkov },
	{ NULL, NULL, 0, NULL, false, NULL },
};

const struct export_kind *export_find(const char *name)
{
	for (const struct export_kind *k = export_kinds; k->name; k++)
		if (!strcmp(k->name, name))
			return k;
	return NULL;
}

int export_arg_words(const struct export_kind *k)
{
	int n = 0;
	for (const char *p = k->arg; p && *p; p++)
		n += *p != ' ' && (p == k->arg || p[-1] == ' ');
	return n;
}

void export_formats_text(const struct export_kind *k, char *buf, size_t size)
{
	int n = 0, total = 0;
	for (int f = 0; f < EXPORT_N_FORMATS; f++)
		total += (k->formats & EXPORT_BIT(f)) != 0;
	size_t len = 0;
	buf[0] = '\0';
	for (int f = 0; f < EXPORT_N_FORMATS && len < size; f++) {
		if (!(k->formats & EXPORT_BIT(f)))
			continue;
		n++;
		const char *sep = n == 1 ? "" : n == total ? " or " : ", ";
		len += (size_t)snprintf(buf + len, size - len, "%s%s", sep,
					export_format_name((enum export_format)f));
	}
}

int export_run(const struct export_kind *k, const struct session *s, const struct export_req *r,
	       enum export_format f, struct render_buf *out, struct err *e)
{
	if (!(k->formats & EXPORT_BIT(f))) {
		char list[128];
		export_formats_text(k, list, sizeof list);
		return err_set(e, "export %s: --format %s is not one of its formats (%s)", k->name,
			       export_format_name(f), list);
	}
	if (f != EXPORT_PNG)
		return k->write(s, r, f, out, e);
	struct render_buf svg;
	render_buf_init(&svg);
	int rc = k->write(s, r, EXPORT_SVG, &svg, e);
	if (rc == 0)
		rc = export_png(svg.data ? svg.data : "", svg.len, r->scale ? r->scale : 1, out, e);
	render_buf_free(&svg);
	return rc;
}

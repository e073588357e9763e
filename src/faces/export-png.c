/*
 * export-png.c — an SVG figure as PNG (export.h: export_png): librsvg
 * parses the SVG the exports write and renders it with cairo onto an image
 * surface, which cairo encodes as PNG into the caller's buffer.  The only
 * file that includes the GLib, librsvg and cairo headers.
 *
 * Ownership: the RsvgHandle, the cairo surface and context live for one
 * call and are released on every path; a GError is freed after its
 * message is copied into the err.
 */
#include "export.h"

#include <math.h>
#include <string.h>

#include <cairo.h>
#include <librsvg/rsvg.h>

/* cairo's write callback: appends to the render_buf. */
static cairo_status_t append_bytes(void *ctx, const unsigned char *data, unsigned int len)
{
	render_buf_put(ctx, (const char *)data, len);
	return CAIRO_STATUS_SUCCESS;
}

/* Copies a GError's message into e (first line only) and frees it. */
static int gerr(struct err *e, const char *what, GError *g)
{
	const char *msg = g && g->message ? g->message : "unknown error";
	int n = (int)strcspn(msg, "\r\n");
	err_set(e, "png: %s: %.*s", what, n > 200 ? 200 : n, msg);
	if (g)
		g_error_free(g);
	return -1;
}

int export_png(const char *svg, size_t len, int scale, struct render_buf *out, struct err *e)
{
	if (scale < 1 || scale > EXPORT_MAX_SCALE)
		return err_set(e, "png: scale %d is not 1 to %d", scale, EXPORT_MAX_SCALE);
	GError *g = NULL;
	RsvgHandle *h = rsvg_handle_new_from_data((const guint8 *)svg, len, &g);
	if (!h)
		return gerr(e, "cannot read the SVG", g);
	gdouble w = 0, ht = 0;
	if (!rsvg_handle_get_intrinsic_size_in_pixels(h, &w, &ht) || w <= 0 || ht <= 0) {
		g_object_unref(h);
		return err_set(e, "png: the SVG has no size in pixels");
	}
	double pw = ceil(w * scale), ph = ceil(ht * scale);
	if (pw > EXPORT_MAX_PNG_SIDE || ph > EXPORT_MAX_PNG_SIDE) {
		g_object_unref(h);
		return err_set(e, "png: the figure would be %.0f x %.0f pixels, over the %d-pixel limit "
			       "(use --format svg, or a smaller --scale)", pw, ph, EXPORT_MAX_PNG_SIDE);
	}
	/* opaque: the figures paint a white background, so PNG needs no alpha */
	cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)pw, (int)ph);
	cairo_t *cr = cairo_create(surf);
	int rc = 0;
	if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
		rc = err_set(e, "png: cannot make a %.0f x %.0f image: %s", pw, ph,
			     cairo_status_to_string(cairo_status(cr)));
		goto out;
	}
	cairo_set_source_rgb(cr, 1, 1, 1); /* what the drawing leaves transparent */
	cairo_paint(cr);
	RsvgRectangle viewport = { 0, 0, pw, ph };
	if (!rsvg_handle_render_document(h, cr, &viewport, &g)) {
		rc = gerr(e, "cannot draw the SVG", g);
		goto out;
	}
	cairo_surface_flush(surf);
	size_t start = out->len;
	cairo_status_t st = cairo_surface_write_to_png_stream(surf, append_bytes, out);
	if (st != CAIRO_STATUS_SUCCESS) {
		out->len = start;
		if (out->data)
			out->data[start] = '\0';
		rc = err_set(e, "png: cannot encode the image: %s", cairo_status_to_string(st));
	}
out:
	cairo_destroy(cr);
	cairo_surface_destroy(surf);
	g_object_unref(h);
	return rc;
}

#include "core/sl_widen_decimals.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_ref.h"

/// The bit width of a "d:P,S,BITS" format when it is 32 or 64, else 0; and
/// in *cut where ",BITS" starts.
static int narrow_bits(const char* format, size_t* cut) {
  if (format == NULL || format[0] != 'd' || format[1] != ':') return 0;
  const char* comma = strchr(format + 2, ',');
  if (comma == NULL) return 0;
  comma = strchr(comma + 1, ',');
  if (comma == NULL) return 0;
  int bits = strcmp(comma + 1, "32") == 0 ? 32 : strcmp(comma + 1, "64") == 0 ? 64 : 0;
  if (cut != NULL) *cut = (size_t)(comma - format);
  return bits;
}

static int has_narrow(const struct ArrowSchema* s, int depth) {
  if (s == NULL || depth > 64) return 0;
  if (narrow_bits(s->format, NULL) != 0) return 1;
  for (int64_t i = 0; s->children != NULL && i < s->n_children; ++i)
    if (has_narrow(s->children[i], depth + 1)) return 1;
  return has_narrow(s->dictionary, depth + 1);
}

int sl_schema_has_narrow_decimals(const struct ArrowSchema* schema) {
  return has_narrow(schema, 0);
}

static void widen_schema(struct ArrowSchema* s, int depth) {
  if (s == NULL || depth > 64) return;
  size_t cut;
  // The format lives in the node's own block (sl_schema_init), writable
  // memory; the shorter string needs no new block.
  if (narrow_bits(s->format, &cut) != 0) ((char*)s->format)[cut] = '\0';
  for (int64_t i = 0; s->children != NULL && i < s->n_children; ++i)
    widen_schema(s->children[i], depth + 1);
  widen_schema(s->dictionary, depth + 1);
}

void sl_schema_widen_decimals(struct ArrowSchema* schema) { widen_schema(schema, 0); }

/// Widens the decimal32/64 nodes of the view tree `a` (shaped as `s`) in
/// place. Nodes whose shape does not match are left for the validator that
/// runs next to report.
static int widen_rec(const struct ArrowSchema* s, struct ArrowArray* a,
                     const struct sluice_allocator* alloc, int depth, struct sluice_error* error) {
  if (s == NULL || a == NULL || a->release == NULL || depth > 64) return 0;
  int bits = narrow_bits(s->format, NULL);
  if (bits != 0 && a->n_buffers == 2 && a->length > 0) {
    const char* name = s->name != NULL ? s->name : "";
    size_t n = (size_t)a->offset + (size_t)a->length, bytes;
    const uint8_t* narrow = a->buffers[1];
    if (a->offset < 0 || a->length < 0 || narrow == NULL)
      return sl_error_set(error, EINVAL, "column '%s': decimal%d array without values", name, bits);
    if (sl_mul_size(n, 16, &bytes) != 0)
      return sl_error_set(error, ERANGE, "column '%s': %zu decimal values are too many", name, n);
    uint8_t* wide = sl_alloc_buffer(alloc, bytes);
    if (wide == NULL) return sl_error_set(error, ENOMEM, "column '%s': out of memory", name);
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      if (bits == 32) {
        int32_t v32;
        memcpy(&v32, narrow + i * 4, 4);
        v = v32;
      } else {
        memcpy(&v, narrow + i * 8, 8);
      }
      int64_t high = v < 0 ? -1 : 0;
      memcpy(wide + i * 16, &v, 8);  // little-endian: the low half first
      memcpy(wide + i * 16 + 8, &high, 8);
    }
    sl_array_set_buffer_owned(a, 1, wide, (int64_t)bytes);
  }
  if (s->n_children == a->n_children) {
    for (int64_t i = 0; i < s->n_children; ++i)
      SL_RETURN_NOT_OK(widen_rec(s->children[i], a->children[i], alloc, depth + 1, error));
  }
  return widen_rec(s->dictionary, a->dictionary, alloc, depth + 1, error);
}

int sl_array_widen_decimals(const struct ArrowSchema* narrow, struct ArrowArray* batch,
                            const struct sluice_allocator* alloc, struct sluice_error* error) {
  const struct ArrowArray* shared = NULL;
  struct sl_ref* ref = sl_array_share(batch, alloc, &shared);
  if (ref == NULL) {
    batch->release(batch);
    return sl_error_set(error, ENOMEM, "out of memory widening decimals");
  }
  struct ArrowArray view;
  int rc = sl_array_view(shared, ref, alloc, &view, error);
  sl_ref_release(ref);  // the view's buffers hold the batch now
  if (rc != 0) return rc;
  rc = widen_rec(narrow, &view, alloc, 0, error);
  if (rc != 0) {
    view.release(&view);
    return rc;
  }
  sl_array_move(&view, batch);
  return 0;
}

#include "sl_required.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_error.h"
#include "sl_read.h"

// Deeper nesting is not looked into (the readers refuse it anyway); bounds
// the recursion.
#define REQUIRED_MAX_DEPTH 64

struct rctx {
  const char* names[REQUIRED_MAX_DEPTH];  ///< the bad field's path, filled on the way out
  int depth;                              ///< how many of names are set
};

static int nullable(const struct ArrowSchema* s) { return (s->flags & ARROW_FLAG_NULLABLE) != 0; }

/// Whether `s` or a field under it is not nullable.
static int has_required(const struct ArrowSchema* s, int depth) {
  if (!nullable(s)) return 1;
  if (depth >= REQUIRED_MAX_DEPTH) return 0;
  for (int64_t i = 0; i < s->n_children; i++) {
    if (s->children[i] != NULL && has_required(s->children[i], depth + 1)) return 1;
  }
  return 0;
}

/// Whether array `a` (of `s`) may hold a null: its validity, a null
/// type, or nulls among its dictionary's values.
static int may_hold_null(const struct ArrowSchema* s, const struct ArrowArray* a) {
  return strcmp(s->format, "n") == 0 || (a->null_count != 0 && a->buffers[0] != NULL) ||
         (a->dictionary != NULL && a->dictionary->null_count != 0 &&
          a->dictionary->buffers[0] != NULL);
}

/// Whether some field at or under `s` that is not nullable has an array
/// that may hold a null. Only then are the column's values walked one by
/// one (a null under a null parent is allowed, so the walk decides); a map's
/// keys, never nullable, usually hold no null, and are not walked.
static int required_may_hold_null(const struct ArrowSchema* s, const struct ArrowArray* a,
                                  int depth) {
  if (!nullable(s) && may_hold_null(s, a)) return 1;
  if (depth >= REQUIRED_MAX_DEPTH || s->dictionary != NULL || a->n_children != s->n_children)
    return 0;
  for (int64_t i = 0; i < s->n_children; i++) {
    if (s->children[i] != NULL && a->children[i] != NULL &&
        required_may_hold_null(s->children[i], a->children[i], depth + 1))
      return 1;
  }
  return 0;
}

static int64_t index_at(const char* format, const void* data, int64_t p) {
  switch (format[0]) {
    case 'c': return ((const int8_t*)data)[p];
    case 'C': return ((const uint8_t*)data)[p];
    case 's': return ((const int16_t*)data)[p];
    case 'S': return ((const uint16_t*)data)[p];
    case 'i': return ((const int32_t*)data)[p];
    case 'I': return ((const uint32_t*)data)[p];
    case 'l': return ((const int64_t*)data)[p];
    case 'L': return (int64_t)((const uint64_t*)data)[p];  // > INT64_MAX: negative, skipped
    default: return -1;
  }
}

/// Whether element `p` (physical: offset included) of `a` is null.
static int value_null(const struct ArrowSchema* s, const struct ArrowArray* a, int64_t p) {
  if (strcmp(s->format, "n") == 0) return 1;
  if (s->format[0] == '+' && s->format[1] == 'u') return 0;  // unions have no validity
  if (a->null_count != 0 && a->buffers[0] != NULL && !sl_bit_get(a->buffers[0], p)) return 1;
  const struct ArrowArray* d = a->dictionary;
  if (d == NULL || s->dictionary == NULL || d->null_count == 0 || d->buffers[0] == NULL ||
      a->n_buffers < 2 || a->buffers[1] == NULL)
    return 0;
  int64_t k = index_at(s->format, a->buffers[1], p);
  if (k < 0 || k >= d->length) return 0;  // the writer reports bad indexes itself
  return !sl_bit_get(d->buffers[0], d->offset + k);
}

static int check_range(struct rctx* c, const struct ArrowSchema* s, const struct ArrowArray* a,
                       int64_t begin, int64_t end, int depth);

/// Element `p` (physical) of `a`: 1 (path in c) if it, or a value under
/// it, is a null in a field that is not nullable.
static int check_value(struct rctx* c, const struct ArrowSchema* s, const struct ArrowArray* a,
                       int64_t p, int depth) {
  int found = 0;
  if (value_null(s, a, p)) {
    found = !nullable(s);
  } else if (depth + 1 < REQUIRED_MAX_DEPTH && s->dictionary == NULL && s->format[0] == '+' &&
             a->n_children == s->n_children) {
    const char* f = s->format;
    for (int64_t i = 0; i < s->n_children && !found; i++) {
      const struct ArrowSchema* cs = s->children[i];
      const struct ArrowArray* ca = a->children[i];
      if (cs == NULL || ca == NULL || !has_required(cs, depth + 1)) continue;
      int64_t begin = -1, end = -1;  // of the child's elements, logical
      if (strcmp(f, "+s") == 0) {
        begin = p;  // a struct's offset applies to its children too
        end = p + 1;
      } else if ((strcmp(f, "+l") == 0 || strcmp(f, "+m") == 0) && a->buffers[1] != NULL) {
        begin = ((const int32_t*)a->buffers[1])[p];
        end = ((const int32_t*)a->buffers[1])[p + 1];
      } else if (strcmp(f, "+L") == 0 && a->buffers[1] != NULL) {
        begin = ((const int64_t*)a->buffers[1])[p];
        end = ((const int64_t*)a->buffers[1])[p + 1];
      } else if (strncmp(f, "+w:", 3) == 0) {
        long long size = atoll(f + 3);
        begin = p * size;
        end = begin + size;
      }
      // Malformed offsets are the writer's to report; not looked into here.
      if (begin < 0 || end < begin || end > ca->length) continue;
      found = check_range(c, cs, ca, begin, end, depth + 1);
    }
  }
  if (found && c->depth < REQUIRED_MAX_DEPTH) c->names[c->depth++] = s->name != NULL ? s->name : "";
  return found;
}

/// Elements [begin, end) (logical) of `a`.
static int check_range(struct rctx* c, const struct ArrowSchema* s, const struct ArrowArray* a,
                       int64_t begin, int64_t end, int depth) {
  for (int64_t i = begin; i < end; i++) {
    if (check_value(c, s, a, a->offset + i, depth)) return 1;
  }
  return 0;
}

int sl_batch_check_required(const struct ArrowSchema* schema, const struct ArrowArray* batch,
                            int64_t first_row, struct sluice_error* error) {
  if (schema->n_children != batch->n_children) return 0;  // the writer reports it
  for (int64_t col = 0; col < schema->n_children; col++) {
    const struct ArrowSchema* s = schema->children[col];
    const struct ArrowArray* a = batch->children[col];
    // Most often no field that must not be null has an array with nulls:
    // nothing to look at.
    if (!has_required(s, 0) || !required_may_hold_null(s, a, 0)) continue;
    struct rctx c;
    c.depth = 0;
    for (int64_t r = 0; r < batch->length; r++) {
      // A struct's offset applies to its children.
      if (!check_value(&c, s, a, a->offset + batch->offset + r, 0)) continue;
      char path[512];
      size_t len = 0;
      path[0] = '\0';
      for (int k = c.depth - 1; k >= 0 && len < sizeof path; k--) {
        int n = snprintf(path + len, sizeof path - len, "%s%s", k == c.depth - 1 ? "" : ".",
                         c.names[k]);
        if (n < 0) break;
        len += (size_t)n;
      }
      return sl_error_set(error, EINVAL, "column '%s' row %lld: a null in a field that is not "
                          "nullable", path, (long long)(first_row + r));
    }
  }
  return 0;
}

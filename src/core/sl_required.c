#include "sl_required.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_error.h"
#include "sl_read.h"

// Deeper nesting is not looked into (the readers refuse it anyway); bounds
// the recursion.
#define REQUIRED_MAX_DEPTH 64
// Nodes of a column's type whose verdict (look into it or not) is worked out
// once per batch; past them it is worked out per value, which costs a walk
// of the node's subtree each time (fine for wide structs of flat fields).
#define REQUIRED_PLAN_NODES 256

struct rctx {
  const char* names[REQUIRED_MAX_DEPTH];  ///< the bad field's path, filled on the way out
  int depth;                              ///< how many of names are set
  int64_t n_nodes;                        ///< nodes planned so far, in preorder
  int64_t size[REQUIRED_PLAN_NODES];      ///< nodes in each planned node's subtree
  unsigned char need[REQUIRED_PLAN_NODES];  ///< whether the walk looks into it
};

static int nullable(const struct ArrowSchema* s) { return (s->flags & ARROW_FLAG_NULLABLE) != 0; }

/// Whether array `a` (of `s`) may hold a null: its validity, a null
/// type, or nulls among its dictionary's values.
static int may_hold_null(const struct ArrowSchema* s, const struct ArrowArray* a) {
  return strcmp(s->format, "n") == 0 || (a->null_count != 0 && a->buffers[0] != NULL) ||
         (a->dictionary != NULL && a->dictionary->null_count != 0 &&
          a->dictionary->buffers[0] != NULL);
}

static int is_union(const char* f) {
  return strncmp(f, "+ud:", 4) == 0 || strncmp(f, "+us:", 4) == 0;
}

/// Whether the walk looks into the children of `s` at `depth`: structs,
/// lists, maps, fixed-size lists and unions (not run-end encoded arrays or
/// dictionaries' values).
static int walked_into(const struct ArrowSchema* s, const struct ArrowArray* a, int depth) {
  const char* f = s->format;
  return depth + 1 < REQUIRED_MAX_DEPTH && s->dictionary == NULL && f[0] == '+' &&
         (strcmp(f, "+s") == 0 || strcmp(f, "+l") == 0 || strcmp(f, "+L") == 0 ||
          strcmp(f, "+m") == 0 || strncmp(f, "+w:", 3) == 0 || is_union(f)) &&
         a->n_children == s->n_children;
}

/// The child of union format `f` ("+ud:0,5") whose type code is `id`: its
/// place in the list of codes, -1 if none has it (the writer reports it).
static int64_t union_child(const char* f, int id) {
  const char* p = f + 4;
  for (int64_t k = 0; *p != '\0'; k++) {
    char* end;
    long code = strtol(p, &end, 10);
    if (end == p) return -1;
    if (code == id) return k;
    p = *end == ',' ? end + 1 : end;
  }
  return -1;
}

/// Whether a value at or under `s` (array `a`, at `depth`) may be a null in
/// a field that must not be null: only then does the walk look into it (a
/// null under a null parent is allowed, so the walk decides). With `c`,
/// records the verdict and the subtree's node count of the first
/// REQUIRED_PLAN_NODES nodes in preorder, so that the walk asks once per
/// batch, not once per value. *nodes: the subtree's node count.
static int plan(struct rctx* c, const struct ArrowSchema* s, const struct ArrowArray* a, int depth,
                int64_t* nodes) {
  const int64_t at = c != NULL ? c->n_nodes++ : -1;
  int need = !nullable(s) && may_hold_null(s, a);
  *nodes = 1;
  if (walked_into(s, a, depth)) {
    for (int64_t i = 0; i < s->n_children; i++) {
      int64_t sub = 1;
      if (s->children[i] == NULL || a->children[i] == NULL) {
        if (c != NULL && c->n_nodes++ < REQUIRED_PLAN_NODES) {
          c->size[c->n_nodes - 1] = 1;
          c->need[c->n_nodes - 1] = 0;
        }
      } else {
        need |= plan(c, s->children[i], a->children[i], depth + 1, &sub);
      }
      *nodes += sub;
    }
  }
  if (at >= 0 && at < REQUIRED_PLAN_NODES) {
    c->size[at] = *nodes;
    c->need[at] = (unsigned char)need;
  }
  return need;
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
                       int64_t begin, int64_t end, int depth, int64_t at);

/// Element `p` (physical) of `a`: 1 (path in c) if it, or a value under
/// it, is a null in a field that is not nullable. `at`: the node's index in
/// c's plan, -1 past it.
static int check_value(struct rctx* c, const struct ArrowSchema* s, const struct ArrowArray* a,
                       int64_t p, int depth, int64_t at) {
  int found = 0;
  if (value_null(s, a, p)) {
    found = !nullable(s);
  } else if (walked_into(s, a, depth)) {
    const char* f = s->format;
    // A union's value is the slot of one child: of the child its type id
    // names, the same slot (sparse) or the one its offset names (dense).
    // The other children's slots there are no values.
    int64_t member = -1, member_at = -1;
    if (is_union(f) && a->n_buffers >= (f[2] == 'd' ? 2 : 1) && a->buffers[0] != NULL) {
      member = union_child(f, ((const int8_t*)a->buffers[0])[p]);
      if (f[2] == 'd') member_at = a->buffers[1] != NULL ? ((const int32_t*)a->buffers[1])[p] : -1;
      else member_at = p;  // a sparse union's offset applies to its children too
    }
    int64_t child_at = at >= 0 ? at + 1 : -1;
    for (int64_t i = 0; i < s->n_children && !found; i++) {
      const struct ArrowSchema* cs = s->children[i];
      const struct ArrowArray* ca = a->children[i];
      const int64_t this_at = child_at < REQUIRED_PLAN_NODES ? child_at : -1;
      child_at = this_at >= 0 ? this_at + c->size[this_at] : -1;
      if (cs == NULL || ca == NULL) continue;
      int64_t unused;
      if (!(this_at >= 0 ? c->need[this_at] : plan(NULL, cs, ca, depth + 1, &unused))) continue;
      int64_t begin = -1, end = -1;  // of the child's elements, logical
      if (f[1] == 'u') {
        if (i != member) continue;
        begin = member_at;
        end = member_at + 1;
      } else if (strcmp(f, "+s") == 0) {
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
      found = check_range(c, cs, ca, begin, end, depth + 1, this_at);
    }
  }
  if (found && c->depth < REQUIRED_MAX_DEPTH) c->names[c->depth++] = s->name != NULL ? s->name : "";
  return found;
}

/// Elements [begin, end) (logical) of `a`.
static int check_range(struct rctx* c, const struct ArrowSchema* s, const struct ArrowArray* a,
                       int64_t begin, int64_t end, int depth, int64_t at) {
  for (int64_t i = begin; i < end; i++) {
    if (check_value(c, s, a, a->offset + i, depth, at)) return 1;
  }
  return 0;
}

int sl_batch_check_required(const struct ArrowSchema* schema, const struct ArrowArray* batch,
                            int64_t first_row, struct sluice_error* error) {
  if (schema->n_children != batch->n_children) return 0;  // the writer reports it
  for (int64_t col = 0; col < schema->n_children; col++) {
    const struct ArrowSchema* s = schema->children[col];
    const struct ArrowArray* a = batch->children[col];
    if (s == NULL || a == NULL) continue;
    // Most often no field that must not be null has an array with nulls:
    // nothing to look at.
    struct rctx c;
    c.depth = 0;
    c.n_nodes = 0;
    int64_t nodes;
    if (!plan(&c, s, a, 0, &nodes)) continue;
    for (int64_t r = 0; r < batch->length; r++) {
      // A struct's offset applies to its children.
      if (!check_value(&c, s, a, a->offset + batch->offset + r, 0, 0)) continue;
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

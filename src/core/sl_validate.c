#include "sl_validate.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sl_array.h"
#include "sl_error.h"
#include "sl_read.h"
#include "sl_type.h"
#include "sl_utf8.h"

// Deeper trees than this come from hostile input, not real data; refusing them
// keeps the recursion's stack use bounded.
#define SL_VALIDATE_MAX_DEPTH 64

struct vctx {
  enum sl_validate_level level;
  const struct sl_buffer_sizes* sizes;
  struct sluice_error* error;
  /// >= 0: the values of the batch's own columns are rows, numbered from
  /// this (the rows of the input before the batch); -1: "value i".
  int64_t first_row;
  int row_depth;  ///< the depth of those columns (1 under a struct root)
  /// Dictionaries of flat values were validated in full by their producer:
  /// give them only the O(1) checks (sl_array_validate_shared_dicts).
  int flat_dicts_checked;
  char path[512];
  size_t path_len;
};

static int fail(struct vctx* v, const char* fmt, ...) SL_PRINTF(2, 3);
static int fail(struct vctx* v, const char* fmt, ...) {
  char reason[384];
  va_list args;
  va_start(args, fmt);
  vsnprintf(reason, sizeof reason, fmt, args);
  va_end(args);
  if (v->path_len == 0) return sl_error_set(v->error, EILSEQ, "array: %s", reason);
  return sl_error_set(v->error, EILSEQ, "column '%s': %s", v->path, reason);
}

// Appends a path component; returns the previous length to restore later.
static size_t path_push(struct vctx* v, const char* name, int64_t index) {
  size_t old = v->path_len;
  size_t cap = sizeof v->path;
  int n;
  if (name != NULL && name[0] != '\0') {
    n = snprintf(v->path + old, cap - old, "%s%s", old > 0 ? "." : "", name);
  } else {
    n = snprintf(v->path + old, cap - old, "[%lld]", (long long)index);
  }
  if (n > 0) v->path_len = old + (size_t)n < cap ? old + (size_t)n : cap - 1;
  return old;
}

static void path_pop(struct vctx* v, size_t old) {
  v->path_len = old;
  v->path[old] = '\0';
}

// Checks that buffer `i` holds at least `need` bytes when its size is known.
static int check_size(struct vctx* v, const struct ArrowArray* a, int64_t i, int64_t need,
                      const char* what) {
  if (v->sizes == NULL || v->sizes->size_of == NULL || need <= 0) return 0;
  int64_t have = v->sizes->size_of(v->sizes->ctx, a, i);
  if (have >= 0 && have < need) {
    return fail(v, "%s buffer holds %lld bytes, needs %lld", what, (long long)have,
                (long long)need);
  }
  return 0;
}

static int validate_node(struct vctx* v, const struct ArrowSchema* s, const struct ArrowArray* a,
                         int depth);

static int validate_child(struct vctx* v, const struct ArrowSchema* s,
                          const struct ArrowArray* a, int64_t i, int depth) {
  const struct ArrowSchema* cs = s->children[i];
  size_t old = path_push(v, cs != NULL ? cs->name : NULL, i);
  int rc = validate_node(v, cs, a->children[i], depth + 1);
  path_pop(v, old);
  return rc;
}

// Offsets of binary / list types: buffer 1. Returns the [first, last] range.
static int validate_offsets(struct vctx* v, const struct ArrowArray* a, int large,
                            int64_t limit, const char* limit_what, int64_t* first_out,
                            int64_t* last_out) {
  int64_t end = a->offset + a->length;
  *first_out = *last_out = 0;
  const void* off = a->buffers[1];
  if (a->length == 0 && off == NULL) return 0;
  if (off == NULL) return fail(v, "offsets buffer is NULL with length %lld", (long long)a->length);
  SL_RETURN_NOT_OK(check_size(v, a, 1, (end + 1) * (large ? 8 : 4), "offsets"));
  int64_t first = sl_offset_at(off, a->offset, large);
  int64_t last = sl_offset_at(off, end, large);
  if (first < 0) return fail(v, "negative offset %lld at index 0", (long long)first);
  if (last < first) return fail(v, "last offset %lld is below the first %lld", (long long)last,
                                (long long)first);
  if (limit >= 0 && last > limit) {
    return fail(v, "last offset %lld exceeds the %s (%lld)", (long long)last, limit_what,
                (long long)limit);
  }
  if (v->level >= SL_VALIDATE_FULL) {
    // One loop per offset width keeps the width test out of the hot loop.
    int64_t bad = -1;
    if (large) {
      int64_t prev = first;
      for (int64_t i = a->offset + 1; i <= end; ++i) {
        int64_t o = sl_offset_at(off, i, 1);
        if (o < prev) { bad = i; break; }
        prev = o;
      }
    } else {
      int32_t prev = (int32_t)first;
      for (int64_t i = a->offset + 1; i <= end; ++i) {
        int32_t o = (int32_t)sl_offset_at(off, i, 0);
        if (o < prev) { bad = i; break; }
        prev = o;
      }
    }
    if (bad >= 0) {
      return fail(v, "offsets not increasing at index %lld", (long long)(bad - a->offset));
    }
  }
  *first_out = first;
  *last_out = last;
  return 0;
}

/// The first non-null value of string array `a` that is not valid UTF-8
/// (its index from 0, and in *byte the offset in it of the first bad
/// byte), or -1. A null's bytes may be anything (the Arrow format allows
/// it), so they are not looked at.
static int64_t first_bad_value(const struct ArrowArray* a, int large, int64_t* byte) {
  const uint8_t* data = a->buffers[2];
  const uint8_t* valid = a->null_count != 0 ? a->buffers[0] : NULL;
  for (int64_t i = 0; i < a->length; ++i) {
    int64_t k = a->offset + i;
    if (valid != NULL && !sl_bit_get(valid, k)) continue;
    int64_t from = sl_offset_at(a->buffers[1], k, large);
    int64_t bad = sl_utf8_invalid_at(data + from, sl_offset_at(a->buffers[1], k + 1, large) - from);
    if (bad >= 0) {
      *byte = bad;
      return i;
    }
  }
  return -1;
}

static int validate_binary(struct vctx* v, const struct sl_type* t, const struct ArrowArray* a,
                           int rows) {
  int large = t->id == SL_TYPE_LARGE_BINARY || t->id == SL_TYPE_LARGE_STRING;
  int64_t data_size = -1;
  if (v->sizes != NULL && v->sizes->size_of != NULL) {
    data_size = v->sizes->size_of(v->sizes->ctx, a, 2);
  }
  int64_t first, last;
  SL_RETURN_NOT_OK(validate_offsets(v, a, large, data_size, "data size", &first, &last));
  if (last > first && a->buffers[2] == NULL) {
    return fail(v, "data buffer is NULL but offsets span %lld bytes", (long long)(last - first));
  }
  int is_string = t->id == SL_TYPE_STRING || t->id == SL_TYPE_LARGE_STRING;
  if (is_string && v->level >= SL_VALIDATE_FULL_UTF8 && last > first) {
    // All the bytes in one pass (ASCII 32 at a time), then no value may
    // start inside a character; only when that fails, value by value, to
    // name the bad one (or find that only nulls hold bad bytes).
    const uint8_t* data = a->buffers[2];
    int high = 0;
    int valid = sl_utf8_check(data + first, last - first, &high) < 0;
    for (int64_t i = 1; valid && high && i < a->length; ++i) {  // (ASCII splits anywhere)
      int64_t o = sl_offset_at(a->buffers[1], a->offset + i, large);
      if (o < last && (data[o] & 0xC0) == 0x80) valid = 0;
    }
    int64_t byte = 0;
    int64_t bad = valid ? -1 : first_bad_value(a, large, &byte);
    if (bad >= 0) {
      const uint8_t* value = data + sl_offset_at(a->buffers[1], a->offset + bad, large);
      unsigned at = value[byte];
      const char* inside = byte == 0 && (at & 0xC0) == 0x80 ? " (starts inside a character)" : "";
      if (rows) {
        return fail(v, "invalid UTF-8 in row %lld, at byte %lld of the value (0x%02x)%s",
                    (long long)(v->first_row + bad), (long long)byte, at, inside);
      }
      return fail(v, "invalid UTF-8 in value %lld, at byte %lld of it (0x%02x)%s",
                  (long long)bad, (long long)byte, at, inside);
    }
  }
  return 0;
}

static int validate_union(struct vctx* v, const struct sl_type* t, const struct ArrowArray* a) {
  int64_t end = a->offset + a->length;
  int dense = t->id == SL_TYPE_DENSE_UNION;
  if (t->n_type_codes != a->n_children) {
    return fail(v, "union declares %d type codes for %lld children", (int)t->n_type_codes,
                (long long)a->n_children);
  }
  if (a->length > 0 && a->buffers[0] == NULL) return fail(v, "union type ids buffer is NULL");
  SL_RETURN_NOT_OK(check_size(v, a, 0, end, "type ids"));
  if (dense) {
    if (a->length > 0 && a->buffers[1] == NULL) return fail(v, "union offsets buffer is NULL");
    SL_RETURN_NOT_OK(check_size(v, a, 1, end * 4, "union offsets"));
  } else {
    for (int64_t i = 0; i < a->n_children; ++i) {
      if (a->children[i]->length < end) {
        return fail(v, "sparse union child %lld has length %lld, needs %lld", (long long)i,
                    (long long)a->children[i]->length, (long long)end);
      }
    }
  }
  if (v->level < SL_VALIDATE_FULL || a->length == 0) return 0;
  int8_t child_of_code[128];
  memset(child_of_code, -1, sizeof child_of_code);
  for (int32_t i = 0; i < t->n_type_codes; ++i) child_of_code[t->type_codes[i]] = (int8_t)i;
  const int8_t* ids = a->buffers[0];
  const uint8_t* offs = a->buffers[1];
  for (int64_t i = a->offset; i < end; ++i) {
    int8_t id = ids[i];
    if (id < 0 || child_of_code[id] < 0) {
      return fail(v, "union type id %d not declared at index %lld", (int)id,
                  (long long)(i - a->offset));
    }
    if (dense) {
      int32_t o;
      memcpy(&o, offs + i * 4, 4);
      const struct ArrowArray* child = a->children[child_of_code[id]];
      if (o < 0 || o >= child->length) {
        return fail(v, "dense union offset %d out of range (child length %lld) at index %lld",
                    (int)o, (long long)child->length, (long long)(i - a->offset));
      }
    }
  }
  return 0;
}

// Finds the first valid slot whose index is outside [0, dict_length); one loop
// per index type so that the width and signedness are not decided per value.
#define SL_FIND_BAD_INDEX(ctype)                                          \
  for (int64_t i = a->offset; i < end; ++i) {                             \
    ctype x;                                                              \
    memcpy(&x, data + i * (int64_t)sizeof x, sizeof x);                   \
    /* negative signed indexes wrap to huge unsigned ones */             \
    if ((uint64_t)(int64_t)x >= (uint64_t)dict_length &&                  \
        (valid == NULL || sl_bit_get(valid, i))) {                        \
      bad = i;                                                            \
      bad_value = (long long)x;                                            \
      break;                                                              \
    }                                                                     \
  }

static int validate_dictionary_indexes(struct vctx* v, const struct sl_type* t,
                                       const struct ArrowArray* a, int64_t dict_length) {
  const uint8_t* data = a->buffers[1];
  const uint8_t* valid = a->buffers[0];
  int64_t end = a->offset + a->length, bad = -1;
  long long bad_value = 0;
  switch (t->id) {
    case SL_TYPE_INT8: SL_FIND_BAD_INDEX(int8_t) break;
    case SL_TYPE_UINT8: SL_FIND_BAD_INDEX(uint8_t) break;
    case SL_TYPE_INT16: SL_FIND_BAD_INDEX(int16_t) break;
    case SL_TYPE_UINT16: SL_FIND_BAD_INDEX(uint16_t) break;
    case SL_TYPE_INT32: SL_FIND_BAD_INDEX(int32_t) break;
    case SL_TYPE_UINT32: SL_FIND_BAD_INDEX(uint32_t) break;
    case SL_TYPE_INT64: SL_FIND_BAD_INDEX(int64_t) break;
    default: SL_FIND_BAD_INDEX(uint64_t) break;
  }
  if (bad >= 0) {
    return fail(v, "dictionary index %lld out of range (dictionary length %lld) at index %lld",
                bad_value, (long long)dict_length, (long long)(bad - a->offset));
  }
  return 0;
}
#undef SL_FIND_BAD_INDEX

static int expected_children(const struct sl_type* t, const struct ArrowSchema* s) {
  switch (t->id) {
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST: case SL_TYPE_MAP:
      return 1;
    case SL_TYPE_STRUCT: case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION:
      return (int)(s->n_children > INT32_MAX ? -1 : s->n_children);
    default:
      return 0;
  }
}

static int validate_node(struct vctx* v, const struct ArrowSchema* s, const struct ArrowArray* a,
                         int depth) {
  if (depth > SL_VALIDATE_MAX_DEPTH) return fail(v, "nested deeper than %d levels", depth);
  if (s == NULL || s->release == NULL) return fail(v, "schema is NULL or released");
  if (a == NULL || a->release == NULL) return fail(v, "array is NULL or released");
  struct sl_type t;
  int rc = sl_type_parse(s->format, &t, v->error);
  if (rc != 0) {
    if (v->path_len > 0) sl_error_prefix(v->error, "column '%s'", v->path);
    return rc;
  }
  if (a->length < 0 || a->offset < 0 || a->offset > INT64_MAX - a->length ||
      a->length > (INT64_C(1) << 48) || a->offset > (INT64_C(1) << 48)) {
    return fail(v, "bad length %lld or offset %lld", (long long)a->length, (long long)a->offset);
  }
  if (a->null_count < -1 || a->null_count > a->length) {
    return fail(v, "null_count %lld with length %lld", (long long)a->null_count,
                (long long)a->length);
  }
  int64_t end = a->offset + a->length;
  // A dictionary-encoded column: the format names the index type.
  int is_dict = s->dictionary != NULL;
  if (is_dict != (a->dictionary != NULL)) {
    return fail(v, is_dict ? "dictionary missing" : "unexpected dictionary");
  }
  char tn[64];  // the type's name, made only for a message
  if (is_dict && !(t.id >= SL_TYPE_INT8 && t.id <= SL_TYPE_UINT64)) {
    return fail(v, "dictionary index type %s is not an integer",
                sl_type_name(&t, tn, sizeof tn));
  }
  int nb = sl_type_n_buffers(t.id);
  if (!sl_type_buffers_ok(t.id, a->n_buffers)) {
    return fail(v, "has %lld buffers, type %s needs %d", (long long)a->n_buffers,
                sl_type_name(&t, tn, sizeof tn), nb);
  }
  if (nb > 0 && a->buffers == NULL) return fail(v, "buffers array is NULL");
  int nc = expected_children(&t, s);
  if (s->n_children != nc || a->n_children != nc) {
    return fail(v, "has %lld children (schema %lld), type %s needs %d",
                (long long)a->n_children, (long long)s->n_children,
                sl_type_name(&t, tn, sizeof tn), nc);
  }
  if (nc > 0 && (a->children == NULL || s->children == NULL)) {
    return fail(v, "children array is NULL");
  }
  for (int64_t i = 0; i < nc; ++i) {
    if (a->children[i] == NULL || s->children[i] == NULL) {
      return fail(v, "child %lld is NULL", (long long)i);
    }
  }
  int has_validity = t.id != SL_TYPE_NA && t.id != SL_TYPE_DENSE_UNION &&
                     t.id != SL_TYPE_SPARSE_UNION;
  if (has_validity) {
    if (a->buffers[0] == NULL && a->null_count > 0) {
      return fail(v, "validity buffer is NULL with null_count %lld", (long long)a->null_count);
    }
    if (a->buffers[0] != NULL) SL_RETURN_NOT_OK(check_size(v, a, 0, (end + 7) / 8, "validity"));
    // A count the bitmap denies: readers that trust it (a copy's "no nulls"
    // shortcut, to_pandas' dtype) and those that count differ.
    if (v->level >= SL_VALIDATE_FULL && a->buffers[0] != NULL && a->null_count >= 0) {
      int64_t nulls = sl_bitmap_count_unset(a->buffers[0], a->offset, a->length);
      if (nulls != a->null_count) {
        return fail(v, "null_count %lld, but the validity bitmap has %lld nulls",
                    (long long)a->null_count, (long long)nulls);
      }
    }
  }
  int64_t bits = sl_type_bit_width(&t);
  switch (t.id) {
    case SL_TYPE_NA:
      break;
    case SL_TYPE_BINARY: case SL_TYPE_LARGE_BINARY: case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING:
      SL_RETURN_NOT_OK(validate_binary(v, &t, a, v->first_row >= 0 && depth == v->row_depth));
      break;
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_MAP: {
      int64_t first, last;
      int64_t child_len = a->children[0]->length;
      SL_RETURN_NOT_OK(validate_offsets(v, a, t.id == SL_TYPE_LARGE_LIST, child_len,
                                        "child length", &first, &last));
      if (t.id == SL_TYPE_MAP) {
        const struct ArrowSchema* es = s->children[0];
        if (es->format == NULL || strcmp(es->format, "+s") != 0 || es->n_children != 2) {
          return fail(v, "map entries must be a struct of 2 children (key, value)");
        }
        if (v->level >= SL_VALIDATE_FULL && a->children[0]->n_children == 2 &&
            a->children[0]->children[0] != NULL && a->children[0]->children[0]->null_count > 0) {
          return fail(v, "map keys contain nulls");
        }
      }
      break;
    }
    case SL_TYPE_FIXED_SIZE_LIST: {
      if (t.list_size < 0) return fail(v, "negative list size");
      // Division instead of end * list_size, which may overflow.
      if (t.list_size > 0 && a->children[0]->length / t.list_size < end) {
        return fail(v, "child length %lld is shorter than %lld lists of %d",
                    (long long)a->children[0]->length, (long long)end, (int)t.list_size);
      }
      break;
    }
    case SL_TYPE_STRUCT:
      for (int64_t i = 0; i < nc; ++i) {
        if (a->children[i]->length < end) {
          size_t old = path_push(v, s->children[i]->name, i);
          rc = fail(v, "length %lld is shorter than its parent's %lld",
                    (long long)a->children[i]->length, (long long)end);
          path_pop(v, old);
          return rc;
        }
      }
      break;
    case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION:
      SL_RETURN_NOT_OK(validate_union(v, &t, a));
      break;
    default:
      if (bits > 0) {
        if (a->length > 0 && a->buffers[1] == NULL) {
          return fail(v, "data buffer is NULL with length %lld", (long long)a->length);
        }
        int64_t width = bits / 8;
        // A huge fixed_size_binary width times the length must not overflow.
        if (bits != 1 && width > 0 && end > INT64_MAX / width) {
          return fail(v, "length %lld times value width %lld overflows", (long long)end,
                      (long long)width);
        }
        int64_t need = bits == 1 ? (end + 7) / 8 : end * width;
        SL_RETURN_NOT_OK(check_size(v, a, 1, need, "data"));
      }
      break;
  }
  for (int64_t i = 0; i < nc; ++i) SL_RETURN_NOT_OK(validate_child(v, s, a, i, depth));
  if (is_dict) {
    size_t old = path_push(v, "<dictionary>", 0);
    enum sl_validate_level level = v->level;
    if (v->flat_dicts_checked && a->dictionary->n_children == 0) v->level = SL_VALIDATE_MINIMAL;
    rc = validate_node(v, s->dictionary, a->dictionary, depth + 1);
    v->level = level;
    path_pop(v, old);
    if (rc != 0) return rc;
    if (v->level >= SL_VALIDATE_FULL && a->length > 0) {
      SL_RETURN_NOT_OK(validate_dictionary_indexes(v, &t, a, a->dictionary->length));
    }
  }
  return 0;
}

static int validate_root(const struct ArrowSchema* schema, const struct ArrowArray* array,
                         enum sl_validate_level level, const struct sl_buffer_sizes* sizes,
                         int64_t first_row, int flat_dicts_checked, struct sluice_error* error) {
  struct vctx v;
  v.level = level;
  v.flat_dicts_checked = flat_dicts_checked;
  v.sizes = sizes;
  v.error = error;
  v.first_row = first_row;
  v.row_depth = 0;
  v.path[0] = '\0';
  v.path_len = 0;
  // A record batch is an unnamed struct (a struct column has its name).
  if (schema != NULL && schema->format != NULL && strcmp(schema->format, "+s") == 0 &&
      (schema->name == NULL || schema->name[0] == '\0')) {
    v.row_depth = 1;  // a record batch: its columns' values are its rows
  } else if (schema != NULL && schema->name != NULL && schema->name[0] != '\0') {
    // A named root that is not the record batch struct is a column of its own.
    path_push(&v, schema->name, 0);
  }
  return validate_node(&v, schema, array, 0);
}

int sl_array_validate_rows(const struct ArrowSchema* schema, const struct ArrowArray* array,
                           enum sl_validate_level level, const struct sl_buffer_sizes* sizes,
                           int64_t first_row, struct sluice_error* error) {
  return validate_root(schema, array, level, sizes, first_row, 0, error);
}

int sl_array_validate(const struct ArrowSchema* schema, const struct ArrowArray* array,
                      enum sl_validate_level level, const struct sl_buffer_sizes* sizes,
                      struct sluice_error* error) {
  return validate_root(schema, array, level, sizes, -1, 0, error);
}

int sl_array_validate_shared_dicts(const struct ArrowSchema* schema,
                                   const struct ArrowArray* array, enum sl_validate_level level,
                                   const struct sl_buffer_sizes* sizes,
                                   struct sluice_error* error) {
  return validate_root(schema, array, level, sizes, -1, 1, error);
}

#include "sl_builder.h"

#include <errno.h>

#include "sl_alloc.h"
#include "sl_array.h"
#include "sl_decimal.h"
#include "sl_error.h"
#include "sl_ref.h"

#define SL_BUILDER_MAX_DEPTH 64

static int has_validity(enum sl_type_id id) {
  return id != SL_TYPE_NA && id != SL_TYPE_DENSE_UNION && id != SL_TYPE_SPARSE_UNION;
}

static int is_offset_type(enum sl_type_id id) {
  switch (id) {
    case SL_TYPE_BINARY: case SL_TYPE_LARGE_BINARY: case SL_TYPE_STRING:
    case SL_TYPE_LARGE_STRING: case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_MAP:
      return 1;
    default:
      return 0;
  }
}

static int is_binary(enum sl_type_id id) {
  return id == SL_TYPE_BINARY || id == SL_TYPE_LARGE_BINARY || id == SL_TYPE_STRING ||
         id == SL_TYPE_LARGE_STRING;
}

// Bitmaps keep `size` = bytes already zero-filled, so appends only set bits.
static int ensure_bitmap(struct sl_buffer* buf, int64_t bits) {
  int64_t bytes = (bits + 7) / 8;
  if (bytes <= buf->size) return 0;
  int rc = sl_buffer_grow_to(buf, bytes);
  if (rc != 0) return rc;
  memset(buf->data + buf->size, 0, (size_t)(bytes - buf->size));
  buf->size = bytes;
  return 0;
}

static void set_bits(uint8_t* bits, int64_t from, int64_t n) {
  int64_t i = from, end = from + n;
  while (i < end && (i & 7) != 0) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); ++i; }
  if (end - i >= 8) {
    memset(bits + (i >> 3), 0xFF, (size_t)((end - i) >> 3));
    i += (end - i) & ~(int64_t)7;
  }
  while (i < end) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); ++i; }
}

/* ---- init / release ----------------------------------------------------------- */

static int init_node(struct sl_builder* b, const struct ArrowSchema* s,
                     const struct sluice_allocator* alloc, int depth, struct sluice_error* error);

static void buffers_init(struct sl_builder* b) {
  sl_buffer_init(&b->validity, b->alloc);
  sl_buffer_init(&b->values, b->alloc);
  sl_buffer_init(&b->extra, b->alloc);
}

static int expected_children(const struct sl_type* t, int64_t schema_children) {
  switch (t->id) {
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST: case SL_TYPE_MAP:
      return schema_children == 1;
    case SL_TYPE_STRUCT:
      return 1;
    case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION:
      return schema_children == t->n_type_codes;
    default:
      return schema_children == 0;
  }
}

static int init_node(struct sl_builder* b, const struct ArrowSchema* s,
                     const struct sluice_allocator* alloc, int depth, struct sluice_error* error) {
  memset(b, 0, sizeof *b);
  b->alloc = alloc;
  buffers_init(b);
  memset(b->child_of_code, -1, sizeof b->child_of_code);
  if (depth > SL_BUILDER_MAX_DEPTH) {
    return sl_error_set(error, EINVAL, "schema nested deeper than %d levels", SL_BUILDER_MAX_DEPTH);
  }
  if (s == NULL || s->format == NULL) return sl_error_set(error, EINVAL, "builder for a NULL schema");
  SL_RETURN_NOT_OK(sl_type_parse(s->format, &b->type, error));
  // The timezone points into the schema's format, which the builder outlives.
  b->type.timezone = "";
  enum sl_type_id id = b->type.id;
  if (!expected_children(&b->type, s->n_children) || (s->n_children > 0 && s->children == NULL)) {
    return sl_error_set(error, EINVAL, "type '%s' with %lld children", s->format,
                        (long long)s->n_children);
  }
  int64_t bits = sl_type_bit_width(&b->type);
  b->value_width = bits >= 8 ? (int32_t)(bits / 8) : 0;
  if (is_offset_type(id)) {
    b->offset_width = (id == SL_TYPE_LARGE_BINARY || id == SL_TYPE_LARGE_STRING ||
                       id == SL_TYPE_LARGE_LIST) ? 8 : 4;
  }
  if (id == SL_TYPE_MAP) {
    const struct ArrowSchema* e = s->children[0];
    if (e == NULL || e->format == NULL || strcmp(e->format, "+s") != 0 || e->n_children != 2) {
      return sl_error_set(error, EINVAL, "map entries must be a struct of 2 children");
    }
  }
  if (id == SL_TYPE_DENSE_UNION || id == SL_TYPE_SPARSE_UNION) {
    for (int32_t i = 0; i < b->type.n_type_codes; ++i) {
      b->child_of_code[b->type.type_codes[i]] = (int8_t)i;
    }
  }
  if (s->n_children > 0) {
    b->children = sl_calloc(alloc, (size_t)s->n_children, sizeof *b->children);
    if (b->children == NULL) return sl_error_set(error, ENOMEM, "out of memory creating builders");
    b->n_children = s->n_children;
    for (int64_t i = 0; i < s->n_children; ++i) {
      SL_RETURN_NOT_OK(init_node(&b->children[i], s->children[i], alloc, depth + 1, error));
    }
  }
  if (s->dictionary != NULL) {
    if (!(id >= SL_TYPE_INT8 && id <= SL_TYPE_UINT64)) {
      return sl_error_set(error, EINVAL, "dictionary index type '%s' is not an integer", s->format);
    }
    b->dictionary = sl_calloc(alloc, 1, sizeof *b->dictionary);
    if (b->dictionary == NULL) return sl_error_set(error, ENOMEM, "out of memory creating builders");
    SL_RETURN_NOT_OK(init_node(b->dictionary, s->dictionary, alloc, depth + 1, error));
  }
  return 0;
}

int sl_builder_init_from_schema(struct sl_builder* b, const struct ArrowSchema* schema,
                                const struct sluice_allocator* alloc, struct sluice_error* error) {
  int rc = init_node(b, schema, alloc, 0, error);
  if (rc != 0) sl_builder_release(b);
  return rc;
}

void sl_builder_release(struct sl_builder* b) {
  if (b == NULL) return;
  sl_buffer_reset(&b->validity);
  sl_buffer_reset(&b->values);
  sl_buffer_reset(&b->extra);
  if (b->children != NULL) {
    for (int64_t i = 0; i < b->n_children; ++i) sl_builder_release(&b->children[i]);
    sl_free(b->alloc, b->children, (size_t)b->n_children * sizeof *b->children);
  }
  if (b->dictionary != NULL) {
    sl_builder_release(b->dictionary);
    sl_free(b->alloc, b->dictionary, sizeof *b->dictionary);
  }
  sl_ref_release(b->frozen_ref);
  b->frozen_ref = NULL;
  b->frozen_dictionary = NULL;
  b->children = NULL;
  b->dictionary = NULL;
  b->n_children = 0;
  b->length = b->null_count = b->capacity = 0;
}

void sl_builder_reset(struct sl_builder* b) {
  sl_buffer_reset(&b->validity);
  sl_buffer_reset(&b->values);
  sl_buffer_reset(&b->extra);
  b->length = b->null_count = b->capacity = 0;
  for (int64_t i = 0; i < b->n_children; ++i) sl_builder_reset(&b->children[i]);
  if (b->dictionary != NULL) sl_builder_reset(b->dictionary);
}

/* ---- reserve ------------------------------------------------------------------ */

// The caller is about to write `n` fixed-width values: map their pages at
// once (the geometric spare capacity stays untouched until used).
static void prefault_values(struct sl_builder* b, int64_t n) {
  if (b->value_width > 0 && b->values.data != NULL)
    sl_prefault(b->values.data + b->length * b->value_width, (size_t)(n * b->value_width));
}

int sl_builder_reserve(struct sl_builder* b, int64_t n) {
  if (n <= 0) return 0;
  if (b->length > (INT64_C(1) << 48) - n) return EOVERFLOW;
  int64_t target = b->length + n;
  if (target <= b->capacity) {
    prefault_values(b, n);
    return 0;
  }
  // Geometric growth so that one-at-a-time checked appends stay amortised O(1).
  if (target < b->capacity * 2) target = b->capacity * 2;
  if (target < 64) target = 64;
  if (b->capacity == 0 && target < b->hint_values) target = b->hint_values;
  if (b->validity.data != NULL) SL_RETURN_NOT_OK(ensure_bitmap(&b->validity, target));
  enum sl_type_id id = b->type.id;
  if (id == SL_TYPE_BOOL) {
    SL_RETURN_NOT_OK(ensure_bitmap(&b->values, target));
  } else if (b->offset_width > 0) {
    if (b->values.size == 0) {
      SL_RETURN_NOT_OK(sl_buffer_grow_to(&b->values, (target + 1) * b->offset_width));
      memset(b->values.data, 0, (size_t)b->offset_width);
      b->values.size = b->offset_width;  // the leading 0 offset
    } else {
      SL_RETURN_NOT_OK(sl_buffer_grow_to(&b->values, (target + 1) * b->offset_width));
    }
  } else if (b->value_width > 0 || id == SL_TYPE_FIXED_SIZE_BINARY) {
    // Width 0 (w:0) still gets a block, so appends never offset a NULL pointer.
    int64_t bytes = target * b->value_width;
    SL_RETURN_NOT_OK(sl_buffer_grow_to(&b->values, bytes > 0 ? bytes : 1));
  } else if (id == SL_TYPE_DENSE_UNION || id == SL_TYPE_SPARSE_UNION) {
    SL_RETURN_NOT_OK(sl_buffer_grow_to(&b->values, target));
    if (id == SL_TYPE_DENSE_UNION) SL_RETURN_NOT_OK(sl_buffer_grow_to(&b->extra, target * 4));
  }
  b->capacity = target;
  prefault_values(b, n);
  return 0;
}

int sl_builder_borrow_values(struct sl_builder* b, uint8_t* data, int64_t rows,
                             struct sl_ref* owner) {
  if (b->value_width <= 0 || b->offset_width != 0 || b->n_children != 0 || b->length != 0 ||
      b->type.id == SL_TYPE_BOOL || b->dictionary != NULL || rows <= 0 || data == NULL) {
    return EINVAL;
  }
  if (b->validity.data != NULL) SL_RETURN_NOT_OK(ensure_bitmap(&b->validity, rows));
  sl_buffer_borrow(&b->values, data, rows * b->value_width, owner);
  b->capacity = rows;
  return 0;
}

int sl_builder_reserve_bytes(struct sl_builder* b, int64_t n) {
  if (n < 0) return EINVAL;
  if (b->offset_width == 4 && n > INT32_MAX - b->extra.size) return EOVERFLOW;
  if (b->extra.capacity == 0 && n < b->hint_bytes) {
    int64_t hint = b->offset_width == 4 && b->hint_bytes > INT32_MAX ? INT32_MAX : b->hint_bytes;
    if (n < hint) {
      // The hint is capacity, not bytes about to be written: map only `n`.
      SL_RETURN_NOT_OK(sl_buffer_grow_to(&b->extra, b->extra.size + hint));
    }
  }
  return sl_buffer_reserve(&b->extra, n);
}

int sl_builder_reserve_tree(struct sl_builder* b, int64_t n) {
  SL_RETURN_NOT_OK(sl_builder_reserve(b, n));
  int64_t child_n;
  switch (b->type.id) {
    case SL_TYPE_STRUCT: case SL_TYPE_SPARSE_UNION: case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST:
    case SL_TYPE_MAP:
      child_n = n;
      break;
    case SL_TYPE_FIXED_SIZE_LIST:
      if (b->type.list_size > 0 && n > (INT64_C(1) << 48) / b->type.list_size) return EOVERFLOW;
      child_n = n * b->type.list_size;
      break;
    default:
      return 0;
  }
  for (int64_t i = 0; i < b->n_children; ++i) {
    SL_RETURN_NOT_OK(sl_builder_reserve_tree(&b->children[i], child_n));
  }
  return 0;
}

/// Bytes a buffer holds: its capacity, or what it wrote of a borrowed one
/// (that room is the caller's for the whole split, not this batch's).
static int64_t held_bytes(const struct sl_buffer* buf) {
  return buf->borrowed != NULL ? buf->size : buf->capacity;
}

int64_t sl_builder_byte_size(const struct sl_builder* b) {
  int64_t total = held_bytes(&b->validity) + held_bytes(&b->values) + held_bytes(&b->extra);
  for (int64_t i = 0; i < b->n_children; ++i) total += sl_builder_byte_size(&b->children[i]);
  if (b->dictionary != NULL) total += sl_builder_byte_size(b->dictionary);
  return total;
}

/* ---- nulls and nested values ------------------------------------------------ */

// The first null turns the implicit all-valid state into a real bitmap.
static int materialize_validity(struct sl_builder* b) {
  SL_RETURN_NOT_OK(ensure_bitmap(&b->validity, b->capacity));
  set_bits(b->validity.data, 0, b->length);
  return 0;
}

static inline int64_t load_offset(const struct sl_builder* b, int64_t i) {
  if (b->offset_width == 4) {
    int32_t v;
    memcpy(&v, b->values.data + i * 4, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, b->values.data + i * 8, 8);
  return v;
}

static inline void store_offset(struct sl_builder* b, int64_t i, int64_t v) {
  if (b->offset_width == 4) {
    int32_t v32 = (int32_t)v;
    memcpy(b->values.data + i * 4, &v32, 4);
  } else {
    memcpy(b->values.data + i * 8, &v, 8);
  }
}

int sl_builder_append_nulls(struct sl_builder* b, int64_t n) {
  if (n <= 0) return 0;
  enum sl_type_id id = b->type.id;
  if (id == SL_TYPE_NA) {
    if (b->length > INT64_MAX - n) return EOVERFLOW;
    b->length += n;
    b->null_count += n;
    return 0;
  }
  SL_RETURN_NOT_OK(sl_builder_reserve(b, n));
  if (has_validity(id) && b->validity.data == NULL) SL_RETURN_NOT_OK(materialize_validity(b));
  switch (id) {
    case SL_TYPE_BOOL:
      break;  // bits are zero already
    case SL_TYPE_FIXED_SIZE_LIST:
      if (b->type.list_size > 0 && n > (INT64_C(1) << 48) / b->type.list_size) return EOVERFLOW;
      SL_RETURN_NOT_OK(sl_builder_append_nulls(&b->children[0], n * b->type.list_size));
      break;
    case SL_TYPE_STRUCT:
      for (int64_t i = 0; i < b->n_children; ++i) {
        SL_RETURN_NOT_OK(sl_builder_append_nulls(&b->children[i], n));
      }
      break;
    case SL_TYPE_SPARSE_UNION: case SL_TYPE_DENSE_UNION: {
      // A union has no validity of its own: a null is a null of its first child.
      if (b->n_children == 0) return EINVAL;
      int64_t child_start = b->children[0].length;
      if (id == SL_TYPE_SPARSE_UNION) {
        for (int64_t i = 0; i < b->n_children; ++i) {
          SL_RETURN_NOT_OK(sl_builder_append_nulls(&b->children[i], n));
        }
      } else {
        SL_RETURN_NOT_OK(sl_builder_append_nulls(&b->children[0], n));
        if (child_start > INT32_MAX - n) return EOVERFLOW;
        for (int64_t k = 0; k < n; ++k) {
          int32_t o = (int32_t)(child_start + k);
          memcpy(b->extra.data + b->extra.size, &o, 4);
          b->extra.size += 4;
        }
      }
      memset(b->values.data + b->values.size, b->type.type_codes[0], (size_t)n);
      b->values.size += n;
      b->length += n;
      return 0;
    }
    default:
      if (b->offset_width > 0) {
        int64_t last = load_offset(b, b->length);
        for (int64_t k = 1; k <= n; ++k) store_offset(b, b->length + k, last);
      } else if (b->value_width > 0) {
        memset(b->values.data + b->values.size, 0, (size_t)(n * b->value_width));
        b->values.size += n * b->value_width;
      }
      break;
  }
  b->length += n;
  b->null_count += n;
  return 0;
}

int sl_builder_append_null(struct sl_builder* b) { return sl_builder_append_nulls(b, 1); }

int sl_builder_list_finish(struct sl_builder* b) {
  enum sl_type_id id = b->type.id;
  const struct sl_builder* child = &b->children[0];
  if (id == SL_TYPE_FIXED_SIZE_LIST) {
    int64_t size = b->type.list_size;
    if (size > 0 && b->length + 1 > (INT64_C(1) << 48) / size) return EOVERFLOW;
    if (child->length != (b->length + 1) * size) return EINVAL;
    SL_RETURN_NOT_OK(sl_builder_reserve(b, 1));
  } else if (id == SL_TYPE_LIST || id == SL_TYPE_MAP || id == SL_TYPE_LARGE_LIST) {
    if (b->offset_width == 4 && child->length > INT32_MAX) return EOVERFLOW;
    SL_RETURN_NOT_OK(sl_builder_reserve(b, 1));
    store_offset(b, b->length + 1, child->length);
  } else {
    return EINVAL;
  }
  sl_builder_mark_valid_(b);
  return 0;
}

int sl_builder_struct_finish_rows(struct sl_builder* b, int64_t n) {
  if (b->type.id != SL_TYPE_STRUCT || n < 0) return EINVAL;
  SL_RETURN_NOT_OK(sl_builder_reserve(b, n));
  if (b->validity.data != NULL) set_bits(b->validity.data, b->length, n);
  b->length += n;
  return 0;
}

int sl_builder_struct_finish(struct sl_builder* b) { return sl_builder_struct_finish_rows(b, 1); }

int sl_builder_union_finish(struct sl_builder* b, int8_t type_code) {
  enum sl_type_id id = b->type.id;
  int child = sl_builder_union_child(b, type_code);
  if ((id != SL_TYPE_DENSE_UNION && id != SL_TYPE_SPARSE_UNION) || child < 0) return EINVAL;
  SL_RETURN_NOT_OK(sl_builder_reserve(b, 1));
  struct sl_builder* c = &b->children[child];
  if (id == SL_TYPE_DENSE_UNION) {
    if (c->length < 1 || c->length - 1 > INT32_MAX) return EINVAL;
    int32_t o = (int32_t)(c->length - 1);
    memcpy(b->extra.data + b->extra.size, &o, 4);
    b->extra.size += 4;
  } else {
    if (c->length != b->length + 1) return EINVAL;
    for (int64_t i = 0; i < b->n_children; ++i) {
      if (i != child) SL_RETURN_NOT_OK(sl_builder_append_nulls(&b->children[i], 1));
    }
  }
  b->values.data[b->values.size++] = (uint8_t)type_code;
  b->length++;
  return 0;
}

/* ---- decimals and bulk values --------------------------------------------------- */

int sl_builder_append_decimal_be(struct sl_builder* b, const uint8_t* be, int64_t n) {
  int64_t w = b->value_width;
  if ((b->type.id != SL_TYPE_DECIMAL128 && b->type.id != SL_TYPE_DECIMAL256) || n < 0) {
    return EINVAL;
  }
  uint8_t le[32];
  SL_RETURN_NOT_OK(sl_decimal_from_be(be, n, (int)w, le));
  return sl_builder_append_fixed(b, le);
}

int sl_builder_append_decimal_int64(struct sl_builder* b, int64_t unscaled) {
  if (b->type.id != SL_TYPE_DECIMAL128 && b->type.id != SL_TYPE_DECIMAL256) return EINVAL;
  uint8_t le[32];
  memset(le, unscaled < 0 ? 0xFF : 0x00, sizeof le);
  uint64_t u = (uint64_t)unscaled;
  for (int i = 0; i < 8; ++i) le[i] = (uint8_t)(u >> (8 * i));
  return sl_builder_append_fixed(b, le);
}

int sl_builder_append_values(struct sl_builder* b, const void* values, int64_t n) {
  if (b->value_width == 0 || b->offset_width != 0 || n < 0) return EINVAL;
  if (n == 0) return 0;
  SL_RETURN_NOT_OK(sl_builder_reserve(b, n));
  memcpy(b->values.data + b->values.size, values, (size_t)(n * b->value_width));
  b->values.size += n * b->value_width;
  if (b->validity.data != NULL) set_bits(b->validity.data, b->length, n);
  b->length += n;
  return 0;
}

void sl_builder_commit_values(struct sl_builder* b, int64_t n) {
  assert(b->value_width > 0 && b->offset_width == 0 && n >= 0 && b->length + n <= b->capacity);
  b->values.size += n * b->value_width;
  if (b->validity.data != NULL) set_bits(b->validity.data, b->length, n);
  b->length += n;
}

int sl_builder_append_values_valid(struct sl_builder* b, const void* values,
                                   const uint8_t* valid, int64_t n) {
  if (valid == NULL) return sl_builder_append_values(b, values, n);
  if (b->value_width == 0 || b->offset_width != 0 || n < 0) return EINVAL;
  if (n == 0) return 0;
  SL_RETURN_NOT_OK(sl_builder_reserve(b, n));
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; ++i) nulls += valid[i] == 0;
  if (nulls > 0 && b->validity.data == NULL) SL_RETURN_NOT_OK(materialize_validity(b));
  memcpy(b->values.data + b->values.size, values, (size_t)(n * b->value_width));
  b->values.size += n * b->value_width;
  if (b->validity.data != NULL) {
    uint8_t* bits = b->validity.data;
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = b->length + i;
      if (valid[i]) bits[j >> 3] |= (uint8_t)(1u << (j & 7));
    }
  }
  b->length += n;
  b->null_count += nulls;
  return 0;
}

/* ---- finish --------------------------------------------------------------------- */

static int check_shape(const struct sl_builder* b, struct sluice_error* error) {
  enum sl_type_id id = b->type.id;
  int64_t want = -1;
  switch (id) {
    case SL_TYPE_STRUCT: case SL_TYPE_SPARSE_UNION: want = b->length; break;
    case SL_TYPE_FIXED_SIZE_LIST:  // list_finish bounded length * list_size
      want = b->length * b->type.list_size;
      break;
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_MAP:
      want = b->length == 0 && b->values.data == NULL ? 0 : load_offset(b, b->length);
      break;
    default: break;
  }
  if (want < 0) return 0;
  for (int64_t i = 0; i < b->n_children; ++i) {
    if (b->children[i].length != want) {
      return sl_error_set(error, EINVAL,
                          "builder child %lld has %lld values, its parent implies %lld",
                          (long long)i, (long long)b->children[i].length, (long long)want);
    }
  }
  return 0;
}

static int finish_node(struct sl_builder* b, struct ArrowArray* out, struct sluice_error* error) {
  enum sl_type_id id = b->type.id;
  SL_RETURN_NOT_OK(check_shape(b, error));
  // Offsets always hold a leading 0, even for an empty column.
  if (b->offset_width > 0 && b->values.data == NULL) {
    if (sl_buffer_grow_to(&b->values, b->offset_width) != 0) {
      return sl_error_set(error, ENOMEM, "out of memory finishing a batch");
    }
    memset(b->values.data, 0, (size_t)b->offset_width);
    b->values.size = b->offset_width;
  }
  int nb = sl_type_n_buffers(id);
  SL_RETURN_NOT_OK(sl_array_init(out, b->alloc, nb, b->n_children, error));
  b->hint_values = b->length;
  if (is_binary(id)) b->hint_bytes = b->extra.size;
  out->length = b->length;
  out->null_count = id == SL_TYPE_NA ? b->length : has_validity(id) ? b->null_count : 0;
  if (has_validity(id)) {
    if (b->null_count > 0) sl_array_take_buffer(out, 0, &b->validity);
    else sl_buffer_reset(&b->validity);
  }
  switch (id) {
    case SL_TYPE_NA: case SL_TYPE_STRUCT: case SL_TYPE_FIXED_SIZE_LIST:
      break;
    case SL_TYPE_SPARSE_UNION:
      sl_array_take_buffer(out, 0, &b->values);
      break;
    case SL_TYPE_DENSE_UNION:
      sl_array_take_buffer(out, 0, &b->values);
      sl_array_take_buffer(out, 1, &b->extra);
      break;
    default:
      sl_array_take_buffer(out, 1, &b->values);
      if (is_binary(id)) sl_array_take_buffer(out, 2, &b->extra);
      break;
  }
  b->length = b->null_count = b->capacity = 0;
  for (int64_t i = 0; i < b->n_children; ++i) {
    SL_RETURN_NOT_OK(finish_node(&b->children[i], out->children[i], error));
  }
  if (b->dictionary != NULL) {
    SL_RETURN_NOT_OK(sl_array_alloc_dictionary(out, error));
    if (b->frozen_ref != NULL) {
      SL_RETURN_NOT_OK(sl_array_view(b->frozen_dictionary, b->frozen_ref, b->alloc,
                                     out->dictionary, error));
    } else {
      SL_RETURN_NOT_OK(finish_node(b->dictionary, out->dictionary, error));
    }
  }
  return 0;
}

int sl_builder_freeze_dictionary(struct sl_builder* b, struct sluice_error* error) {
  if (b->dictionary == NULL) {
    return sl_error_set(error, EINVAL, "freezing the dictionary of a column without one");
  }
  struct ArrowArray dict;
  memset(&dict, 0, sizeof dict);
  int rc = finish_node(b->dictionary, &dict, error);
  if (rc != 0) {
    if (dict.release != NULL) dict.release(&dict);
    sl_builder_reset(b->dictionary);
    return rc;
  }
  const struct ArrowArray* shared;
  struct sl_ref* ref = sl_array_share(&dict, b->alloc, &shared);
  if (ref == NULL) {
    dict.release(&dict);
    return sl_error_set(error, ENOMEM, "out of memory sharing a dictionary");
  }
  sl_ref_release(b->frozen_ref);
  b->frozen_ref = ref;
  b->frozen_dictionary = shared;
  return 0;
}

int sl_builder_finish(struct sl_builder* b, struct ArrowArray* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  int rc = finish_node(b, out, error);
  if (rc != 0) {
    if (out->release != NULL) out->release(out);
    sl_builder_reset(b);
  }
  return rc;
}

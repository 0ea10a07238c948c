#include "sl_array_cast.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sl_alloc.h"
#include "sl_array.h"
#include "sl_builder.h"
#include "sl_error.h"
#include "sl_read.h"
#include "sl_type.h"

/// Bytes of an integer format's values (0: not an integer format).
static int int_width(char f) {
  switch (f) {
    case 'c': case 'C': return 1;
    case 's': case 'S': return 2;
    case 'i': case 'I': return 4;
    case 'l': case 'L': return 8;
    default: return 0;
  }
}

static int is_signed(char f) { return f >= 'a' && f <= 'z'; }
static int is_string(char f) { return f == 'u' || f == 'U'; }
static int is_binary(char f) { return f == 'z' || f == 'Z'; }
static int is_float(char f) { return f == 'f' || f == 'g'; }

/// A timestamp's ("ts?:zone") or a duration's ("tD?") unit: 0 for seconds up
/// to 3 for nanoseconds; -1 for other formats.
static int time_unit(const char* f) {
  if (f[0] != 't' || f[1] == '\0' || f[2] == '\0') return -1;
  const int stamp = f[1] == 's' && f[3] == ':', duration = f[1] == 'D' && f[3] == '\0';
  const char* at = (stamp || duration) ? strchr("smun", f[2]) : NULL;
  return at != NULL ? (int)(at - "smun") : -1;
}

const char* sl_cast_join(const char* a, const char* b) {
  if (strcmp(a, b) == 0) return a;
  // Timestamps of one zone, or durations, in two units (pandas 2 wrote ns,
  // pandas 3 writes us): the finer unit holds both exactly, as pyarrow and
  // DuckDB read them; a value past its range is an error when cast.
  const int ua = time_unit(a), ub = time_unit(b);
  if (ua >= 0 && ub >= 0 && a[1] == b[1] && strcmp(a + 3, b + 3) == 0) return ua >= ub ? a : b;
  if (a[0] == '\0' || a[1] != '\0' || b[0] == '\0' || b[1] != '\0') return NULL;
  const char x = a[0], y = b[0];
  if ((is_string(x) && is_string(y)) || (is_binary(x) && is_binary(y))) return a;
  const int wx = int_width(x), wy = int_width(y);
  if (wx > 0 && wy > 0) {
    if (is_signed(x) == is_signed(y)) return wx >= wy ? a : b;
    const int w_signed = is_signed(x) ? wx : wy, w_unsigned = is_signed(x) ? wy : wx;
    if (w_signed > w_unsigned) return is_signed(x) ? a : b;
    return w_unsigned == 1 ? "s" : w_unsigned == 2 ? "i" : w_unsigned == 4 ? "l" : NULL;
  }
  // A double holds every float and every integer of up to 32 bits exactly.
  const int x_fits = is_float(x) || (wx > 0 && wx <= 4), y_fits = is_float(y) || (wy > 0 && wy <= 4);
  if (x_fits && y_fits && (is_float(x) || is_float(y))) return "g";
  return NULL;
}

/// Value i of an integer buffer of format f, as int64 (and *u as uint64).
static int64_t int_at(char f, const void* data, int64_t i, uint64_t* u) {
  int64_t v;
  switch (f) {
    case 'c': v = ((const int8_t*)data)[i]; break;
    case 'C': v = ((const uint8_t*)data)[i]; break;
    case 's': v = ((const int16_t*)data)[i]; break;
    case 'S': v = ((const uint16_t*)data)[i]; break;
    case 'i': v = ((const int32_t*)data)[i]; break;
    case 'I': v = ((const uint32_t*)data)[i]; break;
    case 'L': *u = ((const uint64_t*)data)[i]; return (int64_t)*u;
    default: v = ((const int64_t*)data)[i]; break;
  }
  *u = (uint64_t)v;
  return v;
}

/// The values (or offsets) of n entries of `from` written as `to` into out.
static int convert(char from, const void* data, int64_t n, char to, void* out) {
  if (is_string(from) || is_binary(from)) {  // n + 1 offsets
    if (from == 'u' || from == 'z') {
      for (int64_t i = 0; i <= n; ++i) ((int64_t*)out)[i] = ((const int32_t*)data)[i];
    } else {
      for (int64_t i = 0; i <= n; ++i) {
        int64_t v = ((const int64_t*)data)[i];
        if (v < 0 || v > INT32_MAX) return EOVERFLOW;
        ((int32_t*)out)[i] = (int32_t)v;
      }
    }
    return 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint64_t u = 0;
    if (to == 'g') {
      ((double*)out)[i] = from == 'f'   ? ((const float*)data)[i]
                          : from == 'g' ? ((const double*)data)[i]
                                        : (double)int_at(from, data, i, &u);
      continue;
    }
    int64_t v = int_at(from, data, i, &u);
    switch (to) {
      case 's': ((int16_t*)out)[i] = (int16_t)v; break;
      case 'S': ((uint16_t*)out)[i] = (uint16_t)u; break;
      case 'i': ((int32_t*)out)[i] = (int32_t)v; break;
      case 'I': ((uint32_t*)out)[i] = (uint32_t)u; break;
      case 'L': ((uint64_t*)out)[i] = u; break;
      default: ((int64_t*)out)[i] = v; break;
    }
  }
  return 0;
}

/// The first n = offset + length int64 values of `a` times 1000^steps into
/// out; EOVERFLOW naming the first non-null value past int64 in unit `to`.
static int scale_times(const struct ArrowArray* a, int steps, const char* to, int64_t* out,
                       struct sluice_error* error) {
  int64_t factor = 1;
  for (int k = 0; k < steps; ++k) factor *= 1000;
  const int64_t* in = a->buffers[1];
  const uint8_t* valid = a->null_count != 0 ? a->buffers[0] : NULL;
  for (int64_t i = 0; i < a->offset + a->length; ++i) {
    if (!__builtin_mul_overflow(in[i], factor, &out[i])) continue;
    if (i < a->offset || (valid != NULL && !sl_bit_get(valid, i))) {
      out[i] = 0;  // (a null's or a sliced-off slot's bytes: any value)
      continue;
    }
    char type[64];
    sl_format_name(to, type, sizeof type);
    return sl_error_set(error, EOVERFLOW, "row %lld: %lld is past the range of %s, the finest "
                        "unit of the objects'%s: read them separately",
                        (long long)(i - a->offset), (long long)in[i], type,
                        to[2] == 'n' ? " (years 1677 to 2262)" : "");
  }
  return 0;
}

/// Bytes per value (offset) of a format sl_cast_join gives.
static size_t entry_bytes(char f) {
  if (f == 'u' || f == 'z') return 4;
  if (f == 'U' || f == 'Z' || f == 'g') return 8;
  return (size_t)int_width(f);
}

int sl_array_cast(const char* from, struct ArrowArray* in, const char* to,
                  const struct sluice_allocator* alloc, struct ArrowArray* out,
                  struct sluice_error* error) {
  out->release = NULL;
  if (strcmp(from, to) == 0) {
    sl_array_move(in, out);
    return 0;
  }
  const char* joined = sl_cast_join(to, from);
  if (joined == NULL || strcmp(joined, to) != 0) {
    in->release(in);
    return sl_error_set(error, EINVAL, "cannot cast '%s' to '%s'", from, to);
  }
  const struct ArrowArray* held = NULL;
  struct sl_ref* ref = sl_array_share(in, alloc, &held);
  if (ref == NULL) {
    in->release(in);
    return sl_error_set(error, ENOMEM, "out of memory");
  }
  const int text = is_string(from[0]) || is_binary(from[0]);
  const int64_t n = held->offset + held->length;  // entries from the buffers' start
  const size_t bytes = (size_t)(n + text) * (time_unit(to) >= 0 ? 8 : entry_bytes(to[0]));
  void* values = sl_alloc_buffer(alloc, bytes);
  int rc = values == NULL ? sl_error_set(error, ENOMEM, "out of memory") : 0;
  if (rc == 0 && held->n_buffers < (text ? 3 : 2)) {
    rc = sl_error_set(error, EINVAL, "a '%s' column with %lld buffers", from,
                      (long long)held->n_buffers);
  }
  if (rc == 0) {
    if (held->buffers[1] == NULL) {
      memset(values, 0, bytes);  // (no entries: only a zero offset, if any)
    } else if (time_unit(from) >= 0) {
      rc = scale_times(held, time_unit(to) - time_unit(from), to, values, error);
    } else if (convert(from[0], held->buffers[1], n, to[0], values) != 0) {
      rc = sl_error_set(error, EOVERFLOW, "large strings past 2 GiB in one batch cannot be "
                        "read as 32-bit offset strings");
    }
  }
  if (rc == 0) rc = sl_array_init(out, alloc, text ? 3 : 2, 0, error);
  if (rc == 0) {
    out->length = held->length;
    out->offset = held->offset;
    out->null_count = held->null_count;
    sl_array_set_buffer_view(out, 0, held->buffers[0], ref);
    sl_array_set_buffer_owned(out, 1, values, (int64_t)bytes);
    values = NULL;
    if (text) sl_array_set_buffer_view(out, 2, held->buffers[2], ref);  // the bytes stay
  }
  if (values != NULL) sl_free_buffer(alloc, values, bytes);
  sl_ref_release(ref);
  return rc;
}

int sl_types_differ(const struct ArrowSchema* from, const struct ArrowSchema* to) {
  if (strcmp(from->format, to->format) != 0 || from->n_children != to->n_children) return 1;
  for (int64_t i = 0; i < from->n_children; ++i) {
    if (sl_types_differ(from->children[i], to->children[i])) return 1;
  }
  return 0;
}

int sl_format_is_list(const char* f) { return strcmp(f, "+l") == 0 || strcmp(f, "+L") == 0; }

/// A list's n + 1 offsets of one width written in the other's.
static int convert_offsets(int from_large, const void* data, int64_t n, void* out) {
  for (int64_t i = 0; i <= n; ++i) {
    if (from_large) {
      int64_t v = ((const int64_t*)data)[i];
      if (v < 0 || v > INT32_MAX) return EOVERFLOW;
      ((int32_t*)out)[i] = (int32_t)v;
    } else {
      ((int64_t*)out)[i] = ((const int32_t*)data)[i];
    }
  }
  return 0;
}

int sl_array_nulls(const struct ArrowSchema* type, int64_t rows,
                   const struct sluice_allocator* alloc, struct ArrowArray* out,
                   struct sluice_error* error) {
  out->release = NULL;
  struct sl_builder b;
  SL_RETURN_NOT_OK(sl_builder_init_from_schema(&b, type, alloc, error));
  int rc = sl_builder_append_nulls(&b, rows);
  if (rc != 0) rc = sl_error_set(error, rc, "out of memory");
  if (rc == 0) rc = sl_builder_finish(&b, out, error);
  sl_builder_release(&b);
  return rc;
}

int sl_type_is_null(const struct ArrowSchema* s) {
  return strcmp(s->format, "n") == 0 && s->n_children == 0 && s->dictionary == NULL;
}

static int cast_type_rec(const struct ArrowSchema* from, struct ArrowArray* in,
                         const struct ArrowSchema* to, const struct sluice_allocator* alloc,
                         struct ArrowArray* out, int depth, struct sluice_error* error) {
  out->release = NULL;
  if (!sl_types_differ(from, to)) {
    sl_array_move(in, out);
    return 0;
  }
  if (sl_type_is_null(from)) {
    // Nulls of to's type over the same entries: in's offset stays (a
    // parent's offsets or window index them from the buffers' start).
    const int64_t offset = in->offset, length = in->length;
    in->release(in);
    if (offset < 0 || length < 0 || offset > INT64_MAX - length) {
      return sl_error_set(error, EINVAL, "a null column of offset %lld and length %lld",
                          (long long)offset, (long long)length);
    }
    SL_RETURN_NOT_OK(sl_array_nulls(to, offset + length, alloc, out, error));
    out->offset = offset;
    out->length = length;
    out->null_count = length;
    return 0;
  }
  if (from->n_children == 0 && to->n_children == 0) {
    return sl_array_cast(from->format, in, to->format, alloc, out, error);
  }
  const int relist = sl_format_is_list(from->format) && sl_format_is_list(to->format) &&
                     strcmp(from->format, to->format) != 0;
  if (depth > 64 || (!relist && strcmp(from->format, to->format) != 0) ||
      from->n_children != to->n_children || in->n_children != from->n_children ||
      from->dictionary != NULL || in->n_buffers < (relist ? 2 : 1)) {
    in->release(in);
    return sl_error_set(error, EINVAL, "cannot cast '%s' to '%s'", from->format, to->format);
  }
  const struct ArrowArray* held = NULL;
  struct sl_ref* ref = sl_array_share(in, alloc, &held);
  if (ref == NULL) {
    in->release(in);
    return sl_error_set(error, ENOMEM, "out of memory");
  }
  int rc = sl_array_init(out, alloc, held->n_buffers, held->n_children, error);
  if (rc == 0) {
    out->length = held->length;
    out->offset = held->offset;
    out->null_count = held->null_count;
    for (int64_t i = 0; i < held->n_buffers; ++i) {
      if (!relist || i != 1) sl_array_set_buffer_view(out, i, held->buffers[i], ref);
    }
  }
  if (rc == 0 && relist) {
    const int64_t n = held->offset + held->length;  // offsets from the buffer's start
    const size_t bytes = (size_t)(n + 1) * (to->format[1] == 'L' ? 8 : 4);
    void* offsets = sl_alloc_buffer(alloc, bytes);
    if (offsets == NULL) {
      rc = sl_error_set(error, ENOMEM, "out of memory");
    } else if (held->buffers[1] == NULL) {
      memset(offsets, 0, bytes);  // (no entries: only a zero offset)
    } else if (convert_offsets(from->format[1] == 'L', held->buffers[1], n, offsets) != 0) {
      rc = sl_error_set(error, EOVERFLOW, "large lists past 2^31 items in one batch cannot be "
                        "read as 32-bit offset lists");
    }
    if (rc == 0) {
      sl_array_set_buffer_owned(out, 1, offsets, (int64_t)bytes);
    } else if (offsets != NULL) {
      sl_free_buffer(alloc, offsets, bytes);
    }
  }
  for (int64_t i = 0; rc == 0 && i < held->n_children; ++i) {
    struct ArrowArray child;
    rc = sl_array_view(held->children[i], ref, alloc, &child, error);
    if (rc == 0) {
      rc = cast_type_rec(from->children[i], &child, to->children[i], alloc, out->children[i],
                         depth + 1, error);
    }
  }
  if (rc != 0 && out->release != NULL) out->release(out);
  sl_ref_release(ref);
  return rc;
}

int sl_array_cast_type(const struct ArrowSchema* from, struct ArrowArray* in,
                       const struct ArrowSchema* to, const struct sluice_allocator* alloc,
                       struct ArrowArray* out, struct sluice_error* error) {
  return cast_type_rec(from, in, to, alloc, out, 0, error);
}

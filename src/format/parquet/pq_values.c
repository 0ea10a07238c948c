// Value decoding: the dense values of a page in every encoding, turned into
// the leaf's Arrow representation (narrowed integers, INT96 timestamps,
// decimals), and the dictionary page.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_type.h"
#include "core/sl_value_text.h"
#include "pq_column_internal.h"
#include "pq_encoding.h"


int sl_pq_chunk_error(const struct chunk_where* w, struct sluice_error* error, int code,
                       const char* why) {
  if (w->page >= 0)
    return sl_error_set(error, code, "%s: row group %" PRId64 ", column %s: page at byte %" PRId64
                        ": %s", w->file, w->rg, w->path, w->page, why);
  return sl_error_set(error, code, "%s: row group %" PRId64 ", column %s: %s", w->file, w->rg,
                      w->path, why);
}

int sl_pq_chunk_nomem(const struct chunk_where* w, struct sluice_error* error, int64_t bytes,
                      const char* what) {
  char why[160];
  if (bytes > 0) snprintf(why, sizeof why, "out of memory (%" PRId64 " bytes for %s)", bytes, what);
  else snprintf(why, sizeof why, "out of memory");
  return sl_pq_chunk_error(w, error, ENOMEM, why);
}

/// Prefixes an inner error (decoder, codec) with the location.
int sl_pq_chunk_prefix(const struct chunk_where* w, struct sluice_error* error, int rc) {
  if (rc == 0) return 0;
  if (rc == ENOMEM) return sl_pq_chunk_nomem(w, error, 0, NULL);
  if (w->page >= 0)
    sl_error_prefix(error, "%s: row group %" PRId64 ", column %s: page at byte %" PRId64, w->file,
                    w->rg, w->path, w->page);
  else
    sl_error_prefix(error, "%s: row group %" PRId64 ", column %s", w->file, w->rg, w->path);
  return rc;
}

int sl_pq_scratch_size(struct sl_buffer* b, int64_t bytes) {
  if (bytes < 0) return ERANGE;
  if (bytes > b->capacity) sl_buffer_reset(b);  // grow without copying old contents
  b->size = 0;
  return sl_buffer_reserve(b, bytes > 0 ? bytes : 1);
}

int sl_pq_scratch_lazy(struct sl_buffer* b, int64_t bytes) {
  if (bytes < 0) return ERANGE;
  if (bytes > b->capacity) sl_buffer_reset(b);
  b->size = 0;
  return sl_buffer_grow_to(b, bytes > 0 ? bytes : 1);
}

/// Ensures capacity for `total` bytes, keeping the contents.
/* ---- value conversion ------------------------------------------------------ */

static void be_to_decimal(const uint8_t* src, int32_t len, uint8_t* dst, int32_t width) {
  // big-endian two's complement -> little-endian, sign-extended
  uint8_t fill = len > 0 && (src[0] & 0x80) ? 0xff : 0x00;
  for (int32_t i = 0; i < len; ++i) dst[i] = src[len - 1 - i];
  memset(dst + len, fill, (size_t)(width - len));
}

int sl_pq_int96_to_unit(const uint8_t v[12], int64_t unit_ns, int64_t* out) {
  uint64_t nanos;
  uint32_t day;
  memcpy(&nanos, v, 8);
  memcpy(&day, v + 8, 4);
  // Julian day 2440588 is 1970-01-01. The nanoseconds of the day are
  // unsigned, as Arrow C++ takes them (a writer's extra days carry over);
  // a unit coarser than ns truncates them, as Arrow C++ does.
  const uint64_t ns_per_day = UINT64_C(86400000000000);
  int64_t days = (int64_t)day - 2440588 + (int64_t)(nanos / ns_per_day);
  int64_t per_day = (int64_t)(ns_per_day / (uint64_t)unit_ns);
  int64_t part = (int64_t)(nanos % ns_per_day / (uint64_t)unit_ns);
  // Before 1970 the day's part is counted from the next midnight, so that
  // the product only overflows when the sum does (the first day that fits
  // ns, 1677-09-21, starts before INT64_MIN).
  if (days < 0 && part > 0) {
    days += 1;
    part -= per_day;
  }
  return __builtin_mul_overflow(days, per_day, out) || __builtin_add_overflow(*out, part, out)
             ? ERANGE
             : 0;
}

/// INT96 timestamps into int64 of the field's unit, walking forward (dst
/// may be src). Returns the index of the first that does not fit, or -1.
static int64_t convert_int96(int64_t unit_ns, const uint8_t* src, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t v;
    if (sl_pq_int96_to_unit(src + 12 * i, unit_ns, &v) != 0) return i;
    memcpy(dst + 8 * i, &v, 8);
  }
  return -1;
}

/// Converts n dense fixed-width physical values (src) into the output
/// representation at dst. src and dst may alias only when the output is not
/// wider than the input (conversions walk forward). Returns -1, or for INT96
/// the index of the first value the unit cannot hold (dst is then partly
/// written).
static int64_t convert_fixed(const struct pq_field* f, const uint8_t* src, int64_t n, uint8_t* dst) {
  switch (f->conv) {
    case PQ_CONV_COPY:
    case PQ_CONV_BOOL:
      if (src != dst) memmove(dst, src, (size_t)(n * f->out_width));
      break;
    case PQ_CONV_I32_TO_I8:
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        memcpy(&v, src + 4 * i, 4);
        dst[i] = (uint8_t)v;
      }
      break;
    case PQ_CONV_I32_TO_I16:
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        memcpy(&v, src + 4 * i, 4);
        uint16_t w = (uint16_t)v;
        memcpy(dst + 2 * i, &w, 2);
      }
      break;
    case PQ_CONV_INT96:
      return convert_int96(f->int96_unit_ns, src, n, dst);
    case PQ_CONV_DEC_I32:
      for (int64_t i = n - 1; i >= 0; --i) {  // widening: backwards is alias-safe
        int32_t v;
        memcpy(&v, src + 4 * i, 4);
        int64_t w = v;
        uint8_t tmp[32];
        memcpy(tmp, &w, 8);
        memset(tmp + 8, w < 0 ? 0xff : 0, 24);
        memcpy(dst + (int64_t)f->out_width * i, tmp, (size_t)f->out_width);
      }
      break;
    case PQ_CONV_DEC_I64:
      for (int64_t i = n - 1; i >= 0; --i) {
        int64_t w;
        memcpy(&w, src + 8 * i, 8);
        uint8_t tmp[32];
        memcpy(tmp, &w, 8);
        memset(tmp + 8, w < 0 ? 0xff : 0, 24);
        memcpy(dst + (int64_t)f->out_width * i, tmp, (size_t)f->out_width);
      }
      break;
    case PQ_CONV_DEC_BE:
      for (int64_t i = n - 1; i >= 0; --i) {
        uint8_t tmp[32];
        be_to_decimal(src + (int64_t)f->phys_width * i, f->phys_width, tmp, f->out_width);
        memcpy(dst + (int64_t)f->out_width * i, tmp, (size_t)f->out_width);
      }
      break;
    default:
      break;
  }
  return -1;
}

/// Whether the output may be written over the dense physical values in place.
static int convert_in_place_ok(const struct pq_field* f) {
  return f->conv == PQ_CONV_COPY || f->out_width <= f->phys_width;
}

int sl_pq_convert_plain_value(const struct pq_field* leaf, const uint8_t* data, int64_t size,
                           uint8_t* out, struct sluice_error* error) {
  if (leaf->conv == PQ_CONV_BOOL) {
    if (size < 1) return sl_error_set(error, EILSEQ, "empty boolean bound");
    out[0] = data[0] & 1;
    return 0;
  }
  if (leaf->conv == PQ_CONV_DEC_BE) {  // any big-endian length up to the output width
    if (size < 1 || size > leaf->out_width)
      return sl_error_set(error, EILSEQ, "decimal bound of %" PRId64 " bytes", size);
    be_to_decimal(data, (int32_t)size, out, leaf->out_width);
    return 0;
  }
  if (leaf->out_width <= 0 || leaf->phys_width <= 0 || size != leaf->phys_width)
    return sl_error_set(error, EILSEQ, "bound of %" PRId64 " bytes for a %d-byte type", size,
                        (int)leaf->phys_width);
  uint8_t tmp[64];
  memcpy(tmp, data, (size_t)size);
  if (convert_fixed(leaf, tmp, 1, out) >= 0) {
    char type[64];
    sl_format_name(leaf->format, type, sizeof type);
    return sl_error_set(error, ERANGE, "bound out of the range of %s", type);
  }
  return 0;
}

/* ---- dense values ----------------------------------------------------------- */

int sl_pq_dict_indices(struct pq_column_reader* cr, const uint8_t* data, int64_t size, int64_t nv,
                       uint32_t* idx, const struct chunk_where* w, struct sluice_error* error) {
  if (cr->ready == PQ_READY_IDX) {  // a piece's, decoded and checked already
    if (idx != (uint32_t*)(void*)cr->idx.data) memcpy(idx, cr->idx.data, (size_t)nv * 4);
    return 0;
  }
  return sl_pq_chunk_prefix(w, error, sl_pq_dict_indices_decode(data, size, nv, (uint32_t)cr->dict_n,
                                                                idx, error));
}

/// Byte-array values of a page as pointers + lengths in cr->ptrs / cr->lens.
int sl_pq_dense_byte_arrays(struct pq_column_reader* cr, enum pq_encoding enc,
                             const uint8_t* data, int64_t size, int64_t nv,
                             const struct chunk_where* w, struct sluice_error* error) {
  if (cr->ready == PQ_READY_PTRS) return 0;  // a piece's, decoded already
  if (enc == PQ_ENC_PLAIN && nv > size / 4)
    return sl_pq_chunk_error(w, error, EILSEQ, "PLAIN byte arrays past the page end");
  int rc = sl_pq_scratch_size(&cr->ptrs, nv * (int64_t)sizeof(const uint8_t*));
  if (rc == 0) rc = sl_pq_scratch_size(&cr->lens, nv * (int64_t)sizeof(int32_t));
  if (rc != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
  const uint8_t** ptrs = (const uint8_t**)(void*)cr->ptrs.data;
  int32_t* lens = (int32_t*)(void*)cr->lens.data;
  int64_t consumed;
  switch (enc) {
    case PQ_ENC_PLAIN:
      return sl_pq_chunk_prefix(w, error, sl_pq_plain_byte_array_decode(data, size, nv, ptrs, lens, &consumed, error));
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
      return sl_pq_chunk_prefix(w, error, sl_pq_delta_length_byte_array_decode(data, size, nv, ptrs, lens,
                                                                      &consumed, error));
    case PQ_ENC_DELTA_BYTE_ARRAY:
      cr->delta.size = 0;
      return sl_pq_chunk_prefix(w, error, sl_pq_delta_byte_array_decode(data, size, nv, &cr->delta, ptrs, lens, error));
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: {
      if (!cr->has_dict) return sl_pq_chunk_error(w, error, EILSEQ, "dictionary-encoded page without a dictionary page");
      if (cr->ready != PQ_READY_IDX && sl_pq_scratch_size(&cr->idx, nv * 4) != 0)
        return sl_pq_chunk_prefix(w, error, ENOMEM);
      uint32_t* idx = (uint32_t*)(void*)cr->idx.data;
      if (nv > 0) SL_RETURN_NOT_OK(sl_pq_dict_indices(cr, data, size, nv, idx, w, error));
      const uint8_t* const* dp = (const uint8_t* const*)(const void*)cr->dict_ptrs.data;
      const int32_t* dl = (const int32_t*)(const void*)cr->dict_lens.data;
      for (int64_t i = 0; i < nv; ++i) {
        ptrs[i] = dp[idx[i]];
        lens[i] = dl[idx[i]];
      }
      return 0;
    }
    default:
      return sl_pq_chunk_error(w, error, EILSEQ, "unsupported encoding for BYTE_ARRAY");
  }
}

/// Gathers dictionary values of `width` bytes by index.
static void gather(const uint8_t* dict, const uint32_t* idx, int64_t n, int32_t width, uint8_t* dst) {
  if (width == 8) {
    const uint64_t* d = (const uint64_t*)(const void*)dict;
    for (int64_t i = 0; i < n; ++i) memcpy(dst + 8 * i, &d[idx[i]], 8);
  } else if (width == 4) {
    const uint32_t* d = (const uint32_t*)(const void*)dict;
    for (int64_t i = 0; i < n; ++i) memcpy(dst + 4 * i, &d[idx[i]], 4);
  } else {
    for (int64_t i = 0; i < n; ++i) memcpy(dst + (int64_t)width * i, dict + (int64_t)width * idx[i], (size_t)width);
  }
}

void sl_pq_int96_describe(const uint8_t raw[12], int64_t unit_ns, char* buf, size_t cap) {
  uint64_t nanos;
  uint32_t day;
  memcpy(&nanos, raw, 8);
  memcpy(&day, raw + 8, 4);
  const uint64_t ns_per_day = UINT64_C(86400000000000);
  char date[48];
  sl_format_date((int64_t)day - 2440588 + (int64_t)(nanos / ns_per_day), date, sizeof date);
  uint64_t secs = nanos % ns_per_day / 1000000000u;
  // Only ns and us can fail (ms holds every INT96): the suggestion is the
  // next unit that holds the value.
  int64_t v;
  const char* coarser = sl_pq_int96_to_unit(raw, 1000, &v) == 0 ? "us" : "ms";
  snprintf(buf, cap, "the INT96 timestamp %s %02u:%02u:%02u (Julian day %" PRIu32 ") does not fit "
           "timestamp[%s]%s: read it with a coarser unit (-O int96_timestamp_unit=%s; Python: "
           "int96_timestamp_unit=\"%s\"; as pyarrow's coerce_int96_timestamp_unit)",
           date, (unsigned)(secs / 3600), (unsigned)(secs / 60 % 60), (unsigned)(secs % 60), day,
           unit_ns == 1 ? "ns" : "us",
           unit_ns == 1 ? " (1677-09-21 to 2262-04-11)" : "", coarser, coarser);
}

/// INT96 value `raw`, dense value `k` of the page, that the field's unit
/// cannot hold: kept in cr for the message, which page_values builds (it
/// names the row, from k).
static int int96_unfit(struct pq_column_reader* cr, const uint8_t* raw, int64_t k) {
  cr->int96_unfit = k;
  memcpy(cr->int96_unfit_raw, raw, 12);
  return ERANGE;
}

/// Dense values of a fixed-width (or bool) leaf in the output representation,
/// written to dst (room for nv * max(out_width, phys_width) bytes is NOT
/// assumed: physical values wider than the output go through cr->scratch).
int sl_pq_dense_fixed(struct pq_column_reader* cr, const struct pq_field* f, enum pq_encoding enc,
                       const uint8_t* data, int64_t size, int64_t nv, uint8_t* dst,
                       const struct chunk_where* w, struct sluice_error* error) {
  int32_t pw = f->phys_width, ow = f->conv == PQ_CONV_BOOL ? 1 : f->out_width;
  int direct = f->conv == PQ_CONV_COPY || f->conv == PQ_CONV_BOOL;
  if (f->element->type == PQ_BYTE_ARRAY) {  // decimal stored as BYTE_ARRAY
    if (enc == PQ_ENC_PLAIN_DICTIONARY || enc == PQ_ENC_RLE_DICTIONARY) goto dict;
    SL_RETURN_NOT_OK(sl_pq_dense_byte_arrays(cr, enc, data, size, nv, w, error));
    const uint8_t** ptrs = (const uint8_t**)(void*)cr->ptrs.data;
    const int32_t* lens = (const int32_t*)(void*)cr->lens.data;
    for (int64_t i = 0; i < nv; ++i) {
      if (lens[i] < 1 || lens[i] > ow) return sl_pq_chunk_error(w, error, EILSEQ, "decimal value wider than its precision");
      be_to_decimal(ptrs[i], lens[i], dst + (int64_t)ow * i, ow);
    }
    return 0;
  }
  switch (enc) {
    case PQ_ENC_PLAIN: {
      if (f->conv == PQ_CONV_BOOL) {
        int64_t consumed;
        return sl_pq_chunk_prefix(w, error, sl_pq_plain_bool_decode(data, size, nv, dst, &consumed, error));
      }
      if (nv > size / pw) return sl_pq_chunk_error(w, error, EILSEQ, "PLAIN values past the page end");
      int64_t bad = -1;
      if (direct) {
        if (dst != data) memcpy(dst, data, (size_t)(nv * pw));
      } else if (convert_in_place_ok(f)) {
        bad = convert_fixed(f, data, nv, dst);
      } else {
        if (sl_pq_scratch_size(&cr->scratch, nv * pw) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
        memcpy(cr->scratch.data, data, (size_t)(nv * pw));
        bad = convert_fixed(f, cr->scratch.data, nv, dst);
      }
      return bad >= 0 ? int96_unfit(cr, data + 12 * bad, bad) : 0;
    }
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
    dict: {
      if (!cr->has_dict) return sl_pq_chunk_error(w, error, EILSEQ, "dictionary-encoded page without a dictionary page");
      if (nv == 0) return 0;
      if (cr->ready != PQ_READY_IDX && sl_pq_scratch_size(&cr->idx, nv * 4) != 0)
        return sl_pq_chunk_prefix(w, error, ENOMEM);
      uint32_t* idx = (uint32_t*)(void*)cr->idx.data;
      SL_RETURN_NOT_OK(sl_pq_dict_indices(cr, data, size, nv, idx, w, error));
      if (f->conv == PQ_CONV_INT96) {
        // The dictionary is kept as it is stored: a value the unit cannot
        // hold is an error only where a row uses it.
        if (sl_pq_scratch_size(&cr->scratch, nv * pw) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
        gather(cr->dict_out.data, idx, nv, pw, cr->scratch.data);
        int64_t bad = convert_fixed(f, cr->scratch.data, nv, dst);
        return bad >= 0 ? int96_unfit(cr, cr->dict_out.data + 12 * (int64_t)idx[bad], bad) : 0;
      }
      gather(cr->dict_out.data, idx, nv, ow, dst);
      return 0;
    }
    case PQ_ENC_RLE: {
      if (f->conv != PQ_CONV_BOOL) return sl_pq_chunk_error(w, error, EILSEQ, "RLE encoding for a non-boolean column");
      if (size < 4) return sl_pq_chunk_error(w, error, EILSEQ, "truncated RLE boolean length");
      uint32_t len;
      memcpy(&len, data, 4);
      if ((int64_t)len > size - 4) return sl_pq_chunk_error(w, error, EILSEQ, "RLE boolean length past the page end");
      if (sl_pq_scratch_size(&cr->idx, nv * 4) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
      uint32_t* tmp = (uint32_t*)(void*)cr->idx.data;
      struct pq_rle_decoder d;
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_rle_init(&d, data + 4, len, 1, error)));
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_rle_get_u32(&d, tmp, nv, error)));
      for (int64_t i = 0; i < nv; ++i) dst[i] = (uint8_t)(tmp[i] & 1);
      return 0;
    }
    case PQ_ENC_DELTA_BINARY_PACKED: {
      if (f->element->type != PQ_INT32 && f->element->type != PQ_INT64)
        return sl_pq_chunk_error(w, error, EILSEQ, "DELTA_BINARY_PACKED for a non-integer column");
      int64_t consumed;
      if (f->element->type == PQ_INT32) {
        // Decoded in 64 bits and truncated: some writers (DuckDB) compute
        // INT32 deltas in 64 bits and use miniblock widths of 33.
        if (sl_pq_scratch_size(&cr->scratch, nv * 8) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
        int64_t* wide = (int64_t*)(void*)cr->scratch.data;
        SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_delta_binary_decode_i64(data, size, nv, wide, &consumed, error)));
        int32_t* narrow = (int32_t*)(void*)cr->scratch.data;
        for (int64_t i = 0; i < nv; ++i) narrow[i] = (int32_t)(uint32_t)(uint64_t)wide[i];
        if (direct) memcpy(dst, narrow, (size_t)(nv * 4));
        else convert_fixed(f, cr->scratch.data, nv, dst);
        return 0;
      }
      uint8_t* out = dst;
      if (!direct) {
        if (sl_pq_scratch_size(&cr->scratch, nv * pw) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
        out = cr->scratch.data;
      }
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_delta_binary_decode_i64(data, size, nv, (int64_t*)(void*)out,
                                                                         &consumed, error)));
      if (!direct) convert_fixed(f, out, nv, dst);
      return 0;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT: {
      if (f->conv == PQ_CONV_BOOL || f->element->type == PQ_INT96)
        return sl_pq_chunk_error(w, error, EILSEQ, "BYTE_STREAM_SPLIT for an unsupported type");
      uint8_t* out = dst;
      if (!direct) {
        if (sl_pq_scratch_size(&cr->scratch, nv * pw) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
        out = cr->scratch.data;
      }
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_byte_stream_split_decode(data, size, nv, pw, out, error)));
      if (!direct) convert_fixed(f, out, nv, dst);
      return 0;
    }
    case PQ_ENC_DELTA_BYTE_ARRAY: {
      if (f->element->type != PQ_FIXED_LEN_BYTE_ARRAY)
        return sl_pq_chunk_error(w, error, EILSEQ, "DELTA_BYTE_ARRAY for a fixed-width column");
      SL_RETURN_NOT_OK(sl_pq_dense_byte_arrays(cr, enc, data, size, nv, w, error));
      const uint8_t** ptrs = (const uint8_t**)(void*)cr->ptrs.data;
      const int32_t* lens = (const int32_t*)(void*)cr->lens.data;
      if (sl_pq_scratch_size(&cr->scratch, nv * pw) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
      for (int64_t i = 0; i < nv; ++i) {
        if (lens[i] != pw) return sl_pq_chunk_error(w, error, EILSEQ, "DELTA_BYTE_ARRAY value of the wrong length");
        memcpy(cr->scratch.data + (int64_t)pw * i, ptrs[i], (size_t)pw);
      }
      convert_fixed(f, cr->scratch.data, nv, dst);
      return 0;
    }
    default:
      return sl_pq_chunk_error(w, error, EILSEQ, "unsupported value encoding");
  }
}

/* ---- dictionary page ------------------------------------------------------ */

int sl_pq_read_dictionary(struct pq_column_reader* cr, const struct pq_field* f,
                           const uint8_t* data, int64_t size, int64_t n,
                           const struct chunk_where* w, struct sluice_error* error) {
  if (n < 0) return sl_pq_chunk_error(w, error, EILSEQ, "negative dictionary size");
  cr->dict_n = n;
  cr->has_dict = 1;
  if (f->conv == PQ_CONV_NULL) return 0;
  if (f->conv == PQ_CONV_BINARY || f->element->type == PQ_BYTE_ARRAY) {
    if (n > size / 4) return sl_pq_chunk_error(w, error, EILSEQ, "dictionary values past the page end");
    if (sl_pq_scratch_size(&cr->dict_ptrs, n * (int64_t)sizeof(const uint8_t*)) != 0 ||
        sl_pq_scratch_size(&cr->dict_lens, n * 4) != 0)
      return sl_pq_chunk_prefix(w, error, ENOMEM);
    int64_t consumed;
    SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_plain_byte_array_decode(
        data, size, n, (const uint8_t**)(void*)cr->dict_ptrs.data,
        (int32_t*)(void*)cr->dict_lens.data, &consumed, error)));
    if (f->conv == PQ_CONV_BINARY) return 0;
    // decimal from BYTE_ARRAY: convert once to the output representation
    if (sl_pq_scratch_size(&cr->dict_out, n * f->out_width) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
    const uint8_t** ptrs = (const uint8_t**)(void*)cr->dict_ptrs.data;
    const int32_t* lens = (const int32_t*)(void*)cr->dict_lens.data;
    for (int64_t i = 0; i < n; ++i) {
      if (lens[i] < 1 || lens[i] > f->out_width) return sl_pq_chunk_error(w, error, EILSEQ, "decimal value wider than its precision");
      be_to_decimal(ptrs[i], lens[i], cr->dict_out.data + (int64_t)f->out_width * i, f->out_width);
    }
    return 0;
  }
  int32_t ow = f->conv == PQ_CONV_BOOL ? 1 : f->out_width;
  int32_t pw = f->phys_width;
  int64_t room = n * (ow > pw ? ow : pw);
  if ((f->conv != PQ_CONV_BOOL && n > size / pw) || (f->conv == PQ_CONV_BOOL && n > size * 8))
    return sl_pq_chunk_error(w, error, EILSEQ, "dictionary values past the page end");
  if (sl_pq_scratch_size(&cr->dict_out, room) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
  if (f->conv == PQ_CONV_INT96) {  // converted as rows use them
    if (n > 0) memcpy(cr->dict_out.data, data, (size_t)(n * pw));
    return 0;
  }
  return sl_pq_dense_fixed(cr, f, PQ_ENC_PLAIN, data, size, n, cr->dict_out.data, w, error);
}


// A data page decoded a piece at a time (pq_page_piece): its level runs
// and its values are read on from where the last piece left them, so that
// a slice of a chunk decodes what its rows hold and no more. Each piece's
// values are handed to the page decoder (pq_column.c) as a run of their
// own: a position in PLAIN bytes, PLAIN bytes laid out for the piece
// (BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED, booleans), or indices and byte
// arrays decoded already (cr->ready).
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/sl_error.h"
#include "pq_bits.h"
#include "pq_column_internal.h"
#include "pq_encoding.h"

void sl_pq_piece_init(struct pq_page_piece* pc, const struct sluice_allocator* alloc) {
  memset(pc, 0, sizeof *pc);
  sl_buffer_init(&pc->bytes, alloc);
  sl_buffer_init(&pc->plain, alloc);
  sl_buffer_init(&pc->arrays.prev, alloc);
}

void sl_pq_piece_end(struct pq_page_piece* pc) {
  pc->active = 0;
  sl_pq_byte_array_stream_reset(&pc->arrays);
}

void sl_pq_piece_release(struct pq_page_piece* pc) {
  sl_pq_piece_end(pc);
  sl_buffer_reset(&pc->bytes);
  sl_buffer_reset(&pc->plain);
}

int64_t sl_pq_piece_held(const struct pq_page_piece* pc) {
  return pc->bytes.capacity + pc->plain.capacity + pc->arrays.prev.capacity;
}

/* ---- levels ------------------------------------------------------------------- */

/// The level run of `max_level` at data (v2: the whole section; v1: its
/// length prefix or BIT_PACKED bytes first), *used its bytes (v1).
static int level_open(struct pq_level_stream* ls, int v2, enum pq_encoding enc, const uint8_t* data,
                      int64_t size, int64_t n, int max_level, int64_t* used,
                      const struct chunk_where* w, struct sluice_error* error) {
  memset(ls, 0, sizeof *ls);
  int bw = sl_pq_bit_width((uint64_t)max_level);
  ls->bit_width = bw;
  if (v2) {
    ls->kind = 1;
    *used = size;
    return sl_pq_chunk_prefix(w, error, sl_pq_rle_init(&ls->rle, data, size, bw, error));
  }
  if (enc == PQ_ENC_RLE) {
    if (size < 4) return sl_pq_chunk_error(w, error, EILSEQ, "truncated level length");
    uint32_t len;
    memcpy(&len, data, 4);
    if ((int64_t)len > size - 4) return sl_pq_chunk_error(w, error, EILSEQ, "level length past the page end");
    ls->kind = 1;
    *used = 4 + (int64_t)len;
    return sl_pq_chunk_prefix(w, error, sl_pq_rle_init(&ls->rle, data + 4, len, bw, error));
  }
  if (enc == PQ_ENC_BIT_PACKED) {
    int64_t need = (n * bw + 7) / 8;  // n < 2^31, bw <= 16
    if (need > size) return sl_pq_chunk_error(w, error, EILSEQ, "BIT_PACKED levels past the page end");
    ls->kind = 2;
    ls->data = data;
    ls->size = need;
    *used = need;
    return 0;
  }
  return sl_pq_chunk_error(w, error, EILSEQ, "unsupported level encoding");
}

int sl_pq_level_stream_get(struct pq_level_stream* ls, int16_t* out, int64_t n,
                           const struct chunk_where* w, struct sluice_error* error) {
  if (ls->kind == 1) return sl_pq_chunk_prefix(w, error, sl_pq_rle_get_i16(&ls->rle, out, n, error));
  int rc = sl_pq_bit_packed_levels_decode_at(ls->data, ls->size, ls->bit_width, ls->at, n, out, error);
  if (rc == 0) ls->at += n;
  return sl_pq_chunk_prefix(w, error, rc);
}

int sl_pq_piece_open(struct pq_page_piece* pc, const struct pq_field* f,
                     const struct pq_page_header* h, const uint8_t* rdata, int64_t rsize,
                     const uint8_t* ddata, int64_t dsize, const uint8_t* vdata, int64_t vsize,
                     const struct chunk_where* w, struct sluice_error* error) {
  int v2 = h->type == PQ_PAGE_DATA_V2;
  int64_t n = h->num_values, used = 0, at = 0;
  memset(&pc->rep, 0, sizeof pc->rep);
  memset(&pc->def, 0, sizeof pc->def);
  if (f->rep > 0) {
    SL_RETURN_NOT_OK(level_open(&pc->rep, v2, h->repetition_level_encoding, rdata, rsize, n,
                                f->rep, &used, w, error));
    at = v2 ? 0 : used;
  }
  if (f->def > 0) {  // v1: after the repetition levels
    SL_RETURN_NOT_OK(level_open(&pc->def, v2, h->definition_level_encoding, ddata + at, dsize - at,
                                n, f->def, &used, w, error));
    at = v2 ? 0 : at + used;
  }
  pc->enc = h->encoding;
  pc->vdata = v2 ? vdata : vdata + at;
  pc->vsize = v2 ? vsize : vsize - at;
  pc->n = n;
  pc->taken = pc->vtaken = pc->vpos = 0;
  pc->vopen = 0;
  pc->active = 1;
  return 0;
}

/* ---- values ------------------------------------------------------------------- */

/// Whether the piece reads the page's values on from where they stand; the
/// other encodings and types (which the page decoder refuses) are handed
/// over as they are, for its message.
static int streamed(const struct pq_field* f, enum pq_encoding enc) {
  enum pq_physical_type t = f->element->type;
  if (f->conv == PQ_CONV_NULL) return 0;
  switch (enc) {
    case PQ_ENC_PLAIN:
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: return 1;
    case PQ_ENC_RLE: return t == PQ_BOOLEAN;
    case PQ_ENC_DELTA_BINARY_PACKED: return t == PQ_INT32 || t == PQ_INT64;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return t == PQ_BYTE_ARRAY;
    case PQ_ENC_DELTA_BYTE_ARRAY: return t == PQ_BYTE_ARRAY || t == PQ_FIXED_LEN_BYTE_ARRAY;
    case PQ_ENC_BYTE_STREAM_SPLIT:
      return t != PQ_BOOLEAN && t != PQ_INT96 && t != PQ_BYTE_ARRAY && f->phys_width > 0;
    default: return 0;
  }
}

/// The value decoder, at the page's first value (a page of nulls only may
/// have no value bytes at all).
static int values_open(struct pq_column_reader* cr, struct pq_page_piece* pc,
                       const struct chunk_where* w, struct sluice_error* error) {
  const uint8_t* v = pc->vdata;
  int64_t size = pc->vsize;
  switch (pc->enc) {
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
      if (size < 1) return sl_pq_chunk_error(w, error, EILSEQ, "dictionary indices: missing bit-width byte");
      if (v[0] > 32) {
        char why[96];
        snprintf(why, sizeof why, "dictionary indices: bit width %d at byte 0 is not in 0..32", v[0]);
        return sl_pq_chunk_error(w, error, EILSEQ, why);
      }
      return sl_pq_chunk_prefix(w, error, sl_pq_rle_init(&pc->idx, v + 1, size - 1, v[0], error));
    case PQ_ENC_RLE: {
      if (size < 4) return sl_pq_chunk_error(w, error, EILSEQ, "truncated RLE boolean length");
      uint32_t len;
      memcpy(&len, v, 4);
      if ((int64_t)len > size - 4) return sl_pq_chunk_error(w, error, EILSEQ, "RLE boolean length past the page end");
      return sl_pq_chunk_prefix(w, error, sl_pq_rle_init(&pc->idx, v + 4, len, 1, error));
    }
    case PQ_ENC_DELTA_BINARY_PACKED:
      // 64-bit widths for INT32 too, as the whole page's decoder allows (DuckDB).
      return sl_pq_chunk_prefix(w, error, sl_pq_delta_stream_init(&pc->delta, v, size, 64, error));
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY:
      return sl_pq_chunk_prefix(w, error, sl_pq_byte_array_stream_init(
          &pc->arrays, pc->enc == PQ_ENC_DELTA_BYTE_ARRAY, v, size, cr->alloc, error));
    default:
      return 0;
  }
}

int sl_pq_piece_values(struct pq_column_reader* cr, const struct pq_field* f,
                       struct pq_page_piece* pc, int64_t nv, enum pq_encoding* enc,
                       const uint8_t** data, int64_t* size, const struct chunk_where* w,
                       struct sluice_error* error) {
  *enc = pc->enc;
  *data = pc->vdata;
  *size = pc->vsize;
  if (nv == 0 || !streamed(f, pc->enc)) return 0;
  if (!pc->vopen) {
    SL_RETURN_NOT_OK(values_open(cr, pc, w, error));
    pc->vopen = 1;
  }
  enum pq_physical_type t = f->element->type;
  int32_t pw = f->phys_width;
  switch (pc->enc) {
    case PQ_ENC_PLAIN:
      if (t == PQ_BOOLEAN) {
        if (nv > pc->vsize * 8 - pc->vpos)
          return sl_pq_chunk_error(w, error, EILSEQ, "PLAIN booleans past the page end");
        if (pc->vpos % 8 == 0) {
          *data = pc->vdata + pc->vpos / 8;
          *size = pc->vsize - pc->vpos / 8;
        } else {  // shifted to start at a byte
          if (sl_pq_scratch_size(&pc->plain, (nv + 7) / 8) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
          uint8_t* bits = pc->plain.data;
          memset(bits, 0, (size_t)((nv + 7) / 8));
          for (int64_t i = 0, b = pc->vpos; i < nv; ++i, ++b)
            if ((pc->vdata[b >> 3] >> (b & 7)) & 1) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
          *data = bits;
          *size = (nv + 7) / 8;
        }
        pc->vpos += nv;
      } else if (t == PQ_BYTE_ARRAY) {
        *data = pc->vdata + pc->vpos;
        *size = pc->vsize - pc->vpos;
        // The next piece starts after these values (bad lengths: the page
        // decoder says which, from the same bytes).
        int64_t pos = pc->vpos;
        for (int64_t i = 0; i < nv && pc->vsize - pos >= 4; ++i) {
          uint32_t len = pq_load_le32(pc->vdata + pos);
          if (len > INT32_MAX || (int64_t)len > pc->vsize - pos - 4) break;
          pos += 4 + (int64_t)len;
        }
        pc->vpos = pos;
      } else {
        *data = pc->vdata + pc->vpos;
        *size = pc->vsize - pc->vpos;
        if (pw > 0 && nv <= *size / pw) pc->vpos += nv * pw;
      }
      *enc = PQ_ENC_PLAIN;
      break;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: {
      if (!cr->has_dict) return sl_pq_chunk_error(w, error, EILSEQ, "dictionary-encoded page without a dictionary page");
      if (sl_pq_scratch_size(&cr->idx, nv * 4) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
      uint32_t* idx = (uint32_t*)(void*)cr->idx.data;
      if (sl_pq_rle_get_u32(&pc->idx, idx, nv, error) != 0)
        return sl_pq_chunk_prefix(w, error, sl_error_prefix(error, "dictionary indices"));
      uint32_t bad = 0, n_dict = (uint32_t)cr->dict_n;
      for (int64_t i = 0; i < nv; ++i) bad |= (uint32_t)(idx[i] >= n_dict);
      for (int64_t i = 0; bad && i < nv; ++i)
        if (idx[i] >= n_dict) {
          char why[160];
          snprintf(why, sizeof why, "dictionary index %" PRIu32 " of value %" PRId64 " is out of "
                   "range (dictionary has %" PRIu32 " entries)", idx[i], pc->vtaken + i, n_dict);
          return sl_pq_chunk_error(w, error, EILSEQ, why);
        }
      cr->ready = PQ_READY_IDX;
      break;
    }
    case PQ_ENC_RLE: {
      if (sl_pq_scratch_size(&cr->idx, nv * 4) != 0 ||
          sl_pq_scratch_size(&pc->plain, (nv + 7) / 8) != 0)
        return sl_pq_chunk_prefix(w, error, ENOMEM);
      uint32_t* v = (uint32_t*)(void*)cr->idx.data;
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_rle_get_u32(&pc->idx, v, nv, error)));
      uint8_t* bits = pc->plain.data;
      memset(bits, 0, (size_t)((nv + 7) / 8));
      for (int64_t i = 0; i < nv; ++i)
        if (v[i] & 1) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
      *enc = PQ_ENC_PLAIN;
      *data = bits;
      *size = (nv + 7) / 8;
      break;
    }
    case PQ_ENC_DELTA_BINARY_PACKED: {
      if (sl_pq_scratch_size(&pc->plain, nv * 8) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
      int64_t* wide = (int64_t*)(void*)pc->plain.data;
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_delta_stream_get_i64(&pc->delta, wide, nv, error)));
      if (t == PQ_INT32) {  // truncated, as the whole page's decoder does
        int32_t* narrow = (int32_t*)(void*)pc->plain.data;
        for (int64_t i = 0; i < nv; ++i) narrow[i] = (int32_t)(uint32_t)(uint64_t)wide[i];
      }
      *enc = PQ_ENC_PLAIN;
      *data = pc->plain.data;
      *size = nv * pw;
      break;
    }
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY: {
      if (sl_pq_scratch_size(&cr->ptrs, nv * (int64_t)sizeof(const uint8_t*)) != 0 ||
          sl_pq_scratch_size(&cr->lens, nv * 4) != 0 || sl_pq_scratch_size(&cr->idx, nv * 4) != 0)
        return sl_pq_chunk_prefix(w, error, ENOMEM);
      cr->delta.size = 0;
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_byte_array_stream_get(
          &pc->arrays, nv, (const uint8_t**)(void*)cr->ptrs.data, (int32_t*)(void*)cr->lens.data,
          (int32_t*)(void*)cr->idx.data, &cr->delta, error)));
      cr->ready = PQ_READY_PTRS;
      break;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT: {
      int64_t streams = pc->vsize / pw;  // each stream holds every value of the page
      if (nv > streams - pc->vtaken)
        return sl_pq_chunk_error(w, error, EILSEQ, "BYTE_STREAM_SPLIT values past the page end");
      if (sl_pq_scratch_size(&pc->plain, nv * pw) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
      uint8_t* out = pc->plain.data;
      const uint8_t* in = pc->vdata + pc->vtaken;
      for (int32_t b = 0; b < pw; ++b) {
        const uint8_t* s = in + (int64_t)b * streams;
        for (int64_t i = 0; i < nv; ++i) out[i * pw + b] = s[i];
      }
      *enc = PQ_ENC_PLAIN;
      *data = out;
      *size = nv * pw;
      break;
    }
    default:
      break;
  }
  pc->vtaken += nv;
  return 0;
}

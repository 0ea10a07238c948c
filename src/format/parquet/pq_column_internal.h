// Shared by pq_column.c (pages, levels, scatter) and pq_values.c (value
// decoding and conversion): error locations and the dense value decoders.
#ifndef PQ_COLUMN_INTERNAL_H
#define PQ_COLUMN_INTERNAL_H

#include <stdint.h>

#include "pq_column.h"

/// Where an error happened, for messages.
struct chunk_where {
  const char* file;
  int64_t rg;
  const char* path;
  int64_t page;  ///< byte offset of the page header in the file (-1 = none)
  int64_t page_entry;  ///< the chunk's level entries before the page (its row, when flat)
};

/// EINVAL-style error naming file, row group, column (and page).
int sl_pq_chunk_error(const struct chunk_where* w, struct sluice_error* error, int code,
                   const char* why);
/// Prefixes an inner error (decoder, codec) with the location; returns rc.
int sl_pq_chunk_prefix(const struct chunk_where* w, struct sluice_error* error, int rc);
/// ENOMEM at the location, with the size asked for and what it was for
/// (bytes <= 0: no size known).
int sl_pq_chunk_nomem(const struct chunk_where* w, struct sluice_error* error, int64_t bytes,
                      const char* what);

/// Makes room for `bytes` in a scratch buffer (contents not kept), its
/// pages mapped at once for the caller to fill.
int sl_pq_scratch_size(struct sl_buffer* b, int64_t bytes);
/// The same, without mapping the pages: for a page a decompressor is to
/// write, whose header's size holds only once the data is decoded.
int sl_pq_scratch_lazy(struct sl_buffer* b, int64_t bytes);

/// Byte-array values of a page (nv of them) as pointers + lengths in
/// cr->ptrs / cr->lens (PLAIN, DELTA_*, dictionary).
int sl_pq_dense_byte_arrays(struct pq_column_reader* cr, enum pq_encoding enc, const uint8_t* data,
                         int64_t size, int64_t nv, const struct chunk_where* w,
                         struct sluice_error* error);
/// nv dense values of a fixed-width (or bool: one byte each) leaf in the
/// output representation at dst (which may equal data: values in place).
/// ERANGE, with no message, for an INT96 value its unit cannot hold: which
/// one is in cr (int96_unfit, int96_unfit_raw), for the caller's message.
int sl_pq_dense_fixed(struct pq_column_reader* cr, const struct pq_field* f, enum pq_encoding enc,
                   const uint8_t* data, int64_t size, int64_t nv, uint8_t* dst,
                   const struct chunk_where* w, struct sluice_error* error);
/// INT96 value raw[0..12) as int64 in units of unit_ns nanoseconds (1 =
/// ns, 1000 = us, ...): 0, or ERANGE when it does not fit.
int sl_pq_int96_to_unit(const uint8_t raw[12], int64_t unit_ns, int64_t* out);
/// Why INT96 value raw does not fit the unit, with the option to use.
void sl_pq_int96_describe(const uint8_t raw[12], int64_t unit_ns, char* buf, size_t cap);
/// A dictionary page's n PLAIN values, kept in cr for the chunk.
int sl_pq_read_dictionary(struct pq_column_reader* cr, const struct pq_field* f, const uint8_t* data,
                       int64_t size, int64_t n, const struct chunk_where* w,
                       struct sluice_error* error);

/// Dictionary indices of nv values of a page into idx: decoded from `data`,
/// or taken from cr->idx when a piece decoded them (cr->ready).
int sl_pq_dict_indices(struct pq_column_reader* cr, const uint8_t* data, int64_t size, int64_t nv,
                       uint32_t* idx, const struct chunk_where* w, struct sluice_error* error);

/// cr->ready: what a page piece decoded already.
enum { PQ_READY_IDX = 1, PQ_READY_PTRS = 2 };

void sl_pq_piece_init(struct pq_page_piece* pc, const struct sluice_allocator* alloc);
/// The page is done with (its buffers are kept for the next).
void sl_pq_piece_end(struct pq_page_piece* pc);
void sl_pq_piece_release(struct pq_page_piece* pc);
int64_t sl_pq_piece_held(const struct pq_page_piece* pc);
/// Starts decoding the data page of header h in pieces: its level runs
/// (v2: the sections rdata / ddata; v1: from the page's start, which all
/// three pointers give) and where its values start (v2: vdata).
int sl_pq_piece_open(struct pq_page_piece* pc, const struct pq_field* f,
                     const struct pq_page_header* h, const uint8_t* rdata, int64_t rsize,
                     const uint8_t* ddata, int64_t dsize, const uint8_t* vdata, int64_t vsize,
                     const struct chunk_where* w, struct sluice_error* error);
/// The next n levels of a level run.
int sl_pq_level_stream_get(struct pq_level_stream* ls, int16_t* out, int64_t n,
                           const struct chunk_where* w, struct sluice_error* error);
/// The piece's next nv dense values as the page decoder takes them: *enc,
/// *data and *size a run of their own (PLAIN), or the page's as they are
/// with cr->ready set.
int sl_pq_piece_values(struct pq_column_reader* cr, const struct pq_field* f,
                       struct pq_page_piece* pc, int64_t nv, enum pq_encoding* enc,
                       const uint8_t** data, int64_t* size, const struct chunk_where* w,
                       struct sluice_error* error);

#endif

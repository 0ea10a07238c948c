// Reading one column chunk of one row group: page headers, CRCs,
// decompression, levels, every value encoding, and the scatter of the dense
// values into the leaf's Arrow buffers (one slot per level entry at which the
// leaf has a slot, see pq_schema.h).
#ifndef PQ_COLUMN_H
#define PQ_COLUMN_H

#include <stdint.h>

#include "sluice.h"
#include "core/sl_buffer.h"
#include "io/sl_source.h"
#include "pq_codec.h"
#include "pq_encoding.h"
#include "pq_meta.h"
#include "pq_schema.h"

/// What one column chunk decodes to.
struct pq_leaf_data {
  int64_t n_levels;          ///< level entries (== rows for max_rep 0)
  struct sl_buffer def;      ///< int16 per entry (when the leaf's def > 0); top-level leaves: the current page's
  struct sl_buffer rep;      ///< int16 per entry (when the leaf's rep > 0)
  int64_t n_slots;           ///< the leaf array's length
  int64_t null_count;
  struct sl_buffer validity; ///< empty when no slot is null (or not nullable)
  struct sl_buffer values;   ///< fixed: n_slots * out_width; bool: bitmap; binary: bytes
  struct sl_buffer offsets;  ///< binary: (n_slots + 1) int32, or int64 when `wide`
  /// A dictionary leaf (pq_field.dict) whose pages were all dictionary-
  /// encoded keeps the chunk's dictionary instead of the values: `keyed`,
  /// `values` and `offsets` (int32) hold the n_dict dictionary values and
  /// `keys` one uint32 index per slot (0 under nulls). The Arrow dictionary is
  /// then the file's, in its order and with its unused entries, as Arrow C++
  /// reads it, and no value is copied per row.
  int keyed;
  int64_t n_dict;
  struct sl_buffer keys;
  /// Set by the caller before sl_pq_column_read (kept by reset): binary offsets
  /// are int64, so that a chunk may hold more than 2 GiB of values (cut into
  /// int32 batches later, or output as large_string / large_binary).
  int wide;
  /// Set by the caller (kept by reset): when int32 offsets would pass this
  /// many value bytes, switch to int64 offsets (`wide`) mid-chunk; 0 = never
  /// (then more than INT32_MAX bytes is an error).
  int64_t widen_above;
  /// Set by the caller (kept by reset): sl_pq_column_read stops with
  /// EFBIG, before reserving them, when a binary chunk's values would pass
  /// this many bytes (dictionary values repeated, DELTA_BYTE_ARRAY prefixes:
  /// more than the chunk sizes said), for the caller to read the row group
  /// a batch at a time instead; 0 = never.
  int64_t give_up_above;
  /// Set by the caller (kept by reset): a flat fixed-width chunk's values
  /// go to this memory (room for the row group's values), owned by
  /// place_owner: a placed scan (sl_split_place). NULL = own memory.
  uint8_t* place;
  struct sl_ref* place_owner;
};

void sl_pq_leaf_data_init(struct pq_leaf_data* d, const struct sluice_allocator* alloc);
void sl_pq_leaf_data_reset(struct pq_leaf_data* d);
/// A keyed leaf's values written out per slot (offsets + bytes), as an
/// unkeyed leaf holds them; nothing to do for others. 0, ENOMEM, or
/// EOVERFLOW when they would pass 2 GiB (the caller says where).
int sl_pq_leaf_unkey(struct pq_leaf_data* d);

/// Per-split scratch state, reused for every chunk of the split.
struct pq_column_reader {
  const struct sluice_allocator* alloc;
  struct sl_source* source;
  const struct pq_file_meta* meta;
  struct pq_codec_ctx* codec;
  int verify_checksums;
  struct sl_buffer page;     ///< decompressed page
  struct sl_buffer dict;     ///< decompressed dictionary page (kept for the chunk)
  struct sl_buffer dict_out; ///< dictionary values in the output representation
  struct sl_buffer dict_ptrs, dict_lens;  ///< BYTE_ARRAY dictionary values
  int64_t dict_n;
  int has_dict;
  struct sl_buffer scratch;  ///< dense physical values
  struct sl_buffer ptrs, lens;
  struct sl_buffer idx;      ///< dictionary indices
  struct sl_buffer delta;    ///< DELTA_BYTE_ARRAY rebuilt values
  struct sl_buffer saved;    ///< bytes saved around in-place decompression
  /// A page decoded in pieces has decoded the piece's dictionary indices
  /// (cr->idx) or byte arrays (cr->ptrs / cr->lens) already: the value
  /// decoders take them instead of decoding the page's bytes.
  int ready;
  /// An INT96 value its unit cannot hold: dense value k of the page (for
  /// the message), and its bytes.
  int64_t int96_unfit;
  uint8_t int96_unfit_raw[12];
  /// Several chunks fetched at once (sl_pq_column_reader_span); a chunk inside
  /// it is a view of it instead of a read of its own.
  struct sl_view span;
  int64_t span_at;  ///< file offset of span.data[0]
};

/// CRC-32 (zlib's) of a page's bytes after its header, as PageHeader.crc.
uint32_t sl_pq_page_crc(const uint8_t* data, int64_t n);

/// The file bytes of a column chunk: from its dictionary or first data page,
/// total_compressed_size long and a little more (old parquet-mr left the
/// dictionary page header out of it: PARQUET-816, as Arrow C++ allows).
/// 0, or -1 when the range lies outside a file of `file_size` bytes.
int sl_pq_chunk_range(const struct pq_column_meta* m, int64_t file_size, int64_t* start,
                   int64_t* length);

/// Fetches [start, start + length) in one read for the chunks about to be
/// read from it (replacing an earlier span); released by the next call with
/// length 0 or by sl_pq_column_reader_release.
int sl_pq_column_reader_span(struct pq_column_reader* cr, int64_t start, int64_t length,
                          struct sluice_error* error);

int sl_pq_column_reader_init(struct pq_column_reader* cr, const struct sluice_allocator* alloc,
                          struct sl_source* source, const struct pq_file_meta* meta,
                          int verify_checksums, struct sluice_error* error);
void sl_pq_column_reader_release(struct pq_column_reader* cr);

/// Decodes the chunk of `leaf` in row group `rg` into `out` (reset first).
/// Errors name the file, row group, column path and page offset.
int sl_pq_column_read(struct pq_column_reader* cr, int64_t rg, const struct pq_field* leaf,
                   struct pq_leaf_data* out, struct sluice_error* error);

/// Level entries decoded from one level run: RLE (the hybrid), or the
/// deprecated BIT_PACKED, by position.
struct pq_level_stream {
  int kind;  ///< 0: none, 1: RLE, 2: BIT_PACKED
  struct pq_rle_decoder rle;
  const uint8_t* data;  ///< BIT_PACKED
  int64_t size, at;
  int bit_width;
};

/// A data page of a chunk read in slices that is decoded a slice's share
/// at a time: a slice decodes the levels of its rows only, and the values
/// those levels hold, and the next slice goes on from where the page's
/// decoders stand. A page may say billions of values in a few bytes (runs
/// of nulls, of one dictionary index); decoded whole, its memory would
/// follow the page, not the slice.
struct pq_page_piece {
  int active;
  int64_t header;           ///< the page's header, from the chunk's start (messages, drops)
  int64_t entry0;           ///< the chunk's level entries before the page
  int64_t n, taken;         ///< the page's level entries, and those handed out
  enum pq_encoding enc;     ///< of the values
  struct sl_buffer bytes;   ///< the page decompressed (v1) or its values (v2), if compressed
  struct pq_level_stream rep, def;
  const uint8_t* vdata;     ///< the values' bytes
  int64_t vsize;
  int64_t vtaken;           ///< dense values handed out
  int vopen;                ///< the value decoder below is set up (at the first value)
  int64_t vpos;             ///< PLAIN: the next value's byte (BOOLEAN: bit)
  struct pq_rle_decoder idx;            ///< dictionary indices; RLE booleans
  struct pq_delta_stream delta;         ///< DELTA_BINARY_PACKED
  struct pq_byte_array_stream arrays;   ///< DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY
  struct sl_buffer plain;   ///< a piece's values laid out as PLAIN (BYTE_STREAM_SPLIT, delta, bool)
};

/// A column chunk read a slice of rows at a time, for a row group too large
/// to decode whole: where its pages stand, its dictionary (the same for
/// every slice), and the page the last slice ended inside (the piece). A
/// repeated leaf's slice ends where a row does, at a repetition level of
/// 0: the next slice starts there.
struct pq_chunk_cursor {
  const struct pq_field* f;
  int64_t rg;
  const struct pq_column_meta* m;
  struct sl_view view;    ///< the chunk's bytes
  int64_t start, len;     ///< their place in the file
  int64_t pos;            ///< the next page header, from `start`
  int64_t dropped;        ///< file bytes before this are given back (sl_source_drop)
  int64_t levels;         ///< values read from the pages so far
  int64_t rows;           ///< the row group's
  int64_t row;            ///< rows handed out so far
  int saw_data;
  int open;
  int wide;               ///< the slices' pq_leaf_data.wide / widen_above
  int64_t widen_above;
  struct sl_buffer dict, dict_out, dict_ptrs, dict_lens;  ///< see pq_column_reader
  int64_t dict_n;
  int has_dict;
  /// dictionary=true: the chunk's dictionary as Arrow int32 offsets and
  /// values in one block (NULL until a slice is keyed), which every slice's
  /// keyed leaf data borrows and its dictionary array retains: one copy for
  /// the chunk, not one per batch.
  struct sl_ref* keyed_ref;
  uint8_t* keyed_block;
  int64_t keyed_n;          ///< dictionary values
  int64_t keyed_values_at;  ///< where the values start in the block
  int64_t keyed_bytes;      ///< ... and their bytes
  int keyed_checked;        ///< its values were found valid UTF-8 (STRING)
  struct pq_page_piece piece;
};

/// Opens a cursor on the chunk of `leaf` in row group `rg`: its
/// bytes are a view of the reader's span, or read now. `wide` / `widen_above`
/// as the caller sets them on the leaf data it reads into.
int sl_pq_cursor_open(struct pq_column_reader* cr, int64_t rg, const struct pq_field* leaf,
                      int wide, int64_t widen_above, struct pq_chunk_cursor* c,
                      struct sluice_error* error);
/// The chunk's next `rows` rows into `out` (reset first): the rest of the
/// piece's page first, then pages until they are covered; a page that holds
/// more (or, for a repeated leaf, may) becomes the piece. The cursor closes
/// itself after the chunk's last row. Errors name the file, row group, column and page.
int sl_pq_cursor_next(struct pq_column_reader* cr, struct pq_chunk_cursor* c, int64_t rows,
                      struct pq_leaf_data* out, struct sluice_error* error);
/// Decoded bytes the cursor holds between slices: its dictionary, and its
/// piece's page and decoders.
int64_t sl_pq_cursor_held(const struct pq_chunk_cursor* c);
/// Frees what the cursor holds; its keyed dictionary lives on in the arrays
/// that retain it. Also for a cursor that closed itself (its keyed
/// dictionary outlives its last slice until then).
void sl_pq_cursor_release(struct pq_chunk_cursor* c);

/// Converts `n` PLAIN-encoded physical values (a statistics bound: BYTE_ARRAY
/// without its length prefix, n = 1) into the leaf's output representation.
/// For fixed-width outputs writes out_width bytes to `out`; BOOL writes one
/// byte 0/1. Used by stored statistics so that bounds match the page decoder.
int sl_pq_convert_plain_value(const struct pq_field* leaf, const uint8_t* data, int64_t size,
                           uint8_t* out, struct sluice_error* error);

#endif

// Parquet value and level encodings (Encodings.md), decode and encode. Pure
// functions over byte ranges: no allocation unless a scratch buffer is given,
// no knowledge of pages or columns. Decoders produce *dense* values (nulls are
// not in the page data); the column reader scatters them using the
// definition levels.
//
// Every decoder validates every length, bit width and count against the bytes
// it was given: truncated or inconsistent input gives EINVAL with a message
// naming the encoding and the byte offset within `data` (the caller prefixes
// the column, page and file offset).
#ifndef PQ_ENCODING_H
#define PQ_ENCODING_H

#include <stdint.h>

#include "sluice.h"
#include "../../core/sl_buffer.h"

/* ---- RLE / bit-packed hybrid (levels, dictionary indices, booleans) ------- */

/// Streaming decoder over one RLE/bit-packed hybrid run sequence (no length
/// prefix: the caller strips the 4-byte prefix of v1 levels, and the leading
/// bit-width byte of dictionary indices).
struct pq_rle_decoder {
  const uint8_t* data;
  int64_t size;
  int64_t pos;            ///< next byte of data to read
  int bit_width;          ///< 0..32
  int64_t repeat_left;    ///< values left in the current RLE run
  uint32_t repeat_value;
  int64_t literal_left;   ///< values left in the current bit-packed run
  /// Decoded values of the current bit-packed group of 8 not yet handed out.
  uint32_t literal_buf[8];
  int literal_buf_pos, literal_buf_n;
};

/// EINVAL if bit_width is not 0..32.
int sl_pq_rle_init(struct pq_rle_decoder* d, const uint8_t* data, int64_t size, int bit_width,
                struct sluice_error* error);
/// Decodes exactly `n` values into out. EINVAL if the runs end first or a
/// bit-packed run is truncated. (Trailing padding values of the last
/// bit-packed group are allowed and ignored.)
int sl_pq_rle_get_u32(struct pq_rle_decoder* d, uint32_t* out, int64_t n, struct sluice_error* error);
/// Same for levels (bit width <= 16): values go to int16_t.
int sl_pq_rle_get_i16(struct pq_rle_decoder* d, int16_t* out, int64_t n, struct sluice_error* error);

/// Dictionary indices of a data page: first byte = bit width (0..32), then an
/// RLE/bit-packed hybrid. Decodes exactly `n` indices and checks each is <
/// dict_size (EINVAL naming the index and the value otherwise).
int sl_pq_dict_indices_decode(const uint8_t* data, int64_t size, int64_t n, uint32_t dict_size,
                           uint32_t* out, struct sluice_error* error);

/// The deprecated BIT_PACKED level encoding (MSB-first bit order, no length
/// prefix): `n` levels of `bit_width` bits. *consumed = ceil(n * bit_width / 8).
int sl_pq_bit_packed_levels_decode(const uint8_t* data, int64_t size, int bit_width, int64_t n,
                                int16_t* out, int64_t* consumed, struct sluice_error* error);
/// Levels [first, first + n) of such a run (a page decoded in pieces).
int sl_pq_bit_packed_levels_decode_at(const uint8_t* data, int64_t size, int bit_width,
                                      int64_t first, int64_t n, int16_t* out,
                                      struct sluice_error* error);

/// Appends the RLE/bit-packed hybrid encoding of `n` values (no length prefix,
/// no bit-width byte) to out. Chooses RLE runs for repeats of >= 8, bit-packed
/// groups otherwise.
int sl_pq_rle_encode_u32(const uint32_t* values, int64_t n, int bit_width, struct sl_buffer* out);
int sl_pq_rle_encode_i16(const int16_t* values, int64_t n, int bit_width, struct sl_buffer* out);
/// Appends `n` copies of `value` as one RLE run (levels known to be equal).
int sl_pq_rle_encode_run(uint32_t value, int64_t n, int bit_width, struct sl_buffer* out);

/// Bits needed for values 0..max_value (0 for 0).
int sl_pq_bit_width(uint64_t max_value);

/* ---- PLAIN ---------------------------------------------------------------- */

/// BOOLEAN PLAIN: `n` bit-packed booleans (LSB first) to one byte (0/1) per
/// value. *consumed = ceil(n / 8).
int sl_pq_plain_bool_decode(const uint8_t* data, int64_t size, int64_t n, uint8_t* out,
                         int64_t* consumed, struct sluice_error* error);

/// BYTE_ARRAY PLAIN: `n` values, each a 4-byte little-endian length + bytes.
/// Fills ptrs[i] (a pointer into data) and lens[i]. *consumed = bytes used.
int sl_pq_plain_byte_array_decode(const uint8_t* data, int64_t size, int64_t n,
                               const uint8_t** ptrs, int32_t* lens, int64_t* consumed,
                               struct sluice_error* error);

/* ---- DELTA_BINARY_PACKED / DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY ------ */

/// Decodes exactly `n` values (EINVAL if the header's total count is
/// smaller; extra values are not returned). *consumed = the byte length of
/// the whole encoded run: header plus every miniblock holding any of the
/// values the header declares (what DELTA_LENGTH_BYTE_ARRAY and
/// DELTA_BYTE_ARRAY need to find the bytes that follow).
/// Arithmetic wraps (two's complement), as the spec requires.
int sl_pq_delta_binary_decode_i32(const uint8_t* data, int64_t size, int64_t n, int32_t* out,
                               int64_t* consumed, struct sluice_error* error);
int sl_pq_delta_binary_decode_i64(const uint8_t* data, int64_t size, int64_t n, int64_t* out,
                               int64_t* consumed, struct sluice_error* error);
/// The total value count in a DELTA_BINARY_PACKED header (to size buffers).
int sl_pq_delta_binary_count(const uint8_t* data, int64_t size, int64_t* count,
                          struct sluice_error* error);

/// DELTA_LENGTH_BYTE_ARRAY: `n` lengths (delta-packed) then the concatenated
/// bytes. Fills ptrs/lens (pointers into data). *consumed = bytes used.
int sl_pq_delta_length_byte_array_decode(const uint8_t* data, int64_t size, int64_t n,
                                      const uint8_t** ptrs, int32_t* lens, int64_t* consumed,
                                      struct sluice_error* error);

/// DELTA_BYTE_ARRAY (prefix lengths, then suffixes as DELTA_LENGTH_BYTE_ARRAY):
/// values are rebuilt into `scratch` (appended; reset by the caller) and
/// ptrs/lens point into it. `scratch` must not be touched until the caller is
/// done with ptrs. Also used for FIXED_LEN_BYTE_ARRAY (lens all equal).
int sl_pq_delta_byte_array_decode(const uint8_t* data, int64_t size, int64_t n,
                               struct sl_buffer* scratch, const uint8_t** ptrs, int32_t* lens,
                               struct sluice_error* error);

/// DELTA_BINARY_PACKED read a few values at a time (a page decoded in
/// pieces): where the run stands between calls.
struct pq_delta_stream {
  const uint8_t* data;
  int64_t size;
  int64_t end;            ///< byte length of the whole run (as *consumed above)
  int64_t miniblocks, per_miniblock;
  int64_t left;           ///< values not handed out yet
  int64_t deltas_left;    ///< deltas in miniblocks not started yet
  int first;              ///< the header's first value is not handed out yet
  uint64_t last;          ///< the last value handed out
  int64_t pos;            ///< the next miniblock or block header
  uint64_t min_delta;     ///< the current block's
  const uint8_t* widths;  ///< ... and its miniblocks' bit widths
  int64_t mb;             ///< the current miniblock of the block
  int width;              ///< ... its bit width
  int64_t mb_at, mb_n, mb_used;  ///< its bytes, its values, and those handed out
};

/// Checks the whole run (header, block headers, widths up to max_width,
/// lengths) and sets s->end; values come with the calls below.
int sl_pq_delta_stream_init(struct pq_delta_stream* s, const uint8_t* data, int64_t size,
                            int max_width, struct sluice_error* error);
/// The next `n` values (EINVAL past the header's count).
int sl_pq_delta_stream_get_i64(struct pq_delta_stream* s, int64_t* out, int64_t n,
                               struct sluice_error* error);
int sl_pq_delta_stream_get_i32(struct pq_delta_stream* s, int32_t* out, int64_t n,
                               struct sluice_error* error);

/// DELTA_LENGTH_BYTE_ARRAY, or DELTA_BYTE_ARRAY (`prefixed`), read a few
/// values at a time.
struct pq_byte_array_stream {
  int prefixed;
  struct pq_delta_stream prefix, lengths;
  const uint8_t* data;
  int64_t size, pos;      ///< pos: the next value's bytes (suffix)
  int64_t index;          ///< values handed out (messages)
  struct sl_buffer prev;  ///< DELTA_BYTE_ARRAY: the last value, for the next prefix
};

int sl_pq_byte_array_stream_init(struct pq_byte_array_stream* s, int prefixed, const uint8_t* data,
                                 int64_t size, const struct sluice_allocator* alloc,
                                 struct sluice_error* error);
/// The next `n` values as ptrs / lens: into the page (DELTA_LENGTH), or
/// rebuilt into `scratch` (appended; DELTA_BYTE_ARRAY, which also needs
/// `prefix`, room for n int32).
int sl_pq_byte_array_stream_get(struct pq_byte_array_stream* s, int64_t n, const uint8_t** ptrs,
                                int32_t* lens, int32_t* prefix, struct sl_buffer* scratch,
                                struct sluice_error* error);
void sl_pq_byte_array_stream_reset(struct pq_byte_array_stream* s);

/* ---- BYTE_STREAM_SPLIT ------------------------------------------------------ */

/// `n` values of `width` bytes (4, 8 for FLOAT/DOUBLE/INT32/INT64; any width
/// for FIXED_LEN_BYTE_ARRAY) from `width` streams of n bytes each, into `out`
/// (n * width bytes, values little-endian as PLAIN would give them).
int sl_pq_byte_stream_split_decode(const uint8_t* data, int64_t size, int64_t n, int width,
                                uint8_t* out, struct sluice_error* error);

#endif

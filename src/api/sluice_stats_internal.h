// Shared by sluice_stats.c (computed statistics) and sluice_stats_stored.c
// (statistics stored in the data's metadata).
#ifndef SLUICE_STATS_INTERNAL_H
#define SLUICE_STATS_INTERNAL_H

#include "sluice.h"
#include <stddef.h>
#include <stdint.h>

#include "core/sl_value_text.h"

enum sl_stats_key_kind { SL_KEY_NONE = 0, SL_KEY_I64, SL_KEY_U64, SL_KEY_F64, SL_KEY_BYTES, SL_KEY_DECIMAL };

/// Value bytes of a string or binary min/max that statistics keep and report.
/// A longer value is reported as an inexact bound, the way Parquet writers
/// truncate theirs: min = its first bytes, max = those bytes incremented. So
/// one huge value cannot make stats copy and render gigabytes, while ordinary
/// values (far shorter) stay exact.
#define SL_STATS_BYTES_CAP ((int64_t)64 * 1024)

/// A comparable form of one value. `bytes` is borrowed from the batch (or
/// owned by a merged state, see sl_stats_key_store).
struct sl_stats_key {
  enum sl_stats_key_kind kind;
  int64_t i;
  uint64_t u;
  double d;
  const uint8_t* bytes;
  int64_t n;
  /// SL_KEY_BYTES only: `bytes` are the first n bytes of a longer value
  /// (sl_stats_key_cap), so the key stands for "some value starting so".
  int truncated;
  /// Decimals as big-endian with the sign bit flipped: memcmp orders them.
  uint8_t decimal[32];
};

/// The key of row `i` of `array` (not null); SL_KEY_NONE for types without an
/// order (and NaN). Byte keys borrow the array's memory.
void sl_stats_key_of(const struct sl_text_field* field, const struct ArrowArray* array, int64_t i,
                     struct sl_stats_key* key);
/// <0, 0, >0 as `a` orders before, with, after `b` (keys of one field).
int sl_stats_key_compare(const struct sl_stats_key* a, const struct sl_stats_key* b);
/// Makes `dst` a copy of `src` whose bytes live in *storage (grown as needed,
/// *cap bytes; the caller frees it with sl_free(alloc, *storage, *cap)). ENOMEM.
int sl_stats_key_store(struct sl_stats_key* dst, const struct sl_stats_key* src,
                       uint8_t** storage, size_t* cap, const struct sluice_allocator* alloc);

/// Cuts a byte key longer than SL_STATS_BYTES_CAP to its first bytes and sets
/// truncated. `utf8`: cut back to a character boundary, so that the prefix
/// stays valid UTF-8.
void sl_stats_key_cap(struct sl_stats_key* key, int utf8);
/// Whether `b` replaces `a` as the running min (want_max 0) or max (1); sets
/// *truncated to the flag the result has. Truncated keys are compared as the
/// sets of values they stand for: where neither key decides (one is a prefix
/// of the other), the result is the common prefix, truncated, which still
/// bounds both.
int sl_stats_key_pick(const struct sl_stats_key* a, const struct sl_stats_key* b, int want_max,
                      int* truncated);
/// The shortest bytes above every value that starts with p[0, n), into
/// out (n + 3 bytes of room): the last byte incremented with carry, or for
/// UTF-8 the last code point incremented (so the result stays valid UTF-8).
/// *out_n = -1 when there is none (every byte 0xFF, every code point
/// U+10FFFF, or p is not valid UTF-8).
void sl_stats_bytes_above(const uint8_t* p, int64_t n, int utf8, uint8_t* out, int64_t* out_n);
/// Whether the values of `field` (through dictionaries) are UTF-8 strings.
int sl_stats_field_is_utf8(const struct sl_text_field* field);
/// p[0, n), a value of `field` (a string or binary type, through
/// dictionaries), as sl_value_render spells it in SL_TEXT_PLAIN (strings as
/// they are, binaries as hex), in a new string of the default allocator
/// (*len bytes). 0 or ENOMEM.
int sl_stats_bytes_string(const struct sl_text_field* field, const uint8_t* p, int64_t n,
                          char** out, int64_t* len);

/// Whether sluice_dataset_stats computes a min/max for values of this field
/// (kept beside sl_stats_key_of, which decides the same thing per value).
int sl_stats_type_has_order(const struct sl_text_field* field);

/// Fills result[c] (zeroed, row->n_children entries; name/type untouched)
/// with what the reader's stored_stats hook says about the projected columns:
/// count (row count), null_count, min/max rendered as text, min_exact,
/// max_exact, from_metadata = 1. Without the hook, sets *available = 0 and
/// count = null_count = -1. Strings are allocated with the default allocator
/// (sluice_stats_free frees them).
int sl_stats_stored(struct sluice_dataset* dataset, const struct sl_text_field* row,
                    struct sluice_column_stats* result, int* available,
                    struct sluice_error* error);

#endif

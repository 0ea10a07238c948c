// Renders single Arrow values as text, for every type sluice reads: the CSV
// and JSON Lines writers, `sluice cat`'s table and `sluice stats` all spell
// values through here so that they agree with each other.
#ifndef SL_VALUE_TEXT_H
#define SL_VALUE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"
#include "sl_type.h"

struct sl_tz;

/* ---- A growable text buffer ---------------------------------------------- */

/// NUL-terminated once anything was appended (data may be NULL before).
struct sl_text {
  char* data;
  size_t len;
  size_t cap;
  const struct sluice_allocator* alloc;
};

void sl_text_init(struct sl_text* text, const struct sluice_allocator* alloc);
/// Empties the text but keeps its memory for reuse.
void sl_text_clear(struct sl_text* text);
/// Frees the memory.
void sl_text_reset(struct sl_text* text);
int sl_text_append(struct sl_text* text, const char* s, size_t n);
int sl_text_append_str(struct sl_text* text, const char* s);
int sl_text_append_char(struct sl_text* text, char c);
/// Room for `extra` more bytes and the NUL, for callers that spell into
/// data + len themselves (then add to len and keep the NUL). 0, ENOMEM, ERANGE.
int sl_text_reserve(struct sl_text* text, size_t extra);
/// sl_text_reserve without a call when the room is there (per-value loops).
static inline int sl_text_room(struct sl_text* text, size_t extra) {
  return text->cap - text->len > extra ? 0 : sl_text_reserve(text, extra);
}
/// The contents ("" when empty), valid until the next append.
const char* sl_text_cstr(const struct sl_text* text);

/* ---- Parsed fields --------------------------------------------------------- */

/// A schema node parsed once, so that rendering many values does not re-parse
/// format strings. Dictionary-encoded nodes have `type` = the index type and
/// `dictionary` = the value field.
struct sl_text_field {
  struct sl_type type;
  const char* name;                  ///< borrowed from the schema ("" if none)
  int64_t n_children;
  struct sl_text_field* children;
  struct sl_text_field* dictionary;
  /// Timestamps in a named zone: the zone, for local time and offset (NULL
  /// when UTC, a fixed offset, or a zone the system does not know).
  struct sl_tz* tz;
  /// An arrow.uuid column: written 8-4-4-4-12 (as DuckDB, Python and
  /// Cassandra spell a UUID), not as 32 hex digits.
  int uuid;
  const struct sluice_allocator* alloc;
};

/// Parses `schema` recursively. The schema must outlive the field (names and
/// timezones point into it). ENOTSUP for types sluice cannot render.
int sl_text_field_init(struct sl_text_field* field, const struct ArrowSchema* schema,
                       const struct sluice_allocator* alloc, struct sluice_error* error);
void sl_text_field_reset(struct sl_text_field* field);

/* ---- Values ----------------------------------------------------------------- */

enum sl_text_style {
  /// The CSV spelling: strings as they are, null as nothing, nested values as
  /// JSON text.
  SL_TEXT_PLAIN = 0,
  /// A JSON value: strings quoted and escaped, null as `null`, non-finite
  /// floats as null (JSON has no spelling for them).
  SL_TEXT_JSON = 1,
};

/// Whether row `i` (0-based, before array->offset) is null, looking through
/// dictionaries and unions.
int sl_value_is_null(const struct sl_text_field* field, const struct ArrowArray* array,
                     int64_t i);

/// Appends the text of row `i` of `array` to `out`. The array is trusted
/// (validated by whoever produced it).
int sl_value_render(const struct sl_text_field* field, const struct ArrowArray* array,
                    int64_t i, enum sl_text_style style, struct sl_text* out,
                    struct sluice_error* error);

/// Appends `s` (n bytes) as a quoted JSON string; bytes that are not valid
/// UTF-8 become \u00XX escapes of the byte.
int sl_text_append_json_string(struct sl_text* out, const char* s, size_t n);

/// Appends the decimal128/256 value at `bytes` (little-endian two's
/// complement, `width` 16 or 32 bytes) with `scale` digits after the point,
/// as sl_value_render spells it (for messages naming a value).
int sl_text_append_decimal(struct sl_text* out, const uint8_t* bytes, int width, int scale);

/// Appends data[0, n) as lowercase hex, two digits a byte (how binary values
/// are spelled).
int sl_text_append_hex(struct sl_text* out, const uint8_t* data, int64_t n);
/// A binary value of `field` as text: an arrow.uuid as 8-4-4-4-12, any
/// other as sl_text_append_hex.
int sl_text_append_binary(const struct sl_text_field* field, const uint8_t* bytes, int64_t n,
                          struct sl_text* out);

/// The one spelling of names, metadata and option values in messages and on
/// screen, every byte visible and all on one line: a backslash, and `quote`
/// when not 0 (the text stands between those), after a backslash; \n, \t,
/// \r; other control bytes and bytes that are not UTF-8 as \xNN (so a NUL
/// does not end the text and byte 0xff is not the character ÿ); C1 and
/// bidirectional controls as \uXXXX. Appends s[0, n) so spelled to `out`.
int sl_text_append_escaped(struct sl_text* out, const char* s, size_t n, char quote);
/// The same into buf (cap >= 16), NUL-terminated; when it does not fit, cut
/// after a whole character or escape and ended with "...". Returns buf.
const char* sl_escaped(const char* s, size_t n, char quote, char* buf, size_t cap);
/// Whether s[0, n) is printable ASCII only, shown as it is in messages.
int sl_plain_ascii(const char* s, size_t n);
/// A name for a one-line message (a location, a format name): `s`
/// (NUL-terminated) itself when it is all printable ASCII, as ordinary
/// paths are, else spelled by sl_escaped (quote 0) into buf.
const char* sl_escaped_line(const char* s, char* buf, size_t cap);

/// Writes data[0, n) as standard base64 with padding into out, which has
/// room for (n + 2) / 3 * 4 bytes (no NUL added); returns that length.
size_t sl_base64_encode(const uint8_t* data, size_t n, char* out);

/// The fewest significant digits that read back as the same double (of
/// those, the closest: sl_shortest.h), spelled as `%.Ng` would with N the
/// larger of 15 and their count; "nan", "inf", "-inf" for the non-finite.
/// `buf` needs 32 bytes. Returns the length stored (without the NUL).
/// (src/core/sl_value_number.c)
size_t sl_format_double(double v, char* buf, size_t cap);
/// Same for float32 (N at least 6).
size_t sl_format_float(float v, char* buf, size_t cap);
/// Makes the finite number spelled in buf[0, n) read back as a float in
/// JSON (".0" after a whole number: 1 -> 1.0, -0 -> -0.0, as polars and
/// DuckDB write them; readers type 1 as an integer). `buf` needs n + 3
/// bytes. Returns the new length.
size_t sl_json_float_spelling(char* buf, size_t n);
/// Days since 1970-01-01 as "YYYY-MM-DD" ("+10000-01-01" past year 9999),
/// NUL-terminated in `buf` (48 bytes hold any); returns its length.
size_t sl_format_date(int64_t days, char* buf, size_t cap);
/// Decimal text of an integer into `buf` (24 bytes), NUL-terminated; returns
/// its length.
size_t sl_format_int64(int64_t v, char* buf);
/// The decimal integer spelled by text[0..n) (not NUL-terminated; an option
/// value) when it lies in [lo, hi]: 0 and *out, else EINVAL.
int sl_parse_int64(const char* text, size_t n, int64_t lo, int64_t hi, int64_t* out);
/// A byte count spelled by text[0..n): digits and an optional k, m or g
/// suffix (KiB, MiB, GiB; either case), in [lo, hi]: 0 and *out, else EINVAL.
/// Size options of every format take this spelling ("block_size=64k").
int sl_parse_size(const char* text, size_t n, int64_t lo, int64_t hi, int64_t* out);
size_t sl_format_uint64(uint64_t v, char* buf);

/// A NUL-terminated copy of s[0, n) with %XX escapes decoded (Hive escapes
/// '/', '=', '%' in partition names and values that way; URLs escape user
/// names and passwords). %00 stays as written. NULL when out of memory.
char* sl_percent_decoded(const char* s, size_t n, const struct sluice_allocator* alloc);
/// The same with %00 decoded too, for values that are bytes (a filter's):
/// *decoded = the bytes before the terminating NUL, which may hold NULs.
char* sl_percent_decoded_bytes(const char* s, size_t n, const struct sluice_allocator* alloc,
                               size_t* decoded);

#endif

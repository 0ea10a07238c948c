// Row filters: conditions on a table's top-level columns, all of which must
// hold ("x>5,city=Paris|Rome,d>=2024-01-01"), or several such groups of
// which one must ("x>5,y=1;z<0": pyarrow's disjunctive normal form), parsed
// against the table's schema
// so each literal becomes a value of its column's type, then evaluated on
// decoded batches (sl_row_filter_select) and, by readers that keep
// statistics, on a split's min/max to skip it whole (sl_filter_range_may_pass).
// A null passes no condition, as in SQL.
#ifndef SL_ROW_FILTER_H
#define SL_ROW_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

enum sl_filter_op { SL_FILTER_EQ, SL_FILTER_NE, SL_FILTER_LT, SL_FILTER_LE, SL_FILTER_GT,
                    SL_FILTER_GE };

/// The comparison operator at the start of p[0..left): its length (1 or 2) with
/// *op set, or 0 when none starts there. Shared with the partition filter.
size_t sl_filter_op_parse(const char* p, size_t left, enum sl_filter_op* op);

/// How a column's values compare (the literal was converted to this).
enum sl_filter_kind {
  SL_FILTER_INT,    ///< int8..int64, date32/64, time32/64, timestamp, duration (as int64
                    ///< in the column's own unit)
  SL_FILTER_UINT,   ///< uint8..uint64
  SL_FILTER_FLOAT,  ///< float32/64 (NaN passes only !=)
  SL_FILTER_BOOL,   ///< bool (i = 0 or 1)
  SL_FILTER_BYTES,  ///< utf8, binary and their large forms: bytewise order
  SL_FILTER_DECIMAL,  ///< decimal32/64/128/256, as unscaled integers at the column's scale
  SL_FILTER_NULL,   ///< the null type: every value is null, so no row passes (as in pyarrow
                    ///< and SQL); the literals are not read, and pruning does not judge it
};

/// A value of a condition's kind. For SL_FILTER_BYTES, `s`/`len` point into
/// memory owned by the filter (for literals) or by the caller (for bounds).
union sl_filter_value {
  int64_t i;
  uint64_t u;
  double f;
  /// A decimal's unscaled value, 256-bit two's complement, least significant
  /// limb first (decimals of every width widen to it).
  uint64_t d[4];
  struct {
    const uint8_t* s;
    int64_t len;
  } bytes;
};

struct sl_filter_condition {
  int64_t column;  ///< index of the column in the schema parsed against
  char* name;      ///< the column's name
  enum sl_filter_op op;
  enum sl_filter_kind kind;
  const char* format;  ///< the values' Arrow format (a dictionary column's value type)
  /// A dictionary-encoded column's index format ("c", "i", "L", ...), else NULL.
  const char* index_format;
  int n_values;        ///< > 1 only for = and != (any of / none of)
  /// The values; for = and != sorted (NaNs last), so a row's is looked up
  /// by bisection however many there are.
  union sl_filter_value* values;
  int values_capacity;  ///< how many `values` holds room for
  int group;           ///< the OR group it belongs to (0 ..; a group's conditions are adjacent)
  /// 1: a value does not fit the column's type, which was inferred from a
  /// sample and may still widen (sl_row_filter_parse_inferred). No row
  /// passes it: a value that the type does not take equals none of its
  /// values, and the rows do not matter, since a scan either fails on the
  /// value that widens the column (the filter is then parsed again for the
  /// wider type) or ends with the filter's `pending` error. `values` are
  /// not to be read. Pruning takes it as "may pass", so that every split
  /// is read and a widening value is found.
  int pending;
};

struct sl_row_filter {
  int n_conditions;
  struct sl_filter_condition* conditions;
  int n_groups;        ///< a row passes when it passes every condition of some group
  const struct sluice_allocator* alloc;
  /// The error of the first pending condition (code 0: none is): what a
  /// scan that reaches its end gives instead of the end, as the column
  /// did not widen to a type that takes the value.
  struct sluice_error pending;
};

/// Parses `text` (conditions separated by ',': NAME OP VALUE with OP one of
/// = != < <= > >=, several values joined by '|' for = and !=, %XX escapes in
/// names and values; groups of them separated by ';', any of which may hold)
/// against `schema` (a struct: one child per column). *out is NULL for an
/// empty text. Free with sl_row_filter_free.
int sl_row_filter_parse(const char* text, const struct ArrowSchema* schema,
                        const struct sluice_allocator* alloc, struct sl_row_filter** out,
                        struct sluice_error* error);
/// sl_row_filter_parse, but a condition on column i with inferred[i] != 0
/// (a type inferred from a sample that may still widen; `inferred` NULL:
/// none is) whose value the type does not take is pending (see
/// sl_filter_condition.pending) instead of an error.
int sl_row_filter_parse_inferred(const char* text, const struct ArrowSchema* schema,
                                 const uint8_t* inferred, const struct sluice_allocator* alloc,
                                 struct sl_row_filter** out, struct sluice_error* error);
void sl_row_filter_free(struct sl_row_filter* filter);
/// Whether `text` has an empty condition (',' or ';' first, last, or two
/// in a row), which sl_row_filter_parse refuses.
int sl_filter_has_empty_condition(const char* text);

/// A condition's text as messages quote it: s[0, n) itself when short and
/// printable ASCII, else spelled by sl_escaped (the one rule for messages:
/// a newline does not break the line) into `buf` (SL_FILTER_QUOTE_SIZE
/// bytes) and cut with "..." when long, so that an `in` of thousands of
/// values does not fill the message. *shown_n = the quote's length.
#define SL_FILTER_QUOTE_SIZE 128
const char* sl_filter_quoted(const char* s, size_t n, char* buf, int* shown_n);

/// What a number that is no value of a plain integer column (2.5; -1 for
/// an unsigned one; 1e30) makes of a condition, as DuckDB and pyarrow
/// compare across numeric types: 0 and *value, which makes `op` an
/// equivalent integer condition (x > 2.5 is x > 2; x >= 2.5 is x >= 3); -1
/// when no row passes (x = 2.5); 1 when every non-null row does (x != 2.5;
/// x > -1 unsigned). By the literal's exact value (9007199254740993.0 is
/// no double); inf, -inf and nan compare as pyarrow compares them (x < inf
/// holds for every row, x = nan for none, x != nan for every one).
/// -2 when `v` is no number. Shared with the partition filter, whose
/// integer keys compare as integer columns do.
int sl_filter_integer_bound(enum sl_filter_kind kind, const char* v, size_t n,
                            enum sl_filter_op op, union sl_filter_value* value);

/// For pruning: whether some row of an object (a row group, a file) may
/// pass the filter, given may(ctx, c) == 0 for each condition c that no row
/// of it passes (by statistics, Bloom filters, dictionaries): none may when
/// every group has such a condition. Asks about a group's conditions in
/// order and stops at the first that rules the group out.
int sl_row_filter_may_pass(const struct sl_row_filter* filter,
                           int (*may)(void* ctx, const struct sl_filter_condition* c),
                           void* ctx);

/// A date column's (format `f`: "tdD" days, "tdm" milliseconds) condition
/// `op` on the date-time text v[0, n) (pyarrow compares a date with a
/// datetime as that day's midnight; with a zone, as the midnight in UTC
/// with the instant), as an equivalent condition
/// on a value of the column's unit, bounded as sl_filter_integer_bound
/// bounds numbers (x > 2023-06-01T12:00 is x > 2023-06-01). Returns as it
/// does; -2 when `v` is no such date-time.
int sl_filter_date_bound(const char* f, const char* v, size_t n, enum sl_filter_op op,
                         union sl_filter_value* value);

/// The little-endian two's complement value of `n` bytes (1 to 32) at `le`,
/// sign-extended to a SL_FILTER_DECIMAL value.
void sl_filter_decimal_widen(const uint8_t* le, int n, uint64_t d[4]);

/// Whether some value v with min <= v <= max (bounds of a split's non-null
/// values, in the condition's kind) may pass `c`. 1 when unsure.
int sl_filter_range_may_pass(const struct sl_filter_condition* c,
                             const union sl_filter_value* min,
                             const union sl_filter_value* max);

/// Evaluates the filter on `batch` (a struct array whose child `at[k]`
/// holds condition k's column, typed as parsed): sets bit r of `selection`
/// (LSB first, (batch->length + 7) / 8 bytes, written whole) when row r
/// passes every condition of some group; *selected = how many do.
int sl_row_filter_select(const struct sl_row_filter* filter, const struct ArrowArray* batch,
                         const int64_t* at, uint8_t* selection, int64_t* selected,
                         struct sluice_error* error);

/// Keeps the rows of `in` (of type `schema`, any type the scan produces, a
/// struct batch included) whose bit is set in `selection` (LSB first, bit r
/// for row r of `in`, counted from in->offset), `selected` of them: *out is
/// a new array whose buffers are its own (64-byte aligned, from `alloc`),
/// except that a dictionary's values may be shared. `in` is not changed.
int sl_array_filter(const struct ArrowSchema* schema, const struct ArrowArray* in,
                    const uint8_t* selection, int64_t selected,
                    const struct sluice_allocator* alloc, struct ArrowArray* out,
                    struct sluice_error* error);

/// Rows [row, row + n_rows) of `in` (of type `schema`) as a new array whose
/// buffers are all its own, dictionaries included: nothing of `in` is read
/// after it returns (a writer keeping rows of a batch whose producer may
/// refill its memory once it asks for the next one).
int sl_array_copy(const struct ArrowSchema* schema, const struct ArrowArray* in, int64_t row,
                  int64_t n_rows, const struct sluice_allocator* alloc, struct ArrowArray* out,
                  struct sluice_error* error);

#endif

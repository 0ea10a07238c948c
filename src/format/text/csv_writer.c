// The CSV writer: RFC 4180 quoting where needed, an optional header row, "\n"
// (or "\r\n") line endings. Options come from sl_write_args.format_options
// ("key=value,key=value"; a comma right after '=' is the value):
//
//   delimiter=comma|semicolon|tab|pipe|space|<one char>   (default ',';
//     tab for a destination named .tsv, also compressed, as the reader reads it)
//   header=true|false                                      (default true)
//   null=<text>          the spelling of nulls              (default empty)
//   quote=<char>|dquote|squote|none                        (default '"')
//   line_terminator=lf|crlf (or "\n", "\r\n", or spelled \n, \r\n) (default lf)
//   float_format=shortest|point                            (default shortest)
//   timestamp_format=space|iso                             (default space)
//
// By default values are spelled as pyarrow.csv.write_csv spells them (and as
// `sluice cat` shows them, through sl_value_text), and sluice's CSV reader,
// pyarrow.csv, DuckDB (read_csv) and polars (read_csv, try_parse_dates) all
// read them back as the same values (tests/py/test_csv_roundtrip.py):
//   - null is the null spelling (empty by default); the empty string is
//     quoted (""), and so is a string equal to a non-empty null spelling or
//     to a default one of the reader (NA, NULL, null, and NaN, a null in
//     float columns).
//     (pyarrow and DuckDB read "" as null unless told otherwise:
//     quoted_strings_can_be_null=False, allow_quoted_nulls=false.) When the
//     table has one column, an empty-spelled null is written as "" since an
//     empty line would be skipped by readers and lose the row; where the
//     column reads back as strings (string, binary, nested and interval
//     columns, a column without a value) "" reads back as the empty string,
//     so a null there is an error that asks for a null spelling (null=NA).
//   - floats: the shortest text of 15..17 digits that reads back as the same
//     double ("0.1", "1", "-0", "1e+300", "nan", "inf"). NaN is the
//     exception to "the same values": "nan" as pyarrow writes it, which
//     pyarrow and sluice read as null (a default null spelling of floats),
//     DuckDB as NaN, and polars (which parses only "NaN") as text, turning
//     the column into strings; no spelling reads back as NaN everywhere.
//     float_format=point
//     adds ".0" to whole numbers ("1.0", "-0.0") so that a column of whole
//     numbers is read back as floats rather than integers.
//   - timestamps: "2023-01-15 12:00:00.000000" with as many fraction digits as
//     the unit has (0, 3, 6, 9); UTC ones end in 'Z', those of other zones
//     are the local time and its offset ("2023-01-15 13:00:00+01:00"), as
//     pyarrow writes them, except where the offset has seconds (local mean
//     time, before ~1900: "+00:09:21", which no reader takes): those are
//     written as the UTC instant with a 'Z' (sl_value_text spells them so,
//     for JSON Lines and `sluice cat` too). timestamp_format=iso writes ISO
//     8601 with a 'T', zoned timestamps as the UTC instant with a 'Z'
//     ("2023-01-15T12:00:00.000000Z"). All four readers read both forms as
//     the same instant; the zone name itself is not kept.
//   - dates "YYYY-MM-DD", bools true/false, other types as sl_value_text
//     spells them (nested values as JSON text, binary as hex).
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "text_writers.h"
#include "core/sl_error.h"
#include "core/sl_options.h"
#include "core/sl_read.h"
#include "core/sl_value_text.h"
#include "core/sl_value_tz.h"
#include "format/csv/csv_internal.h"
#include "io/sl_compression.h"
#include "io/sl_sink.h"

#define CSV_KNOWN_KEYS \
  "delimiter, header, null, quote, line_terminator, float_format, timestamp_format"

struct csv_write_options {
  char delimiter;
  char quote;  ///< 0 = never quote
  int header;
  const char* null_text;  ///< borrowed from the option string
  size_t null_len;
  const char* eol;
  size_t eol_len;
  int float_point;    ///< float_format=point
  int timestamp_iso;  ///< timestamp_format=iso
};

#define CSV_MAX_PARTS 16

/// One value being spelled, on its own cache line: threads writing their
/// cells side by side would otherwise take the line from each other on
/// every byte.
struct csv_cell {
  _Alignas(64) struct sl_text text;
  /// One-column tables: a null was written "", a value was written (for
  /// csv_finish: a column of such nulls alone reads back as strings).
  int lone_null, lone_value;
};

struct csv_state {
  struct sl_text line;                  ///< the header
  struct csv_cell cell[CSV_MAX_PARTS];  ///< per spelling thread
  struct csv_write_options options;
  int64_t rows;  ///< data rows written so far
  int64_t first_row;  ///< sl_write_args.first_row: errors name rows from it
};

/* ---- Options ---------------------------------------------------------------- */

static int value_is(const char* v, size_t n, const char* literal) {
  return strlen(literal) == n && memcmp(v, literal, n) == 0;
}

/// A named or single character; 0 if `v` is neither (or a line break).
static int parse_char(const char* v, size_t n, char* out) {
  static const struct {
    const char* name;
    char c;
  } names[] = {{"comma", ','}, {"semicolon", ';'}, {"tab", '\t'},  {"\\t", '\t'},
               {"pipe", '|'},  {"space", ' '},     {"dquote", '"'}, {"squote", '\''}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (value_is(v, n, names[i].name)) {
      *out = names[i].c;
      return 1;
    }
  }
  if (n == 1 && v[0] != '\n' && v[0] != '\r' && v[0] != '\0') {
    *out = v[0];
    return 1;
  }
  return 0;
}

/// Whether `location` says tab-separated: x.tsv, also compressed (x.tsv.gz)
/// and as a URL with a query, as the reader tells it (csv_reader.c).
static int named_tsv(const char* location) {
  if (location == NULL) return 0;
  size_t len = sl_location_name_length(location);
  size_t suffix = sl_compression_suffix_length(location);
  return sl_name_ends_with(location, suffix < len ? len - suffix : 0, ".tsv");
}

static int csv_write_options_parse(const char* text, const char* location,
                                   struct csv_write_options* o, struct sluice_error* error) {
  o->delimiter = named_tsv(location) ? '\t' : ',';
  o->quote = '"';
  o->header = 1;
  o->null_text = "";
  o->null_len = 0;
  o->eol = "\n";
  o->eol_len = 1;
  o->float_point = 0;
  o->timestamp_iso = 0;
  struct sl_option item;
  int more;
  while ((more = sl_option_next(&text, &item)) != 0) {
    if (more < 0) {
      return sl_error_set(error, EINVAL, "CSV write option '%.*s': expected key=value (known: "
                          CSV_KNOWN_KEYS ")", (int)item.key_len, item.key);
    }
    const char* s = item.key;
    size_t klen = item.key_len, vlen = item.value_len;
    const char* v = item.value;
    int ok = 1;
    if (value_is(s, klen, "delimiter") || value_is(s, klen, "delim") ||
        value_is(s, klen, "sep")) {
      ok = parse_char(v, vlen, &o->delimiter);
    } else if (value_is(s, klen, "quote")) {
      if (value_is(v, vlen, "none")) o->quote = 0;
      else ok = parse_char(v, vlen, &o->quote);
    } else if (value_is(s, klen, "header")) {
      if (value_is(v, vlen, "true")) o->header = 1;
      else if (value_is(v, vlen, "false")) o->header = 0;
      else ok = 0;
    } else if (value_is(s, klen, "null")) {
      o->null_text = v;
      o->null_len = vlen;
    } else if (value_is(s, klen, "line_terminator")) {
      // The characters themselves too, as pandas' lineterminator= takes them,
      // and spelled with backslashes, as a shell passes '\r\n' (and as
      // delimiter=\t is taken).
      if (value_is(v, vlen, "lf") || value_is(v, vlen, "\n") || value_is(v, vlen, "\\n")) {
        o->eol = "\n";
        o->eol_len = 1;
      } else if (value_is(v, vlen, "crlf") || value_is(v, vlen, "\r\n") ||
                 value_is(v, vlen, "\\r\\n")) {
        o->eol = "\r\n";
        o->eol_len = 2;
      } else {
        ok = 0;
      }
    } else if (value_is(s, klen, "float_format")) {
      if (value_is(v, vlen, "shortest")) o->float_point = 0;
      else if (value_is(v, vlen, "point")) o->float_point = 1;
      else ok = 0;
    } else if (value_is(s, klen, "timestamp_format")) {
      if (value_is(v, vlen, "space")) o->timestamp_iso = 0;
      else if (value_is(v, vlen, "iso")) o->timestamp_iso = 1;
      else ok = 0;
    } else {
      // The file's compression is the sink's, not the CSV writer's: say where it goes.
      const int compression = value_is(s, klen, "compression") || value_is(s, klen, "codec");
      return sl_error_set(error, EINVAL,
                          "unknown CSV write option '%.*s' (known: " CSV_KNOWN_KEYS ")%s",
                          (int)klen, s,
                          compression ? "; a CSV file is compressed whole by its name's suffix "
                                        "(.gz, .zst, .bz2, .xz) or by --compression (Python: "
                                        "compression=)"
                                      : "");
    }
    if (!ok) {
      char shown[64];
      const char* why = "";
      if (value_is(s, klen, "line_terminator")) {
        why = " (lf, crlf, or the characters: a line feed or CR LF, or \\n and \\r\\n "
              "spelled with backslashes)";
      } else if (value_is(s, klen, "quote")) {
        why = " (one single-byte character other than a line break, or dquote, squote or none)";
      } else if (value_is(s, klen, "delimiter") || value_is(s, klen, "delim") ||
                 value_is(s, klen, "sep")) {
        why = " (one single-byte character other than a line break, or comma, semicolon, "
              "tab, pipe or space)";
      } else if (value_is(s, klen, "header")) {
        why = " (true or false)";
      } else if (value_is(s, klen, "float_format")) {
        why = " (shortest or point)";
      } else if (value_is(s, klen, "timestamp_format")) {
        why = " (space or iso)";
      }
      return sl_error_set(error, EINVAL, "CSV write option '%.*s': bad value '%s'%s", (int)klen,
                          s, sl_escaped(v, vlen, '\'', shown, sizeof shown), why);
    }
  }
  if (o->delimiter == o->quote) {
    return sl_error_set(error, EINVAL, "CSV write options: the delimiter equals the quote");
  }
  // With quote=none a '"' still starts a quoted field for readers, as in
  // csv_needs_quotes (null="N went out bare, and the file did not read back).
  const char quote = o->quote != 0 ? o->quote : '"';
  for (size_t i = 0; i < o->null_len; ++i) {
    char c = o->null_text[i];
    if (c == o->delimiter || c == quote || c == '\n' || c == '\r') {
      return sl_error_set(error, EINVAL,
                          "CSV write option null='%.*s': the null spelling cannot contain the "
                          "delimiter, the quote%s or a line break",
                          (int)o->null_len, o->null_text,
                          o->quote == 0 ? " (a '\"', which readers take for one with quote=none)"
                                        : "");
    }
  }
  return 0;
}

/* ---- Cells ------------------------------------------------------------------ */

/// `first`: the cell opens the file (the first name, or with header=false
/// the first value).
static int csv_needs_quotes(const struct csv_write_options* o, const char* s, size_t n,
                            int first) {
  if (n == 0) return 1;
  // A U+FEFF there would be taken for the byte order mark, which every
  // reader (sluice's, pyarrow's, DuckDB's, polars') drops: quoted, as
  // pyarrow writes it, it is kept.
  if (first && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) return 1;
  if (o->null_len > 0 && n == o->null_len && memcmp(s, o->null_text, n) == 0) return 1;
  // The spellings sluice's reader (and pandas) take as null by default, "NaN"
  // (a null in float columns) included: quoted, they stay strings there.
  // With quote=none they go out bare.
  if (o->quote != 0 && (csv_is_null(NULL, (const uint8_t*)s, (int64_t)n) ||
                        csv_is_float_null(NULL, (const uint8_t*)s, (int64_t)n))) {
    return 1;
  }
  // A text that starts with an apostrophe is quoted: the file then holds a
  // '"', and readers that sniff the quote (sluice's, DuckDB's) cannot take
  // ' for it and merge fields such as 'a and b' on one line.
  if (o->quote == '"' && s[0] == '\'') return 1;
  // With quote=none a '"' would still start a quoted field for readers
  // (sluice's, pyarrow's, DuckDB's): refused, as pyarrow refuses it.
  char quote = o->quote != 0 ? o->quote : '"';
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (c == o->delimiter || c == quote || c == '\n' || c == '\r') {
      return 1;
    }
  }
  return 0;
}

/// Appends one cell, quoted when needed. EINVAL (not ENOMEM) when the value
/// needs quotes and quoting is off; the caller names the cell.
static int csv_append_cell(const struct csv_write_options* o, struct sl_text* line, const char* s,
                           size_t n, int first) {
  if (!csv_needs_quotes(o, s, n, first)) return sl_text_append(line, s, n);
  if (o->quote == 0) return n == 0 ? 0 : EINVAL;  // quote=none: "" reads back as null
  SL_RETURN_NOT_OK(sl_text_append_char(line, o->quote));
  size_t run = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == o->quote) {  // doubled, per RFC 4180
      SL_RETURN_NOT_OK(sl_text_append(line, s + run, i + 1 - run));
      run = i;
    }
  }
  SL_RETURN_NOT_OK(sl_text_append(line, s + run, n - run));
  return sl_text_append_char(line, o->quote);
}

/// "YYYY-MM-DD<sep>HH:MM:SS[.f{3,6,9}][Z]"; the UTC instant with a 'Z' when
/// the type has a timezone, the wall time as stored when it has none.
static int append_timestamp(struct sl_text* out, int64_t value, const struct sl_type* type,
                            char sep) {
  static const int64_t per_second_of[] = {1, 1000, 1000000, 1000000000};
  static const int digits_of[] = {0, 3, 6, 9};
  int64_t per_second = per_second_of[type->unit];
  int64_t seconds = sl_floor_div(value, per_second);
  int64_t fraction = sl_floor_mod(value, per_second);
  int64_t days = sl_floor_div(seconds, 86400);
  int64_t in_day = sl_floor_mod(seconds, 86400);
  char buf[96];
  size_t n = sl_format_date(days, buf, sizeof buf);
  n += (size_t)snprintf(buf + n, sizeof buf - n, "%c%02d:%02d:%02d", sep, (int)(in_day / 3600),
                        (int)(in_day / 60 % 60), (int)(in_day % 60));
  if (digits_of[type->unit] > 0) {
    n += (size_t)snprintf(buf + n, sizeof buf - n, ".%0*" PRId64, digits_of[type->unit], fraction);
  }
  if (type->timezone != NULL && type->timezone[0] != '\0') buf[n++] = 'Z';
  return sl_text_append(out, buf, n);
}

/// Makes a rendered float look like one: "1" -> "1.0", "-0" -> "-0.0"
/// ("1e+300", "0.5", "nan", "inf" are left alone).
static int float_suffix(struct sl_text* cell) {
  for (size_t i = 0; i < cell->len; ++i) {
    char c = cell->data[i];
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+')) return 0;
  }
  return sl_text_append(cell, ".0", 2);
}

/// Renders a non-null value into `cell`: sl_value_render, but for
/// timestamp_format=iso and float_format=point.
static int csv_render(const struct csv_write_options* o, const struct sl_text_field* field,
                      const struct ArrowArray* array, int64_t row, struct sl_text* cell,
                      struct sluice_error* error) {
  // Look through dictionaries to the value (sl_value_render checks indexes).
  while (field->dictionary != NULL && array->dictionary != NULL) {
    int64_t index = sl_int_value(field->type.id, array->buffers[1], array->offset + row);
    if (index < 0 || index >= array->dictionary->length) break;
    field = field->dictionary;
    array = array->dictionary;
    row = index;
  }
  switch (field->type.id) {
    case SL_TYPE_TIMESTAMP: {
      if (!o->timestamp_iso) break;
      const int64_t* values = array->buffers[1];
      if (append_timestamp(cell, values[array->offset + row], &field->type,
                           o->timestamp_iso ? 'T' : ' ') != 0) {
        return sl_error_set(error, ENOMEM, "csv: out of memory");
      }
      return 0;
    }
    case SL_TYPE_HALF_FLOAT: case SL_TYPE_FLOAT: case SL_TYPE_DOUBLE:
      if (!o->float_point) break;
      SL_RETURN_NOT_OK(sl_value_render(field, array, row, SL_TEXT_PLAIN, cell, error));
      if (float_suffix(cell) != 0) return sl_error_set(error, ENOMEM, "csv: out of memory");
      return 0;
    default:
      break;
  }
  return sl_value_render(field, array, row, SL_TEXT_PLAIN, cell, error);
}

/* ---- Rows ------------------------------------------------------------------- */

/// Whether a character can be part of a number's spelling ("-1.5e+20",
/// "inf", "nan").
static int in_number(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'i' ||
         c == 'n' || c == 'f' || c == 'a';
}

/// Whether numbers may be spelled straight into the line (sl_text_spell_number):
/// their text then never holds the delimiter or the quote (so it is never
/// quoted) and can never be taken for the null spelling.
static int csv_direct_allowed(const struct csv_write_options* o) {
  if (in_number(o->delimiter) || (o->quote != 0 && in_number(o->quote))) return 0;
  if (o->null_len == 0) return 1;
  for (size_t i = 0; i < o->null_len; ++i) {
    if (!in_number(o->null_text[i])) return 1;
  }
  return 0;
}

static int csv_flush(struct csv_state* state, struct sl_sink* sink, struct sluice_error* error) {
  if (state->line.len == 0) return 0;
  int rc = sl_sink_write(sink, state->line.data, (int64_t)state->line.len, error);
  sl_text_clear(&state->line);
  return rc;
}

/// `row` is the 0-based data row, or -1 for the header.
static int cell_error(int rc, const char* name, int64_t row, struct sluice_error* error) {
  if (rc == EINVAL && row < 0) {
    return sl_error_set(error, EINVAL,
                        "csv: the name of column '%s' needs quotes (it holds the delimiter, a "
                        "'\"', a line break or the null spelling, is empty, or starts the file "
                        "with U+FEFF, which readers drop as a byte order mark) but quote=none",
                        name);
  }
  if (rc == EINVAL) {
    return sl_error_set(error, EINVAL,
                        "csv: column '%s', row %" PRId64 ": the value needs quotes (it holds "
                        "the delimiter, a '\"', a line break or the null spelling, or starts the "
                        "file with U+FEFF, which readers drop as a byte order mark) but "
                        "quote=none",
                        name, row);
  }
  return sl_error_set(error, rc, "csv: out of memory");
}

/// A one-column row that would be an empty line, which readers skip.
static int lone_empty_error(const char* name, int64_t row, int is_null,
                            struct sluice_error* error) {
  return sl_error_set(error, EINVAL, "csv: column '%s', row %" PRId64 ": %s alone on its line "
                      "is an empty line, which readers skip (the row would be lost), and "
                      "quote=none cannot write \"\"%s", name, row,
                      is_null ? "a null" : "an empty string",
                      is_null ? ": give a null spelling (null=NA)" : "");
}

/// Whether a quoted "" for a null in this column reads back as the empty
/// string: the column reads back as strings. So do strings and bytes, nested
/// values (JSON text) and intervals ("1M2d3ns"), as in pyarrow; a column of
/// the null type is "" on every line, which reads as strings too. (A column
/// of another type whose values are all null does as well: csv_finish.)
static int written_as_text(const struct sl_text_field* field) {
  if (field->dictionary != NULL) return written_as_text(field->dictionary);
  switch (field->type.id) {
    case SL_TYPE_NA:
    case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING: case SL_TYPE_BINARY:
    case SL_TYPE_LARGE_BINARY: case SL_TYPE_FIXED_SIZE_BINARY:
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST:
    case SL_TYPE_STRUCT: case SL_TYPE_MAP:
    case SL_TYPE_INTERVAL_MONTHS: case SL_TYPE_INTERVAL_DAY_TIME:
    case SL_TYPE_INTERVAL_MONTH_DAY_NANO:
      return 1;
    case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION:
      // Spelled as the member's value: text when a member is.
      for (int64_t i = 0; i < field->n_children; ++i) {
        if (written_as_text(&field->children[i])) return 1;
      }
      return 0;
    default:
      return 0;
  }
}

/// A null in a one-column table that no empty-spelled cell can keep.
static int lone_text_null_error(const char* name, int64_t row, struct sluice_error* error) {
  return sl_error_set(error, EINVAL, "csv: column '%s', row %" PRId64 ": a null alone on its "
                      "line cannot be written with the empty null spelling: an empty line is "
                      "skipped by readers and \"\" reads back as the empty string; give a null "
                      "spelling (null=NA)", name, row);
}

static int csv_write_header(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
                            struct sluice_error* error) {
  struct csv_state* state = ctx;
  const struct csv_write_options* o = &state->options;
  for (int64_t c = 0; c < row->n_children; ++c) {
    if (c > 0 && sl_text_append_char(&state->line, o->delimiter) != 0) {
      return sl_error_set(error, ENOMEM, "csv: out of memory");
    }
    const char* name = row->children[c].name;
    int rc = csv_append_cell(o, &state->line, name, strlen(name), c == 0);
    if (rc != 0) return cell_error(rc, name, -1, error);
  }
  if (sl_text_append(&state->line, o->eol, o->eol_len) != 0) {
    return sl_error_set(error, ENOMEM, "csv: out of memory");
  }
  return csv_flush(state, sink, error);
}

/// Spells rows [begin, end) of a batch (sl_text_spell_rows).
static int csv_spell_rows(void* ctx, int part, const struct sl_text_field* row,
                          const struct ArrowArray* batch, int64_t begin, int64_t end,
                          struct sl_text* out, struct sluice_error* error) {
  struct csv_state* state = ctx;
  const struct csv_write_options* o = &state->options;
  struct csv_cell* part_cell = &state->cell[part];
  struct sl_text* cell = &part_cell->text;
  // With one column and an empty null spelling a null row would be an empty
  // line, which readers skip: write "" instead (an error where "" would read
  // back as the empty string).
  const int lone_null_quoted = row->n_children == 1 && o->null_len == 0 && o->quote != 0;
  // Without quotes an empty line cannot be avoided: an error, not a lost row.
  const int lone_unquoted = row->n_children == 1 && o->quote == 0;
  const int direct_ok = csv_direct_allowed(o);
  // Rows without columns would be empty lines, which readers skip.
  if (row->n_children == 0 && end > begin) {
    return sl_error_set(error, EINVAL, "csv: %" PRId64 " rows without columns: an empty line "
                        "per row would read back as no rows (Arrow IPC and Avro keep them)",
                        end - begin);
  }
  for (int64_t r = begin; r < end; ++r) {
    // Struct offsets apply to the children: child row = offset + r.
    int64_t child_row = batch->offset + r;
    for (int64_t c = 0; c < row->n_children; ++c) {
      const struct sl_text_field* field = &row->children[c];
      const struct ArrowArray* column = batch->children[c];
      if (c > 0) {
        if (sl_text_room(out, 1) != 0) goto oom;
        out->data[out->len++] = o->delimiter;
        out->data[out->len] = '\0';
      }
      if (direct_ok) {
        // float_point wants "1.0" for whole floats: the general path adds it.
        int floating = field->type.id == SL_TYPE_FLOAT || field->type.id == SL_TYPE_DOUBLE;
        int done = o->float_point && floating
                       ? 0
                       : sl_text_spell_number(field, column, child_row, 0, out);
        if (done < 0) goto oom;
        if (done) {
          part_cell->lone_value |= lone_null_quoted;
          continue;
        }
      }
      if (sl_value_is_null(field, column, child_row)) {
        if (lone_unquoted && o->null_len == 0)
          return lone_empty_error(field->name, state->first_row + state->rows + r, 1, error);
        if (lone_null_quoted) {
          if (written_as_text(field)) {
            return lone_text_null_error(field->name, state->first_row + state->rows + r, error);
          }
          if (sl_text_append_char(out, o->quote) != 0 || sl_text_append_char(out, o->quote) != 0) {
            goto oom;
          }
          part_cell->lone_null = 1;
        } else if (sl_text_append(out, o->null_text, o->null_len) != 0) {
          goto oom;
        }
        continue;
      }
      part_cell->lone_value |= lone_null_quoted;
      sl_text_clear(cell);
      SL_RETURN_NOT_OK(csv_render(o, field, column, child_row, cell, error));
      if (lone_unquoted && cell->len == 0)
        return lone_empty_error(field->name, state->first_row + state->rows + r, 0, error);
      int first = !o->header && c == 0 && r == 0 && state->rows == 0;
      int rc = csv_append_cell(o, out, sl_text_cstr(cell), cell->len, first);
      if (rc != 0) return cell_error(rc, field->name, state->first_row + state->rows + r, error);
    }
    if (sl_text_append(out, o->eol, o->eol_len) != 0) goto oom;
  }
  return 0;
oom:
  return sl_error_set(error, ENOMEM, "csv: out of memory");
}

static void csv_rows_written(void* ctx, int64_t rows) { ((struct csv_state*)ctx)->rows += rows; }

/// A one-column table whose nulls were written "" and that has no value:
/// the reader infers such a column as strings and reads "" as the empty
/// string (the file is that of a column of empty strings).
static int csv_finish(void* ctx, const struct sl_text_field* row, struct sluice_error* error) {
  const struct csv_state* state = ctx;
  int nulls = 0, values = 0;
  for (int i = 0; i < CSV_MAX_PARTS; ++i) {
    nulls |= state->cell[i].lone_null;
    values |= state->cell[i].lone_value;
  }
  if (!nulls || values) return 0;
  return sl_error_set(error, EINVAL, "csv: column '%s' holds only nulls: alone on their lines "
                      "they are written \"\" (an empty line is skipped by readers), which reads "
                      "back as the empty string in a column no value types; give a null "
                      "spelling (null=NA)", row->children[0].name);
}

static int csv_init(void* ctx, const struct sl_write_args* args, struct sluice_error* error) {
  struct csv_state* state = ctx;
  sl_text_init(&state->line, args->alloc);
  state->first_row = args->first_row;
  for (int i = 0; i < CSV_MAX_PARTS; ++i) sl_text_init(&state->cell[i].text, args->alloc);
  return csv_write_options_parse(args->format_options, args->location, &state->options,
                                 error);
}

static void csv_release(void* ctx) {
  struct csv_state* state = ctx;
  sl_text_reset(&state->line);
  for (int i = 0; i < CSV_MAX_PARTS; ++i) sl_text_reset(&state->cell[i].text);
}

static int csv_start(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
                     struct sluice_error* error) {
  struct csv_state* state = ctx;
  return state->options.header ? csv_write_header(ctx, row, sink, error) : 0;
}

static const struct sl_text_format k_csv_format = {
    .name = "csv", .ctx_size = sizeof(struct csv_state), .max_parts = CSV_MAX_PARTS,
    .init = csv_init, .release = csv_release, .start = csv_start, .spell = csv_spell_rows,
    .written = csv_rows_written, .finish = csv_finish};

static int csv_open(const struct ArrowSchema* schema, struct sl_sink* sink,
                    const struct sl_write_args* args, void** state, struct sluice_error* error) {
  return sl_text_writer_open(&k_csv_format, schema, sink, args, state, error);
}

static const struct sl_format_writer k_csv_writer;

static int csv_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                     const struct sl_write_args* args, struct sluice_error* error) {
  return sl_format_write_pushed(&k_csv_writer, stream, sink, args, error);
}

static const char* const k_csv_extensions[] = {".csv", ".tsv", NULL};
static const struct sl_format_writer k_csv_writer = {
    .name = "csv", .extensions = k_csv_extensions, .write = csv_write, .compressible = 1,
    .open = csv_open, .push = sl_text_writer_push, .finish = sl_text_writer_finish,
    .close = sl_text_writer_close};

const struct sl_format_writer* sl_csv_writer(void) { return &k_csv_writer; }

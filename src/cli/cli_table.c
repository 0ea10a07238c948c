// The terminal table of `sluice cat`: aligned columns, a header with names and
// types, wide values cut with an ellipsis, and for long tables only the first
// and last rows. Streams: only HEAD_ROWS + TAIL_ROWS rows are ever kept.
#define _XOPEN_SOURCE 700  // wcwidth
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "cli.h"
#include "core/sl_error.h"
#include "core/sl_value_text.h"

// (36: a UUID, 8-4-4-4-12, shows whole, as in DuckDB's tables)
enum { HEAD_ROWS = 10, TAIL_ROWS = 10, MAX_CELL_WIDTH = 36, MIN_CELL_WIDTH = 3 };

static const char k_ellipsis[] = "\xe2\x80\xa6";  // U+2026, one column wide

struct table_column {
  char name[256];
  char type[256];
  int numeric;  ///< right-aligned
  int width;
};

struct table {
  struct table_column* columns;
  int64_t n_columns;
  char** head;         ///< HEAD_ROWS * n_columns cells (malloc'd strings)
  char** tail;         ///< ring of TAIL_ROWS * n_columns cells
  int64_t rows;        ///< rows seen
  struct sl_text cell;
};

/// The code point of the UTF-8 sequence at s[i] (n bytes in all) in *cp:
/// its length, or 1 with *cp = 0xFFFD for a byte that starts no valid one.
static size_t utf8_next(const char* s, size_t n, size_t i, uint32_t* cp) {
  const unsigned char* u = (const unsigned char*)s + i;
  size_t left = n - i, len = u[0] < 0x80 ? 1 : u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3 : 2;
  *cp = 0xfffd;
  if (u[0] < 0x80) {
    *cp = u[0];
    return 1;
  }
  if (u[0] < 0xc2 || u[0] > 0xf4 || len > left) return 1;
  uint32_t v = u[0] & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((u[k] & 0xc0) != 0x80) return 1;
    v = (v << 6) | (u[k] & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static const uint32_t k_least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < k_least[len] || (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff) return 1;
  *cp = v;
  return len;
}

/// Terminal columns of code point `cp` (not a control character): two for
/// East Asian wide ones, none for combining marks, as the terminal draws
/// them (wcwidth, under the UTF-8 character type main sets); one where the
/// C library does not know.
static int char_width(uint32_t cp) {
  if (cp < 0x80) return 1;
  int w = wcwidth((wchar_t)cp);
  return w < 0 ? 1 : w;
}

/// Bidirectional controls reorder what follows them on the line: shown
/// escaped, as the other invisible controls (C0 and C1) are.
static int is_bidi_control(uint32_t cp) {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e ||
         cp == 0x200f || cp == 0x061c;
}

/// Display columns of a cell (a UTF-8 string make_cell produced).
static int display_width(const char* s) {
  int w = 0;
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    i += utf8_next(s, n, i, &cp);
    w += char_width(cp);
  }
  return w;
}

/// A cell's text made safe for a single terminal line and cut to the width.
static char* make_cell(const char* s, size_t n) {
  size_t cap = MAX_CELL_WIDTH * 8 + 8;
  char* out = malloc(cap);
  if (out == NULL) return NULL;
  size_t len = 0;
  int width = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t m = utf8_next(s, n, i, &cp);
    char esc[16];
    const char* text = s + i;
    size_t text_len = m;
    if (cp < 0x20 || cp == 0x7f) {  // control characters would break the layout
      const char* e = cp == '\n' ? "\\n" : cp == '\t' ? "\\t" : cp == '\r' ? "\\r" : "?";
      snprintf(esc, sizeof esc, "%s", e);
    } else if (is_bidi_control(cp) || (cp >= 0x80 && cp < 0xa0)) {  // and C1 controls
      snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
    } else if (cp == 0xfffd && m == 1) {
      snprintf(esc, sizeof esc, "\xef\xbf\xbd");  // not UTF-8: the replacement character
    } else {
      esc[0] = '\0';
    }
    if (esc[0] != '\0') {
      text = esc;
      text_len = strlen(esc);
    }
    int w = esc[0] != '\0' && cp != 0xfffd ? (int)text_len : char_width(cp);
    // The last column is the ellipsis's unless this is the last character.
    int last = i + m >= n;
    if (width + w > MAX_CELL_WIDTH - (last ? 0 : 1) || len + text_len + 4 > cap) {
      memcpy(out + len, k_ellipsis, 3);
      len += 3;
      break;
    }
    memcpy(out + len, text, text_len);
    len += text_len;
    width += w;
    i += m;
  }
  out[len] = '\0';
  return out;
}

static int is_numeric(const struct ArrowSchema* schema) {
  if (schema->dictionary != NULL) return 0;
  const char* f = schema->format;
  if (strchr("cCsSiIlLefg", f[0]) != NULL && f[1] == '\0') return 1;
  return (f[0] == 'd' && f[1] == ':') || (f[0] == 't' && f[1] == 'D');  // decimals, durations
}

/// Renders row `row` of `batch` into cells[0..n_columns).
static int render_row(struct table* t, const struct sl_text_field* row_field,
                      const struct ArrowArray* batch, int64_t row, char** cells,
                      struct sluice_error* error) {
  for (int64_t c = 0; c < t->n_columns; ++c) {
    const struct sl_text_field* field = &row_field->children[c];
    const struct ArrowArray* column = batch->children[c];
    int64_t child_row = batch->offset + row;
    free(cells[c]);
    cells[c] = NULL;
    sl_text_clear(&t->cell);
    if (sl_value_is_null(field, column, child_row)) {
      cells[c] = make_cell("null", 4);
    } else {
      SL_RETURN_NOT_OK(sl_value_render(field, column, child_row, SL_TEXT_PLAIN, &t->cell, error));
      cells[c] = make_cell(sl_text_cstr(&t->cell), t->cell.len);
    }
    if (cells[c] == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  }
  return 0;
}

/// `last`: the line's last cell, which needs no padding after it.
static void print_cell(FILE* out, const char* s, int width, int right, int last) {
  int pad = width - display_width(s);
  if (pad < 0) pad = 0;
  if (right) fprintf(out, "%*s%s", pad, "", s);
  else fprintf(out, "%s%*s", s, last ? 0 : pad, "");
}

/// Chooses which columns fit `width` (0 = all): the first ones and the last
/// one, with an ellipsis column between when some are left out.
static int64_t visible_columns(const struct table* t, int width, int64_t* n_left) {
  if (width <= 0) {
    *n_left = t->n_columns;
    return t->n_columns;
  }
  int used = 0;
  int64_t n = 0;
  int last = t->n_columns > 0 ? t->columns[t->n_columns - 1].width + 3 : 0;
  for (; n < t->n_columns; ++n) {
    int need = t->columns[n].width + 3;
    int reserve = n + 1 < t->n_columns ? last + 4 : 0;
    if (used + need + reserve > width && n > 0) break;
    used += need;
  }
  *n_left = n;
  return n;
}

static void print_separator(FILE* out, const struct table* t, int64_t n_left, int cut,
                            const char* piece) {
  for (int64_t c = 0; c < t->n_columns; ++c) {
    if (c == n_left && cut) {
      fprintf(out, " %s  ", piece);  // as wide as the ellipsis column of the rows
      c = t->n_columns - 2;  // continue with the last column
      continue;
    }
    fputc(' ', out);
    for (int i = 0; i < t->columns[c].width; ++i) fputs(piece, out);
    fputs(c + 1 < t->n_columns ? "  " : "", out);
  }
  fputc('\n', out);
}

static void print_row(FILE* out, const struct table* t, char* const* cells, int64_t n_left,
                      int cut) {
  for (int64_t c = 0; c < t->n_columns; ++c) {
    if (c == n_left && cut) {
      fprintf(out, " %s  ", k_ellipsis);
      c = t->n_columns - 2;
      continue;
    }
    fputc(' ', out);
    print_cell(out, cells != NULL ? cells[c] : k_ellipsis, t->columns[c].width,
               t->columns[c].numeric, c + 1 == t->n_columns);
    if (c + 1 < t->n_columns) fputs("  ", out);
  }
  fputc('\n', out);
}

static void table_print(FILE* out, struct table* t, int width) {
  int64_t shown_head = t->rows < HEAD_ROWS ? t->rows : HEAD_ROWS;
  int64_t shown_tail = t->rows - shown_head < TAIL_ROWS ? t->rows - shown_head : TAIL_ROWS;
  for (int64_t c = 0; c < t->n_columns; ++c) {
    struct table_column* col = &t->columns[c];
    col->width = display_width(col->name);
    if (display_width(col->type) > col->width) col->width = display_width(col->type);
    if (col->width > MAX_CELL_WIDTH) col->width = MAX_CELL_WIDTH;
    if (col->width < MIN_CELL_WIDTH) col->width = MIN_CELL_WIDTH;
    for (int64_t r = 0; r < shown_head + shown_tail; ++r) {
      char** cells = r < shown_head ? &t->head[r * t->n_columns] : NULL;
      if (cells == NULL) {
        int64_t tail_row = t->rows - shown_tail + (r - shown_head);
        cells = &t->tail[(tail_row % TAIL_ROWS) * t->n_columns];
      }
      int w = display_width(cells[c]);
      if (w > col->width) col->width = w;
    }
  }
  int64_t n_left;
  visible_columns(t, width, &n_left);
  int cut = n_left < t->n_columns - 1;  // else only the last column is left: show it
  char name_cell[MAX_CELL_WIDTH * 4 + 8];
  for (int line = 0; line < 2; ++line) {
    for (int64_t c = 0; c < t->n_columns; ++c) {
      if (c == n_left && cut) {
        fprintf(out, " %s  ", k_ellipsis);
        c = t->n_columns - 2;
        continue;
      }
      const char* text = line == 0 ? t->columns[c].name : t->columns[c].type;
      char* cut_text = make_cell(text, strlen(text));
      snprintf(name_cell, sizeof name_cell, "%s", cut_text != NULL ? cut_text : "?");
      free(cut_text);
      fputc(' ', out);
      print_cell(out, name_cell, t->columns[c].width, t->columns[c].numeric,
                 c + 1 == t->n_columns);
      if (c + 1 < t->n_columns) fputs("  ", out);
    }
    fputc('\n', out);
  }
  print_separator(out, t, n_left, cut, "\xe2\x94\x80");  // U+2500
  for (int64_t r = 0; r < shown_head; ++r) {
    print_row(out, t, &t->head[r * t->n_columns], n_left, cut);
  }
  if (t->rows > shown_head + shown_tail) print_row(out, t, NULL, n_left, cut);
  for (int64_t r = t->rows - shown_tail; r < t->rows; ++r) {
    print_row(out, t, &t->tail[(r % TAIL_ROWS) * t->n_columns], n_left, cut);
  }
  fprintf(out, "%lld row%s", (long long)t->rows, t->rows == 1 ? "" : "s");
  if (cut) {
    fprintf(out, ", %lld columns (%lld shown)", (long long)t->n_columns, (long long)(n_left + 1));
  }
  fputc('\n', out);
}

static void table_free(struct table* t) {
  for (int64_t i = 0; t->head != NULL && i < HEAD_ROWS * t->n_columns; ++i) free(t->head[i]);
  for (int64_t i = 0; t->tail != NULL && i < TAIL_ROWS * t->n_columns; ++i) free(t->tail[i]);
  free(t->head);
  free(t->tail);
  free(t->columns);
  sl_text_reset(&t->cell);
}

static int stream_failed(struct ArrowArrayStream* stream, int rc, struct sluice_error* error) {
  const char* message = stream->get_last_error(stream);
  return sl_error_set(error, rc, "%s", message != NULL && message[0] ? message : strerror(rc));
}

int cli_print_table(struct ArrowArrayStream* stream, FILE* out, int width,
                    struct sluice_error* error) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  int rc = stream->get_schema(stream, &schema);
  if (rc != 0) return stream_failed(stream, rc, error);
  struct table t;
  memset(&t, 0, sizeof t);
  sl_text_init(&t.cell, NULL);
  struct sl_text_field row_field;
  rc = sl_text_field_init(&row_field, &schema, NULL, error);
  if (rc != 0) {
    schema.release(&schema);
    return rc;
  }
  t.n_columns = schema.n_children;
  size_t n_cols = (size_t)(t.n_columns > 0 ? t.n_columns : 1);
  t.columns = calloc(n_cols, sizeof *t.columns);
  t.head = calloc(n_cols * HEAD_ROWS, sizeof *t.head);
  t.tail = calloc(n_cols * TAIL_ROWS, sizeof *t.tail);
  if (t.columns == NULL || t.head == NULL || t.tail == NULL) {
    rc = sl_error_set(error, ENOMEM, "out of memory");
  }
  for (int64_t c = 0; rc == 0 && c < t.n_columns; ++c) {
    const struct ArrowSchema* child = schema.children[c];
    snprintf(t.columns[c].name, sizeof t.columns[c].name, "%s",
             child->name != NULL ? child->name : "");
    cli_type_name(child, t.columns[c].type, sizeof t.columns[c].type);
    t.columns[c].numeric = is_numeric(child);
  }
  while (rc == 0) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    rc = stream->get_next(stream, &batch);
    if (rc != 0) {
      rc = stream_failed(stream, rc, error);
      break;
    }
    if (batch.release == NULL) break;
    int64_t r = 0;
    for (; r < batch.length && t.rows + r < HEAD_ROWS && rc == 0; ++r) {
      rc = render_row(&t, &row_field, &batch, r, &t.head[(t.rows + r) * t.n_columns], error);
    }
    // Only the batch's last TAIL_ROWS rows can survive in the ring.
    if (batch.length - TAIL_ROWS > r) r = batch.length - TAIL_ROWS;
    for (; r < batch.length && rc == 0; ++r) {
      int64_t slot = (t.rows + r) % TAIL_ROWS;
      rc = render_row(&t, &row_field, &batch, r, &t.tail[slot * t.n_columns], error);
    }
    t.rows += batch.length;
    batch.release(&batch);
  }
  if (rc == 0) table_print(out, &t, width);
  table_free(&t);
  sl_text_field_reset(&row_field);
  schema.release(&schema);
  return rc;
}

// Lines that end in a bare CR (classic Mac OS, old Excel for Mac exports).
//
// Why a translated copy rather than a line-end byte in the dialect: the line
// feed is wired into every path of the reader (the block tokenizers' masks,
// the fused AVX2 / AVX-512 loops, the split planner's row-start search and
// quote parity, line numbers in messages, the stream window's cut). Making
// it a parameter would touch each of those hot loops for a rare legacy
// format. Instead, such an input is read whole into memory once, with each
// CR outside quoted fields rewritten to LF in place: positions do not move,
// so split planning, byte offsets and line numbers (which count line feeds)
// stay right, and the rest of the reader sees an ordinary LF file, on as
// many splits and threads as any. Inputs whose lines end in LF or CRLF never
// come here (one memchr-bounded look at the head), so their speed is
// unchanged. The cost is memory: the whole input (a mapped file is copied,
// a stream read to its end rather than through a window).
//
// Values are then what pyarrow.csv reads: a CR inside a quoted field is
// data in both; a CR outside one ends the line in both; a line feed outside
// quotes still ends a line, and CR LF becomes an empty line, skipped.
#include <string.h>

#include "csv_internal.h"

/// The reading of quotes the rewrite follows (csv_scan.c's tokenizers): every
/// quote toggles quoting; with an escape character the byte after it is
/// literal; with stray_quotes=text a quote opens quoting only at a field's
/// start and a doubled one inside stays quoted. A comment line ends at its
/// line end whatever it holds.
enum cr_state { CR_LINE, CR_FIELD, CR_OUT, CR_QUOTE, CR_COMMENT };

/// The position of the next CR or LF in data[p, end) that ends a line (one
/// outside quoted fields, escapes and the like), reading from state *st; end
/// when there is none. The caller sets *st to CR_LINE past a line end.
static int64_t next_line_end(const struct csv_options* o, uint8_t q, const uint8_t* data,
                             int64_t p, int64_t end, enum cr_state* st) {
  const uint8_t esc = (uint8_t)o->escape, comment = (uint8_t)o->comment;
  const int stray = o->stray_text;
  for (; p < end; ++p) {
    uint8_t c = data[p];
    if (*st == CR_COMMENT) {
      if (c == '\r' || c == '\n') return p;
      continue;
    }
    if (*st == CR_LINE && comment != 0 && c == comment) {
      *st = CR_COMMENT;
      continue;
    }
    if (esc != 0 && c == esc) {
      ++p;
      if (*st != CR_QUOTE) *st = CR_OUT;
      continue;
    }
    if (*st == CR_QUOTE) {
      if (q != 0 && c == q) {
        if (stray && p + 1 < end && data[p + 1] == q) {
          ++p;  // a doubled quote
        } else {
          *st = CR_OUT;
        }
      }
      continue;
    }
    if (q != 0 && c == q && (!stray || *st != CR_OUT)) {
      *st = CR_QUOTE;
    } else if (c == '\r' || c == '\n') {
      return p;
    } else if (o->delimiter > 0 ? c == (uint8_t)o->delimiter
                                : (c == ',' || c == ';' || c == '\t' || c == '|')) {
      *st = CR_FIELD;  // (a sniffed delimiter is one of these; only stray_text asks)
    } else {
      *st = CR_OUT;
    }
  }
  return end;
}

int sl_csv_lines_end_in_cr(const struct csv_options* o, const uint8_t* data, int64_t start,
                        int64_t size, uint8_t* quote) {
  const int64_t sample = INT64_C(1) << 20;
  int64_t end = size - start > sample ? start + sample : size;
  if (end <= start) return 0;
  // Cheap refusal first: no CR in the head, but an LF (a line of over a
  // MiB, with neither, is looked at below).
  if (memchr(data + start, '\r', (size_t)(end - start)) == NULL &&
      (end == size || memchr(data + start, '\n', (size_t)(end - start)) != NULL))
    return 0;
  *quote = sl_csv_pick_quote(o, data, start, end, 1);  // the one the analysis will use
  // The first line end must be a CR not followed by LF, and no LF may end a
  // line in the head (a file mixing them is read as before: its CRs are
  // data). Line ends are found as the rewrite finds them (comment lines and
  // stray_quotes=text included), so that a quote in a comment or a stray
  // quote in the first line does not hide them.
  enum cr_state st = CR_LINE;
  int first = 1;
  for (int64_t p = start; (p = next_line_end(o, *quote, data, p, end, &st)) < end; ++p) {
    if (data[p] == '\n') return 0;
    if (first && p + 1 < size && data[p + 1] == '\n') return 0;  // CRLF
    first = 0;
    st = CR_LINE;
  }
  if (first && end < size) {
    // No line end in the head (a first row of over a MiB, such as a long
    // quoted value holding CRs): the first line end, wherever it is, decides.
    int64_t p = next_line_end(o, *quote, data, end, size, &st);
    return p < size && data[p] == '\r' && !(p + 1 < size && data[p + 1] == '\n');
  }
  return !first;
}

void sl_csv_cr_to_lf(const struct csv_options* o, uint8_t q, uint8_t* data, int64_t start,
                  int64_t size) {
  enum cr_state st = CR_LINE;
  for (int64_t p = start; (p = next_line_end(o, q, data, p, size, &st)) < size; ++p) {
    data[p] = '\n';
    st = CR_LINE;
  }
}

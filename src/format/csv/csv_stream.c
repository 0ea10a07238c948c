// Forward-only sources (pipes, standard input, compressed input as it is
// inflated) in bounded memory.
//
// open() peeks at the head of the stream (without consuming it) and analyses
// it cut after its last line feed; the schema comes from that sample. When
// the sample holds no complete data row (a first row longer than it, whose
// quoted line feeds may make the cut fall inside it), or one row alone
// whose header is to be sniffed, the peek doubles until it does, as the
// window does for a long row. The one split then reads the stream through
// a window: rows are decoded from the window up to its last line feed
// (`limit`); the unfinished tail is moved to the front and more is read. A row longer than the window doubles it. With
// an escape character, a line feed after an odd run of escapes is data, not
// a row's end, so such line feeds are passed over for `limit` and the
// sample's cut. When the whole input fits in the sample the reader falls
// back to reading everything into memory; so it does when lines end in a
// bare CR.
//
// Neither the sample nor the window grows past max_row_bytes for one row:
// a row counts its line ending (one byte when the input ends without one,
// as DuckDB's max_line_size counts), so the window of at most that many
// bytes holds any row short enough, and one that fills it without ending
// is too long. That is an error naming the line and byte where the row
// starts, found before anything grows, so that a decompression bomb of one
// endless row stops there rather than after allocating its size.
#include <string.h>

#include "csv_reader_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"

/// The end of the complete lines in d[from, n): just after the last line
/// feed that no escape character makes data (one after an odd run of
/// escapes is); `from` when there is none.
static int64_t lines_end(const uint8_t* d, int64_t from, int64_t n, uint8_t esc) {
  int64_t end = n;
  for (;;) {
    while (end > from && d[end - 1] != '\n') --end;
    if (end == from || esc == 0) return end;
    int64_t run = end - 1;
    while (run > from && d[run - 1] == esc) --run;
    if (((end - 1 - run) & 1) == 0) return end;
    --end;
  }
}

int sl_csv_row_too_long(const struct csv_reader* r, int64_t line, int64_t at,
                        struct sluice_error* error) {
  return sl_error_set(error, ERANGE, "%s: line %lld (byte %lld): a row longer than %lld bytes "
                      "(the CSV option max_row_bytes, by default the memory budget and at "
                      "least 256 MiB: raise it to read longer rows)", r->name, (long long)line,
                      (long long)at, (long long)r->opts.max_row_bytes);
}

int sl_csv_stream_prepare(struct csv_reader* r, struct sluice_error* error) {
  int64_t sample = r->opts.infer_bytes < 0 ? (INT64_C(64) << 20) : r->opts.infer_bytes;
  if (sample < (INT64_C(1) << 20)) sample = INT64_C(1) << 20;
  sample += INT64_C(64) << 10;
  int64_t row_at = 0, row_len = 0;  // the unfinished row of the last sample
  const int64_t most = r->opts.max_row_bytes;
  for (int grown = 0;; grown = 1) {
    struct sl_view v;
    int rc = sl_source_peek(r->source, sample, &v, error);
    if (rc == ENOMEM && grown) {
      return sl_error_set(error, ENOMEM, "%s: byte %lld: out of memory (%lld bytes) for a row "
                          "of %lld bytes or more", r->name, (long long)row_at, (long long)sample,
                          (long long)row_len);
    }
    if (rc != 0) return rc;
    int more = 0;
    const uint8_t* d = v.data;
    int64_t n = v.size;
    rc = sl_csv_check_encoding(d, n, r->name, error);
    if (rc != 0) {
      sl_view_release(&v);
      return rc;
    }
    int64_t cut = lines_end(d, 0, n, (uint8_t)r->opts.escape);
    int64_t start = n >= 3 && d[0] == 0xEF && d[1] == 0xBB && d[2] == 0xBF ? 3 : 0;
    uint8_t cr_quote;
    // Lines ending in a bare CR are read whole, to be rewritten (csv_cr_lines.c).
    // A sample grown for a long row streams even when it holds the end of
    // the input: reading that whole would copy it beside the peeked bytes.
    if ((n >= sample || grown) && !sl_csv_lines_end_in_cr(&r->opts, d, start, n, &cr_quote)) {
      if (cut > 0)
        rc = sl_csv_analyze(&r->opts, d, start, cut, 0, r->name, r->alloc, &r->layout, error);
      if (rc == 0 && cut > 0 && r->layout.n_cols > 0 && r->layout.data_start < cut &&
          !r->layout.undecided) {
        r->stream = 1;
        r->header_lines = sl_csv_count_byte(d, r->layout.data_start, '\n');
        // A sample grown for a long first row is window enough: the peeked
        // bytes stay buffered in the source beside it.
        int64_t window = grown ? n : n * 2;
        if (window < (INT64_C(4) << 20)) window = INT64_C(4) << 20;
        // No more than a row may hold (the window is then exact about
        // max_row_bytes), but room for the header, which the sample held.
        if (window > most) window = most;
        r->stream_window = window > r->layout.data_start ? window : r->layout.data_start;
      } else if (rc == 0) {
        // No complete data row yet (a first row longer than the sample, or
        // cut inside a quoted field; or a lone first row, which alone does
        // not tell a header): look further rather than read the whole
        // input into memory. (At the input's end: read whole, as `final`.)
        if (cut > 0) sl_csv_layout_free(&r->layout, r->alloc);
        memset(&r->layout, 0, sizeof r->layout);
        more = n >= sample && sample <= INT64_MAX / 2;
        row_at = cut;
        row_len = n - cut;
        // The bytes since the last line feed are one row (or the header),
        // too long if they are max_row_bytes without its line ending;
        // quoted line feeds may hide where a row began, but the header
        // and the first row together are at most twice max_row_bytes.
        if (row_len >= most) {
          rc = sl_csv_row_too_long(r, (int64_t)sl_csv_count_byte(d, row_at, '\n') + 1, row_at,
                                   error);
        } else if (more && n > 2 * most) {
          rc = sl_error_set(error, ERANGE, "%s: no complete data row in the first %lld bytes: "
                            "the header or the first row is longer than %lld bytes (the CSV "
                            "option max_row_bytes, by default the memory budget and at least "
                            "256 MiB: raise it to read longer rows)", r->name, (long long)n,
                            (long long)most);
        }
      }
    }
    sl_view_release(&v);
    if (rc != 0 || !more) return rc;
    // Enough to see whether the row ends before max_row_bytes.
    int64_t next = sample * 2;
    if (next > row_at + most) next = row_at + most;
    if (next > 2 * most + 1) next = 2 * most + 1;
    sample = next;
  }
}

int sl_csv_stream_fill(struct csv_split_state* s, int force, int64_t* shift,
                    struct sluice_error* error) {
  struct csv_reader* r = s->r;
  // Drop what was decoded; keep the unfinished tail at the front.
  int64_t keep = s->pos;
  if (keep > s->win_len) keep = s->win_len;
  s->lines_before += sl_csv_count_byte(s->window != NULL ? s->window : s->data, keep, '\n');
  if (s->window == NULL) {
    SL_RETURN_NOT_OK(sl_csv_ranged_window(s, keep, error));
  } else if (keep > 0 && s->win_len > keep) {
    memmove(s->window, s->window + keep, (size_t)(s->win_len - keep));
  }
  s->win_len -= keep;
  s->base += keep;
  s->pos -= keep;
  if (s->stop != INT64_MAX) s->stop -= keep;
  *shift = keep;
  // The decoder found the row at pos unfinished in the window's bytes.
  int seen = force;
  if (!force && !s->eof && s->window != NULL && !r->ranged) {
    // Whole rows the last read brought beside the header (stream start) go
    // to the decoder first: reading first would wait on a slow stream for
    // bytes not needed yet.
    int64_t ready = lines_end(s->window, s->pos, s->win_len, r->layout.dialect.escape);
    if (ready > s->pos) {
      s->data = s->window;
      s->limit = ready;
      return 0;
    }
  }
  for (;;) {
    if (!s->eof) {
      if (s->win_len == s->win_cap && s->win_len - s->pos >= r->opts.max_row_bytes) {
        // A full window of max_row_bytes from s->pos (0 here): a row that
        // has not ended in it is too long (with its line ending, or the end
        // of the input). Checked before the window grows. A line feed the
        // decoder has not seen may end the row (a quoted one): it looks.
        int64_t end = seen ? s->pos : lines_end(s->window, s->pos, s->win_len,
                                                r->layout.dialect.escape);
        s->data = s->window;
        if (end > s->pos) {
          s->limit = end;
          return 0;
        }
        int64_t line, at;
        sl_csv_split_where(s, s->pos, &line, &at);
        return sl_csv_row_too_long(r, line, at, error);
      } else if (s->win_len == s->win_cap) {
        int64_t cap = s->win_cap * 2;
        if (cap > s->pos + r->opts.max_row_bytes) cap = s->pos + r->opts.max_row_bytes;
        uint8_t* w = cap > s->win_cap ? sl_realloc_buffer(r->alloc, s->window, (size_t)s->win_cap,
                                                          (size_t)cap)
                                      : NULL;
        if (w == NULL) {
          int64_t line, at;
          s->data = s->window;
          sl_csv_split_where(s, s->pos, &line, &at);
          return sl_error_set(error, ENOMEM, "%s: line %lld (byte %lld): out of memory (%lld bytes) "
                              "for a row of %lld bytes or more", r->name, (long long)line,
                              (long long)at, (long long)cap, (long long)(s->win_len - s->pos));
        }
        s->window = w;
        s->win_cap = cap;
      }
      if (r->ranged) {
        SL_RETURN_NOT_OK(sl_csv_ranged_read(s, error));
      } else {
        // What has arrived (a remote stream's, an inflated chunk's rest):
        // its rows are decoded while the rest comes, rather than waiting
        // for the window to fill (4 MiB or more from a slow server).
        struct sl_view v;
        SL_RETURN_NOT_OK(sl_source_read_some(r->source, s->win_cap - s->win_len, &v, error));
        if (v.size <= 0) {
          s->eof = 1;
        } else {
          int64_t take = v.size < s->win_cap - s->win_len ? v.size : s->win_cap - s->win_len;
          memcpy(s->window + s->win_len, v.data, (size_t)take);
          s->win_len += take;
        }
        sl_view_release(&v);
      }
      seen = 0;
    }
    int64_t limit = s->win_len;
    if (!s->eof) limit = lines_end(s->window, s->pos, limit, r->layout.dialect.escape);
    s->data = s->window;
    s->limit = limit;
    if (s->eof || (limit > s->pos && !force)) return 0;
    force = 0;  // one more read was made; a complete row may still need more
    if (limit > s->pos && s->win_len < s->win_cap) return 0;
  }
}

int sl_csv_stream_start(struct csv_split_state* s, struct sluice_error* error) {
  struct csv_reader* r = s->r;
  if (atomic_exchange(&r->stream_busy, 1)) {
    return sl_error_set(error, EBUSY, "%s: a stream is read by one scan at a time", r->name);
  }
  s->holds_stream = 1;
  if (atomic_exchange(&r->stream_read, 1)) {
    if (r->inflated == NULL || !sl_source_inflate_rewindable(r->inflated)) {
      return sl_error_set(error, EINVAL, "%s: a stream is read once: it cannot be scanned again",
                          r->name);
    }
    SL_RETURN_NOT_OK(sl_source_inflate_rewind(r->inflated, error));
  }
  s->win_cap = r->stream_window;
  s->window = sl_alloc_buffer(r->alloc, (size_t)s->win_cap);
  if (s->window == NULL)
    return sl_error_set(error, ENOMEM, "%s: out of memory (%lld bytes) for the stream's window",
                        r->name, (long long)s->win_cap);
  // The header (and a BOM) are in the first bytes: read up to them, then skip.
  while (!s->eof && s->win_len < r->layout.data_start) {
    struct sl_view v;
    SL_RETURN_NOT_OK(sl_source_read_some(r->source, s->win_cap - s->win_len, &v, error));
    if (v.size <= 0) s->eof = 1;
    int64_t take = v.size < s->win_cap - s->win_len ? v.size : s->win_cap - s->win_len;
    if (take > 0) memcpy(s->window + s->win_len, v.data, (size_t)take);
    if (take > 0) s->win_len += take;
    sl_view_release(&v);
  }
  s->pos = r->layout.data_start < s->win_len ? r->layout.data_start : s->win_len;
  int64_t shift;
  return sl_csv_stream_fill(s, 0, &shift, error);
}

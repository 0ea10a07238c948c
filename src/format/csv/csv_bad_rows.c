// Bad rows, when the user asked to tolerate them (options missing_fields=null
// and bad_rows=skip; by default the first bad row is an error, see
// sl_csv_check_field_counts and sl_csv_convert_column). Runs on the tokenized rows
// of one chunk, before any column is converted, so that a dropped row never
// leaves some columns one value longer than others.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "csv_reader_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"

/// Gives every row with fewer than n_cols fields null fields up to n_cols
/// (an empty unquoted field is null in every column).
static int pad_short_rows(struct csv_rows* rows, int64_t want) {
  int64_t extra = 0;
  for (int64_t r = 0; r < rows->n_rows; ++r) {
    int64_t n = rows->row_first[r + 1] - rows->row_first[r];
    if (n < want) extra += want - n;
  }
  if (extra == 0) return 0;
  int64_t cap = rows->n_fields + extra;
  struct csv_field* fields = sl_alloc(rows->alloc, (size_t)cap * sizeof *fields);
  if (fields == NULL) return ENOMEM;
  int64_t out = 0;
  for (int64_t r = 0; r < rows->n_rows; ++r) {
    int64_t first = rows->row_first[r], n = rows->row_first[r + 1] - first;
    memcpy(fields + out, rows->fields + first, (size_t)n * sizeof *fields);
    rows->row_first[r] = out;
    out += n;
    // A padded field points just past the row's last one (for messages).
    const struct csv_field* last = &rows->fields[first + n - 1];
    for (; n < want; ++n) fields[out++] = (struct csv_field){last->pos + last->len, 0, 0};
  }
  rows->row_first[rows->n_rows] = out;
  sl_free(rows->alloc, rows->fields, (size_t)rows->cap_fields * sizeof *rows->fields);
  rows->fields = fields;
  rows->n_fields = out;
  rows->cap_fields = cap;
  return 0;
}

static void skip_lock(struct csv_reader* r) {
  while (atomic_flag_test_and_set_explicit(&r->first_skip_lock, memory_order_acquire)) {
  }
}

static void skip_unlock(struct csv_reader* r) {
  atomic_flag_clear_explicit(&r->first_skip_lock, memory_order_release);
}

/// Counts a dropped row, and keeps its reason when it is the first in the
/// input so far: splits finish in any order, and the report names the
/// earliest bad row, whichever split met it first in time.
static void count_skip(struct csv_split_state* s, int64_t pos, const char* why) {
  struct csv_reader* r = s->r;
  atomic_fetch_add(&r->rows_skipped, 1);
  int64_t at = s->base + pos;
  skip_lock(r);
  int earlier = r->first_skip_at == 0 || at + 1 < r->first_skip_at;
  skip_unlock(r);
  if (!earlier) return;  // the common case with many bad rows: no line counted
  int64_t line;
  sl_csv_split_where(s, pos, &line, &at);  // counts lines: outside the lock
  skip_lock(r);
  if (r->first_skip_at == 0 || at + 1 < r->first_skip_at) {
    r->first_skip_at = at + 1;
    snprintf(r->first_skip, sizeof r->first_skip, "line %" PRId64 " (byte %" PRId64 "): %s",
             line, at, why);
  }
  skip_unlock(r);
}

void sl_csv_skip_wide_row(struct csv_split_state* s, int64_t pos) {
  char why[96];
  snprintf(why, sizeof why, "more than %" PRId64 " fields (the CSV option max_columns)",
           s->r->opts.max_columns);
  count_skip(s, pos, why);
}

int sl_csv_fix_rows(struct csv_split_state* s, struct sluice_error* error) {
  struct csv_reader* r = s->r;
  struct csv_rows* rows = &s->rows;
  const int64_t want = r->layout.n_cols;
  if (r->opts.missing_null && pad_short_rows(rows, want) != 0)
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  int64_t kept = 0;
  for (int64_t row = 0; row < rows->n_rows; ++row) {
    int64_t first = rows->row_first[row], n = rows->row_first[row + 1] - first;
    char why[200];
    int ok = n == want || csv_trailing_delim_row(&r->layout, rows, row);
    if (!ok) {
      snprintf(why, sizeof why, "expected %" PRId64 " fields, found %" PRId64, want, n);
    } else if (r->opts.skip_bad_rows) {
      // A value that does not fit an inferred type widens its column (the
      // input is read again) rather than dropping its row; only a given
      // type, or an input that cannot be read again, makes the row bad.
      for (int64_t j = 0; ok && j < s->n_cols; ++j) {
        int64_t c = s->cols[j];
        if (!r->cols[c].user_type && csv_rereadable(r)) continue;
        if (sl_csv_field_converts(s, c, &rows->fields[first + c], why, sizeof why, &ok) != 0)
          return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
      }
    }
    if (!ok) {
      if (!r->opts.skip_bad_rows) {  // missing_fields=null alone: too many fields is an error
        int64_t line, at;
        sl_csv_split_where(s, rows->row_pos[row], &line, &at);
        return sl_error_set(error, EILSEQ, "%s: line %" PRId64 " (byte %" PRId64 "): %s",
                            r->name, line, at, why);
      }
      count_skip(s, rows->row_pos[row], why);
      continue;
    }
    rows->row_first[kept] = first;
    rows->row_pos[kept] = rows->row_pos[row];
    kept++;
  }
  rows->row_first[kept] = rows->n_fields;
  rows->n_rows = kept;
  return 0;
}

int64_t sl_csv_rows_skipped(void* reader, char* first_reason, size_t cap) {
  struct csv_reader* r = reader;
  int64_t n = atomic_load(&r->rows_skipped);
  if (first_reason != NULL && cap > 0) {
    first_reason[0] = '\0';
    skip_lock(r);
    if (n > 0 && r->first_skip_at > 0) snprintf(first_reason, cap, "%s", r->first_skip);
    skip_unlock(r);
  }
  return n;
}

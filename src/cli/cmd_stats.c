// sluice stats: count, nulls, min and max per column (sluice_dataset_stats
// computes them in parallel over the splits, or takes them from stored
// metadata when that is exact); --metadata prints only what the metadata says.
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/sl_value_text.h"

/// Human type names, one per column (from the schema, which sluice_dataset_stats
/// follows column for column); falls back to the format string.
static const char* type_of(const struct ArrowSchema* schema, const struct sluice_column_stats* s,
                           int64_t i, char* buf, size_t cap) {
  if (schema->release == NULL || i >= schema->n_children) return s->type;
  cli_type_name(schema->children[i], buf, cap);
  return buf;
}

/// `stored_only`: --metadata, where figures not from metadata are unknown.
static int print_json(const struct sluice_column_stats* stats, int64_t n,
                      const struct ArrowSchema* schema, int stored_only) {
  struct sl_text out;
  sl_text_init(&out, NULL);
  int rc = sl_text_append_char(&out, '[');
  for (int64_t i = 0; i < n && rc == 0; ++i) {
    const struct sluice_column_stats* s = &stats[i];
    char numbers[96];
    if (i > 0) rc = sl_text_append_char(&out, ',');
    if (rc == 0) rc = sl_text_append_str(&out, "{\"name\":");
    if (rc == 0) rc = sl_text_append_json_string(&out, s->name, strlen(s->name));
    char type[512];
    const char* name = type_of(schema, s, i, type, sizeof type);
    if (rc == 0) rc = sl_text_append_str(&out, ",\"type\":");
    if (rc == 0) rc = sl_text_append_json_string(&out, name, strlen(name));
    if (rc == 0) rc = sl_text_append_str(&out, ",\"format\":");
    if (rc == 0) rc = sl_text_append_json_string(&out, s->type, strlen(s->type));
    snprintf(numbers, sizeof numbers, ",\"count\":%lld,\"nulls\":%lld", (long long)s->count,
             (long long)s->null_count);
    if (rc == 0) rc = sl_text_append_str(&out, numbers);
    const char* names[2] = {",\"min\":", ",\"max\":"};
    const char* values[2] = {s->min, s->max};
    const int64_t lens[2] = {s->min_len, s->max_len};
    for (int k = 0; k < 2 && rc == 0; ++k) {
      rc = sl_text_append_str(&out, names[k]);
      if (rc == 0) {
        rc = s->has_min_max ? sl_text_append_json_string(&out, values[k], (size_t)lens[k])
                            : sl_text_append_str(&out, "null");
      }
    }
    if (rc == 0) {
      rc = sl_text_append_str(&out, s->from_metadata ? ",\"source\":\"metadata\""
                                    : stored_only  ? ",\"source\":\"none\""
                                                   : ",\"source\":\"computed\"");
    }
    if (rc == 0 && s->has_min_max) {
      snprintf(numbers, sizeof numbers, ",\"min_exact\":%s,\"max_exact\":%s",
               s->min_exact ? "true" : "false", s->max_exact ? "true" : "false");
      rc = sl_text_append_str(&out, numbers);
    }
    if (rc == 0) rc = sl_text_append_char(&out, '}');
  }
  if (rc == 0) rc = sl_text_append_str(&out, "]\n");
  if (rc == 0) fputs(sl_text_cstr(&out), stdout);
  sl_text_reset(&out);
  if (rc != 0) {
    cli_error("out of memory");
    return CLI_ERROR;
  }
  return CLI_OK;
}

/// A name or a min/max on one line, every byte visible (sl_escaped, as
/// `sluice schema` spells names); cut to `cap` (a bound may be 64 KiB).
static const char* one_line(const char* s, int64_t len, char* buf, size_t cap) {
  return sl_escaped(s, (size_t)len, 0, buf, cap);
}

/// Screen columns of UTF-8 text (one per character: escaped names and
/// bounds are ASCII or printable UTF-8).
static int columns_of(const char* s) {
  int n = 0;
  for (; *s != '\0'; ++s) n += ((unsigned char)*s & 0xC0) != 0x80;
  return n;
}

/// A cell is at most this wide, cut with "..." (a bound may be 64 KiB; a
/// struct's type as long): wider ones pushed the columns after them right.
#define STATS_CELL_COLUMNS 40

static int width_of(const char* s, int at_least) {
  int w = columns_of(s);
  return w > at_least ? (w < STATS_CELL_COLUMNS ? w : STATS_CELL_COLUMNS) : at_least;
}

/// `s` padded with spaces to `width` columns, cut to STATS_CELL_COLUMNS.
static void print_cell(const char* s, int width) {
  int shown = 0;
  if (columns_of(s) <= STATS_CELL_COLUMNS) {
    fputs(s, stdout);
    shown = columns_of(s);
  } else {
    const char* p = s;
    while (shown < STATS_CELL_COLUMNS - 3) {  // whole characters
      const char* next = p + 1;
      while (((unsigned char)*next & 0xC0) == 0x80) ++next;
      p = next;
      ++shown;
    }
    fwrite(s, 1, (size_t)(p - s), stdout);
    fputs("...", stdout);
    shown += 3;
  }
  for (; shown < width; ++shown) putchar(' ');
}

static void print_text(const struct sluice_column_stats* stats, int64_t n,
                       const struct ArrowSchema* schema) {
  int w_name = 6, w_type = 4, w_min = 3, w_max = 3;
  char type[512], cell[512], cell2[512], name[512];
  for (int64_t i = 0; i < n; ++i) {
    // Names are escaped as values are: a newline in one would split its row.
    w_name = width_of(one_line(stats[i].name, (int64_t)strlen(stats[i].name), name, sizeof name),
                      w_name);
    w_type = width_of(type_of(schema, &stats[i], i, type, sizeof type), w_type);
    if (stats[i].has_min_max) {
      const char* shown = one_line(stats[i].min, stats[i].min_len, cell, sizeof cell);
      w_min = width_of(shown, w_min - !stats[i].min_exact) + !stats[i].min_exact;
      shown = one_line(stats[i].max, stats[i].max_len, cell, sizeof cell);
      w_max = width_of(shown, w_max - !stats[i].max_exact) + !stats[i].max_exact;
    }
  }
  if (w_min > STATS_CELL_COLUMNS) w_min = STATS_CELL_COLUMNS;
  if (w_max > STATS_CELL_COLUMNS) w_max = STATS_CELL_COLUMNS;
  printf("%-*s  %-*s  %12s  %12s  %-*s  %s\n", w_name, "column", w_type, "type", "count",
         "nulls", w_min, "min", "max");
  int any_metadata = 0, any_inexact = 0;
  for (int64_t i = 0; i < n; ++i) {
    const struct sluice_column_stats* s = &stats[i];
    // ~ marks a bound that is not the actual extreme (truncated or widened,
    // or a string/binary extreme over 64 KiB).
    char min_cell[520], max_cell[520];
    snprintf(min_cell, sizeof min_cell, "%s%s", s->has_min_max && !s->min_exact ? "~" : "",
             s->has_min_max ? one_line(s->min, s->min_len, cell, sizeof cell) : "");
    snprintf(max_cell, sizeof max_cell, "%s%s", s->has_min_max && !s->max_exact ? "~" : "",
             s->has_min_max ? one_line(s->max, s->max_len, cell2, sizeof cell2) : "");
    print_cell(one_line(s->name, (int64_t)strlen(s->name), name, sizeof name), w_name);
    fputs("  ", stdout);
    print_cell(type_of(schema, s, i, type, sizeof type), w_type);
    printf("  %12lld  %12lld  ", (long long)s->count, (long long)s->null_count);
    print_cell(min_cell, w_min);
    fputs("  ", stdout);
    print_cell(max_cell, s->from_metadata ? w_max : 0);  // (the marks line up)
    puts(s->from_metadata ? "  *" : "");
    any_metadata |= s->from_metadata;
    any_inexact |= s->has_min_max && (!s->min_exact || !s->max_exact);
  }
  if (any_metadata) puts("* from stored metadata (no values decoded)");
  if (any_inexact) {
    puts("~ a bound, not the extreme: stored metadata truncated or widened it, or the value"
         " is longer than 64 KiB");
  }
}

/// sluice_dataset_stats on a helper thread, so that this one can show that
/// work is going on (the library reports no progress of its own).
struct stats_job {
  struct sluice_dataset* dataset;
  struct sluice_column_stats* stats;
  int64_t n;
  struct sluice_error error;
  int rc;
  int done;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
};

static void* stats_thread(void* arg) {
  struct stats_job* job = arg;
  int rc = sluice_dataset_stats(job->dataset, &job->stats, &job->n, &job->error);
  pthread_mutex_lock(&job->mutex);
  job->rc = rc;
  job->done = 1;
  pthread_cond_signal(&job->cond);
  pthread_mutex_unlock(&job->mutex);
  return NULL;
}

static double seconds_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

/// Runs the job; with `show`, draws the elapsed time on stderr after a second.
static void run_stats(struct stats_job* job, int show) {
  pthread_t thread;
  if (!show || pthread_mutex_init(&job->mutex, NULL) != 0) {
    job->rc = sluice_dataset_stats(job->dataset, &job->stats, &job->n, &job->error);
    return;
  }
  if (pthread_cond_init(&job->cond, NULL) != 0) {
    pthread_mutex_destroy(&job->mutex);
    job->rc = sluice_dataset_stats(job->dataset, &job->stats, &job->n, &job->error);
    return;
  }
  if (pthread_create(&thread, NULL, stats_thread, job) != 0) {
    job->rc = sluice_dataset_stats(job->dataset, &job->stats, &job->n, &job->error);
  } else {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int drawn = 0;
    pthread_mutex_lock(&job->mutex);
    while (!job->done) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 100000000;
      if (until.tv_nsec >= 1000000000) {
        until.tv_nsec -= 1000000000;
        until.tv_sec += 1;
      }
      pthread_cond_timedwait(&job->cond, &job->mutex, &until);
      double elapsed = seconds_since(&start);
      if (!job->done && elapsed >= 1.0) {
        fprintf(stderr, "\r\033[Kcomputing statistics  %.1fs", elapsed);
        fflush(stderr);
        drawn = 1;
      }
    }
    pthread_mutex_unlock(&job->mutex);
    pthread_join(thread, NULL);
    if (drawn) {
      fputs("\r\033[K", stderr);
      fflush(stderr);
    }
  }
  pthread_cond_destroy(&job->cond);
  pthread_mutex_destroy(&job->mutex);
}

int cli_cmd_stats(const struct cli_options* options) {
  if (options->metadata && options->filter != NULL) {
    fprintf(stderr, "sluice stats: --metadata says what the stored statistics say of every "
            "row; it cannot apply --filter (drop one of them)\n");
    return CLI_USAGE;
  }
  if (options->metadata && options->limit >= 0) {  // the footer speaks of every row
    fprintf(stderr, "sluice stats: --metadata says what the stored statistics say of every "
            "row; it cannot stop at -n/--limit rows (drop one of them)\n");
    return CLI_USAGE;
  }
  struct sluice_dataset* dataset = NULL;
  int status = cli_open(options, options->n_positional, &dataset);
  if (status != CLI_OK) return status;
  struct stats_job job;
  memset(&job, 0, sizeof job);
  job.dataset = dataset;
  if (options->metadata) {  // reads a footer at most: no progress to show
    job.rc = sluice_dataset_stored_stats(dataset, &job.stats, &job.n, &job.error);
  } else {
    run_stats(&job, !options->quiet && isatty(STDERR_FILENO));
  }
  struct sluice_column_stats* stats = job.stats;
  int64_t n = job.n;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  if (job.rc != 0) {
    cli_error("%s", job.error.message);
    sluice_dataset_close(dataset);
    return CLI_ERROR;
  }
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  if (sluice_dataset_schema(dataset, &schema, &error) != 0) schema.release = NULL;
  int any_metadata = 0;
  for (int64_t i = 0; i < n; ++i) any_metadata |= stats[i].from_metadata;
  if (options->metadata && !any_metadata && n > 0 && !options->quiet) {
    fputs("sluice: note: this format stores no statistics (-1 = unknown)\n", stderr);
  }
  status = options->json ? print_json(stats, n, &schema, options->metadata)
                         : (print_text(stats, n, &schema), CLI_OK);
  if (schema.release != NULL) schema.release(&schema);
  sluice_stats_free(stats, n);
  if (status == CLI_OK) cli_report_skipped(dataset, options);
  sluice_dataset_close(dataset);
  return status;
}

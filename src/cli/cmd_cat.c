// sluice cat: the table on a terminal (or a pipe), machine formats with -t,
// a file with -o. Streams batch by batch; nothing holds the whole table.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/sl_error.h"
#include "format/sl_format.h"
#include "io/sl_compression.h"
#include "io/sl_sink.h"
#include "io/sl_source.h"

static int terminal_width(void) {
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  return 0;
}

/// The aligned table goes to standard output unless another format is
/// asked for (-t, or -o's extension), and to -o with -t table or a .txt
/// name (`sluice cat data.arrow -o preview.txt`). *unknown = 1 for an -o
/// whose extension names no format: an error, never a preview under a name
/// that promises another format (t.json, x.csv.lz4).
static int wants_table(const struct cli_options* options, int* unknown) {
  *unknown = 0;
  if (options->to != NULL) return strcmp(options->to, "table") == 0;
  if (options->output == NULL || strcmp(options->output, "-") == 0) return 1;
  if (sl_format_writer_for_path(options->output) != NULL) return 0;
  // A terminal or pipe (/dev/stdout, /dev/tty, a FIFO) has no extension.
  struct stat st;
  if (stat(options->output, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return 1;
  size_t n = strlen(options->output);
  if (n >= 4 && strcasecmp(options->output + n - 4, ".txt") == 0) return 1;
  *unknown = 1;
  return 0;
}

/// The table to -o commits as the writers do (sl_sink: a temporary file
/// renamed over OUT once complete), so that an error, or `cat x.txt -o
/// x.txt` (whose input truncating OUT emptied), leaves an existing OUT as it
/// was. The table is a preview (first and last rows), small enough to be
/// built in memory first. Nothing is printed until the input has been read
/// to its end, so a CSV column that widens past the inference sample is
/// read again with the wider type, as convert and cat -o do.
static int cat_table(struct sluice_dataset* dataset, struct ArrowArrayStream* stream,
                     const struct cli_options* options) {
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  const int to_file = options->output != NULL && strcmp(options->output, "-") != 0;
  char* text = NULL;
  size_t size = 0;
  FILE* out = to_file ? open_memstream(&text, &size) : stdout;
  char shown[4096];  // the output in messages, as the sink shows it
  if (to_file) sl_location_shown(options->output, shown, sizeof shown);
  if (out == NULL) {
    cli_error("%s: %s", shown, strerror(errno));
    return CLI_ERROR;
  }
  int rc;
  while ((rc = cli_print_table(stream, out, to_file ? 0 : terminal_width(), &error)) != 0 &&
         cli_read_again(dataset, options, stream, &error)) {
    memset(&error, 0, sizeof error);  // (a failed read printed nothing to out)
  }
  if (to_file && fclose(out) != 0 && rc == 0) {
    rc = sl_error_set(&error, errno, "%s: %s", shown, strerror(errno));
  }
  if (rc == 0 && to_file) {
    struct sl_sink* sink = NULL;
    rc = sl_sink_open(options->output, NULL, &sink, &error);
    if (rc == 0) rc = sl_sink_write(sink, text, (int64_t)size, &error);
    if (rc == 0) {
      rc = sl_sink_commit(sink, &error);
    } else {
      sl_sink_abort(sink);
    }
  }
  free(text);
  if (rc != 0) {
    cli_error("%s", error.message);
    return CLI_ERROR;
  }
  return CLI_OK;
}

int cli_write_stream(struct ArrowArrayStream* stream, const char* location,
                     const struct cli_options* options, struct sluice_error* error) {
  struct sluice_write_options write_options;
  sluice_write_options_init(&write_options);
  write_options.format = options->to;
  write_options.compression = options->compression;
  write_options.format_options = options->write_options;
  write_options.tls_insecure = options->insecure;
  write_options.ca_bundle = options->ca_bundle;
  write_options.timeout_s = options->timeout_s;
  write_options.no_fsync = options->no_fsync;
  write_options.s3 = &options->s3;
  write_options.partition_by = (const char* const*)options->partition_by;
  write_options.n_partition_by = (int64_t)options->n_partition_by;
  write_options.max_partitions = options->max_partitions;
  write_options.existing_data_behavior = options->existing_data;
  write_options.max_rows_per_file = options->max_rows_per_file;
  write_options.batch_metadata = cli_progress_batch_metadata;
  write_options.batch_metadata_user = stream->private_data;
  // Standard output leaves nothing to undo: a signal kills it at once.
  int undoable = strcmp(location, "-") != 0 && options->interrupt != NULL;
  if (undoable) {
    write_options.cancelled = cli_interrupt_cancelled;
    write_options.cancelled_user = options->interrupt;
    cli_interrupt_write_begin(options->interrupt);
  }
  int rc = sluice_write(stream, location, &write_options, error);
  if (undoable) cli_interrupt_write_end(options->interrupt, rc);
  if (rc != 0 && error->message[0] == '\0') snprintf(error->message, sizeof error->message, "%s", strerror(rc));
  return rc != 0 ? CLI_ERROR : CLI_OK;
}

/// Whether the output is a binary format (-t arrows, parquet, avro, ...) to
/// standard output, and that is a terminal.
static int binary_to_terminal(const struct cli_options* options) {
  if (options->to == NULL || (options->output != NULL && strcmp(options->output, "-") != 0))
    return 0;
  const int text = strcmp(options->to, "table") == 0 || strcmp(options->to, "csv") == 0 ||
                   strcmp(options->to, "jsonl") == 0;
  return !text && isatty(STDOUT_FILENO);
}

int cli_cmd_cat(const struct cli_options* options) {
  // Usage problems are found before reading anything.
  if (binary_to_terminal(options)) {  // (as gzip and zstd refuse: the bytes would garble it)
    cli_error("-t %s writes binary data, not to a terminal: give -o FILE or redirect the output "
              "(`> out`, `| consumer`), or -t csv / jsonl / table to read it here", options->to);
    return CLI_USAGE;
  }
  struct sluice_dataset* dataset = NULL;
  struct ArrowArrayStream stream;
  int status = cli_open_stream(options, options->n_positional, &dataset, &stream);
  if (status != CLI_OK) return status;
  int unknown = 0;
  const int table = wants_table(options, &unknown);
  if (table && options->output != NULL &&
      (sl_compression_suffix_length(options->output) > 0 ||
       sl_unwritten_compression_suffix_length(options->output) > 0 ||
       sl_archive_suffix_length(options->output) > 0)) {
    // The text table is not compressed: plain text under out.gz would not
    // read as what its name says.
    char shown[4096];
    sl_location_shown(options->output, shown, sizeof shown);
    cli_error("%s: the text table is written uncompressed (name it .txt)", shown);
    status = CLI_USAGE;
  } else if (table) {
    status = cat_table(dataset, &stream, options);
  } else if (unknown) {
    char shown[4096];
    sl_location_shown(options->output, shown, sizeof shown);
    cli_error("%s: no output format has this extension (give -t FORMAT, or -t table for the "
              "text table)", shown);
    status = CLI_USAGE;
  } else {
    const char* to = options->output != NULL ? options->output : "-";
    status = cli_write_read_stream(dataset, &stream, to, options);
  }
  return cli_close_stream(dataset, &stream, options, status);
}

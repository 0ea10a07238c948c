// sluice cat: the table on a terminal (or a pipe), machine formats with -t,
// a file with -o. Streams batch by batch; nothing holds the whole table.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "format/sl_format.h"

static int terminal_width(void) {
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  return 0;
}

/// The table goes to -o when its extension names no writer and no -t was
/// given, e.g. `sluice cat data.arrow -o preview.txt`.
static int wants_table(const struct cli_options* options) {
  if (options->to != NULL) return strcmp(options->to, "table") == 0;
  if (options->output == NULL) return 1;
  return sl_format_writer_for_path(options->output) == NULL;
}

static int cat_table(struct ArrowArrayStream* stream, const struct cli_options* options) {
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  FILE* out = stdout;
  int width = 0;
  if (options->output != NULL && strcmp(options->output, "-") != 0) {
    out = fopen(options->output, "w");
    if (out == NULL) {
      cli_error("%s: %s", options->output, strerror(errno));
      return CLI_ERROR;
    }
  } else {
    width = terminal_width();
  }
  int rc = cli_print_table(stream, out, width, &error);
  int status = CLI_OK;
  if (rc != 0) {
    cli_error("%s", error.message);
    status = CLI_ERROR;
  }
  if (out != stdout && fclose(out) != 0 && status == CLI_OK) {
    cli_error("%s: %s", options->output, strerror(errno));
    status = CLI_ERROR;
  }
  return status;
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

int cli_cmd_cat(const struct cli_options* options) {
  struct sluice_dataset* dataset = NULL;
  struct ArrowArrayStream stream;
  int status = cli_open_stream(options, options->n_positional, &dataset, &stream);
  if (status != CLI_OK) return status;
  if (wants_table(options)) {
    status = cat_table(&stream, options);
  } else {
    const char* to = options->output != NULL ? options->output : "-";
    status = cli_write_read_stream(dataset, &stream, to, options);
  }
  return cli_close_stream(dataset, &stream, options, status);
}

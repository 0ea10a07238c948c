// sluice convert SRC DST: the output format from -t or DST's extension.
#include <string.h>

#include "cli.h"
#include "format/sl_format.h"

int cli_cmd_convert(const struct cli_options* options) {
  const char* destination = options->positional[1];
  // Usage problems are found before reading anything.
  if (options->to == NULL && strcmp(destination, "-") == 0) {
    cli_error("convert: writing to standard output needs -t FORMAT");
    return CLI_USAGE;
  }
  if (options->to != NULL && strcmp(options->to, "table") == 0) {
    cli_error("convert: 'table' is not a file format (use 'sluice cat')");
    return CLI_USAGE;
  }
  if (options->to == NULL && sl_format_writer_for_path(destination) == NULL) {
    cli_error("convert: cannot tell the format of '%s' from its extension; use -t", destination);
    return CLI_USAGE;
  }
  struct sluice_dataset* dataset = NULL;
  int status = cli_open(options, options->positional[0], &dataset);
  if (status != CLI_OK) return status;
  struct ArrowArrayStream stream;
  memset(&stream, 0, sizeof stream);
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  if (cli_progress_stream(dataset, options, &stream, &error) != 0) {
    cli_error("%s", error.message);
    sluice_dataset_close(dataset);
    return CLI_ERROR;
  }
  status = cli_write_stream(&stream, destination, options);
  if (status == CLI_OK) cli_report_skipped(dataset, options);
  stream.release(&stream);
  sluice_dataset_close(dataset);
  return status;
}

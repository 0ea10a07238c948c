// sluice convert SRC... DST: the output format from -t or DST's extension.
#include <string.h>

#include "cli.h"
#include "core/sl_value_text.h"
#include "format/sl_format.h"

int cli_cmd_convert(const struct cli_options* options) {
  const char* destination = options->positional[options->n_positional - 1];
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
    char shown[4096];
    sl_escaped(destination, strlen(destination), '\'', shown, sizeof shown);
    const struct sl_format_reader* read_only = sl_format_reader_detect(destination, NULL, 0);
    if (read_only != NULL && sl_format_writer_find(read_only->name) == NULL) {  // (x.ldr)
      char written[256];
      cli_error("convert: '%s' names a %s file, a format sluice reads but does not write "
                "(it writes %s)", shown, read_only->name, cli_writer_list(written, sizeof written));
    } else {
      cli_error("convert: cannot tell the format of '%s' from its extension; use -t", shown);
    }
    return CLI_USAGE;
  }
  struct sluice_dataset* dataset = NULL;
  struct ArrowArrayStream stream;
  int status = cli_open_stream(options, options->n_positional - 1, &dataset, &stream);
  if (status != CLI_OK) return status;
  status = cli_write_read_stream(dataset, &stream, destination, options);
  return cli_close_stream(dataset, &stream, options, status);
}

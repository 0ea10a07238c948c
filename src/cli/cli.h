// The sluice command: shared option parsing, dataset opening, progress and
// error reporting for the subcommands (one file per subcommand).
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "sluice.h"

/// Exit statuses: data or I/O errors vs. a command line we cannot run.
enum { CLI_OK = 0, CLI_ERROR = 1, CLI_USAGE = 2 };

/// Which options a subcommand accepts (the global ones are always accepted).
enum cli_option_bit {
  CLI_OPT_COLUMNS = 1 << 0,
  CLI_OPT_LIMIT = 1 << 1,
  CLI_OPT_FORMAT = 1 << 2,
  CLI_OPT_TO = 1 << 3,
  CLI_OPT_OUTPUT = 1 << 4,
  CLI_OPT_COMPRESSION = 1 << 5,
  CLI_OPT_JSON = 1 << 6,
  CLI_OPT_WRITE_OPTION = 1 << 7,  ///< -W KEY=VALUE
  CLI_OPT_METADATA = 1 << 8,      ///< stats --metadata
  CLI_OPT_PARTITION_BY = 1 << 9,  ///< convert --partition-by
  CLI_OPT_MAX_PARTITIONS = 1 << 10,
  CLI_OPT_MAX_ROWS_PER_FILE = 1 << 11,
  CLI_OPT_EXISTING_DATA = 1 << 12,
  CLI_OPT_NO_FSYNC = 1 << 13,  ///< cat/convert --no-fsync (no output elsewhere)
};

/// Sources (and a destination) a command takes at most.
#define CLI_MAX_POSITIONAL 64

/// Everything parsed from the command line. Strings point into argv, except
/// `columns`, a malloc'd array of pointers into `columns_storage`.
struct cli_options {
  const char* command;
  const char* positional[CLI_MAX_POSITIONAL];
  int n_positional;
  char** columns;
  size_t n_columns;
  char* columns_storage;  ///< the split names (commas replaced by NULs)
  char* columns_joined;   ///< every -c so far, joined with commas
  int64_t limit;             ///< -1 = none
  const char* format;        ///< -f: input format
  const char* to;            ///< -t: output format
  const char* output;        ///< -o
  const char* compression;
  /// Format options gathered from -O KEY=VALUE, --schema and --reader-schema,
  /// joined as "k=v,k=v" (malloc'd; NULL = none).
  char* format_options;
  /// Writer options gathered from -W KEY=VALUE, joined as "k=v,k=v"
  /// (malloc'd; NULL = none).
  char* write_options;
  int json;
  int metadata;           ///< stats --metadata: stored statistics only
  int threads;
  int ordered;
  int64_t budget;
  int64_t batch_rows;     ///< --batch-rows N (0 = the format's choice)
  int quiet;
  int help;
  int insecure;           ///< --insecure: skip TLS certificate checks
  int no_hive;            ///< --no-hive: no partition columns
  int union_by_name;      ///< --union-by-name: objects' columns matched by name
  int no_fsync;           ///< --no-fsync: commit outputs without fsync
  char** partition_by;    ///< --partition-by COLS, split (malloc'd; NULL = none)
  size_t n_partition_by;
  char* partition_by_storage;  ///< the split names (malloc'd)
  int64_t max_partitions; ///< --max-partitions N (0 = the library's default)
  int existing_data;       ///< --existing-data (sluice_existing_data_behavior)
  int64_t max_rows_per_file;  ///< --max-rows-per-file N (0 = no limit)
  struct sluice_s3_options s3;  ///< --profile, --region, --endpoint-url, ...
  const char* partitions; ///< --partitions FILTER (NULL = all objects)
  const char* filter;     ///< --filter FILTER (NULL = all rows)
  const char* ca_bundle;  ///< --ca-bundle FILE
  double timeout_s;       ///< --timeout SECONDS (0 = the defaults)
  struct cli_interrupt* interrupt;  ///< main's (NULL: none)
};

/// Ctrl-C and SIGTERM/SIGHUP handling (cli_interrupt.c): a write in progress
/// is cancelled and undone before the process dies of the signal.
struct cli_interrupt {
  sigset_t signals;   ///< those taken (not ignored when the command started)
  pthread_t watcher;
  int started;        ///< the watcher runs (else signals act as usual)
  atomic_int state;   ///< 0 idle, -1 writing, > 0 the signal that asked a write to stop
  atomic_int stopping;  ///< set by cli_interrupt_stop before it wakes the watcher
  int wake;           ///< a signal in `signals`, sent to the watcher to end it
};

/// Blocks the signals in this thread and those it starts from now on, and
/// starts the watcher that takes them. Call before any other thread starts.
void cli_interrupt_start(struct cli_interrupt* in);
/// Stops the watcher (the signals stay blocked: the process is ending).
void cli_interrupt_stop(struct cli_interrupt* in);
/// sluice_write_options.cancelled: a signal came during the write.
int cli_interrupt_cancelled(void* user);
/// Brackets a write to a file or object. At its end (`rc`: sluice_write's
/// result) the process dies of the signal that cancelled it, if one did.
void cli_interrupt_write_begin(struct cli_interrupt* in);
void cli_interrupt_write_end(struct cli_interrupt* in, int rc);

struct cli_command {
  const char* name;
  const char* summary;
  const char* usage;    ///< synopsis and options, printed by --help
  unsigned options;     ///< enum cli_option_bit accepted
  int min_positional, max_positional;
  int (*run)(const struct cli_options* options);
};

/// Prints "sluice: <message>" on stderr.
void cli_error(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/// Parses "123", "64K", "1.5M", "2G" (powers of 1024). 0 or EINVAL.
int cli_parse_bytes(const char* text, int64_t* out);
/// Parses a non-negative integer. 0 or EINVAL.
int cli_parse_count(const char* text, int64_t* out);

/// Opens the first `n_sources` positional arguments (one location, or
/// several read as one table in that order) with the options (-f, -c,
/// --limit, --threads, --budget, --ordered, --no-hive). Prints the error and
/// returns CLI_ERROR on failure.
int cli_open(const struct cli_options* options, int n_sources, struct sluice_dataset** out);

/// After a successful read: a warning on stderr (unless --quiet) when the
/// reader dropped bad rows because -O bad_rows=skip asked it to.
void cli_report_skipped(struct sluice_dataset* dataset, const struct cli_options* options);

/// Whether `name` is among the formats sluice writes (or reads).
int cli_writer_known(const char* name);
int cli_reader_known(const char* name);
/// The formats sluice writes, ", "-separated, into out (cap bytes): out.
const char* cli_writer_list(char* out, size_t cap);

/// A stream over a dataset's scan that draws a progress bar on stderr (when
/// it is a terminal, the work lasts over a second and --quiet is off). The
/// dataset must outlive the stream.
int cli_progress_stream(struct sluice_dataset* dataset, const struct cli_options* options,
                        struct ArrowArrayStream* out, struct sluice_error* error);

/// cli_open, then cli_progress_stream over the dataset: what cat and convert
/// read. Prints the error and returns CLI_ERROR (nothing left open) on failure.
int cli_open_stream(const struct cli_options* options, int n_sources,
                    struct sluice_dataset** dataset, struct ArrowArrayStream* stream);

/// After a failed read of a stream from cli_open_stream (error `why`): 1
/// when it failed on a CSV value that did not fit the type inferred for its
/// column and that column is now wider, with *stream a new scan from the
/// start (and a note on stderr); 0 (and *stream released) otherwise, *why
/// then the error to report.
int cli_read_again(struct sluice_dataset* dataset, const struct cli_options* options,
                   struct ArrowArrayStream* stream, struct sluice_error* why);

/// cli_write_stream of a stream from cli_open_stream, written again from the
/// start (with a note on stderr) each time it fails on a CSV value that did
/// not fit the type inferred for its column and widened it, unless writing
/// to standard output or in place (a device, FIFO or socket: -o /dev/stdout). Prints the error and returns CLI_ERROR on failure;
/// *stream may be a new scan, or released.
int cli_write_read_stream(struct sluice_dataset* dataset, struct ArrowArrayStream* stream,
                          const char* location, const struct cli_options* options);

/// Ends a read from cli_open_stream whose consumer returned `status`: the
/// skipped-rows warning when it succeeded, then the stream and the dataset
/// released. Returns `status`.
int cli_close_stream(struct sluice_dataset* dataset, struct ArrowArrayStream* stream,
                     const struct cli_options* options, int status);

/// A short human spelling of a field's type: "int64", "list<string>",
/// "struct<a: int32, b: string>", "dictionary<string, int32>".
/// Writes at most `cap` bytes (truncated with "…").
void cli_type_name(const struct ArrowSchema* schema, char* out, size_t cap);

/// The table view of `cat`: streams `stream`, keeps the first and last rows,
/// prints aligned columns to `out`. `width` is the terminal width (0 = no
/// limit).
int cli_print_table(struct ArrowArrayStream* stream, FILE* out, int width,
                    struct sluice_error* error);

/// For a stream from cli_progress_stream: sluice_write_options.batch_metadata
/// that gives each record batch message the custom metadata its source batch
/// had (an IPC message's), and with --unordered also the batch's position in
/// plan order, as "sluice:split" and "sluice:batch" (decimal), so that a
/// consumer of an unordered IPC stream can restore the order.
int cli_progress_batch_metadata(void* progress_stream, const struct ArrowArray* batch,
                                const char** metadata);

/// Writes a stream from cli_progress_stream with sluice_write to `location`
/// ("-" = standard output) as -t, -c/--compression and -W say; batches keep
/// their custom metadata, and with --unordered carry their positions
/// (cli_progress_batch_metadata).
/// CLI_ERROR with the reason in `error` on failure.
int cli_write_stream(struct ArrowArrayStream* stream, const char* location,
                     const struct cli_options* options, struct sluice_error* error);

int cli_cmd_cat(const struct cli_options* options);
int cli_cmd_schema(const struct cli_options* options);
int cli_cmd_convert(const struct cli_options* options);
int cli_cmd_stats(const struct cli_options* options);

#endif

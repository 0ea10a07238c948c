// sluice: read, convert and inspect tables. Dispatches to one file per
// subcommand; this file owns the command line.
#include <getopt.h>
#include <locale.h>
#if defined(__GLIBC__)
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "core/sl_alloc.h"
#include "core/sl_options.h"
#include "core/sl_value_text.h"

#define GLOBAL_OPTIONS_HELP                                                   \
  "Global options:\n"                                                         \
  "  --threads N        decoding threads (default: one per core; two per core\n"\
  "                     for http(s):// and s3:// inputs)\n"                   \
  "  --ordered          deliver batches in file order (default)\n"            \
  "  --unordered        deliver batches as they are decoded (Arrow IPC output\n" \
  "                     tags each batch with sluice:split / sluice:batch)\n"  \
  "  --budget BYTES     decoded bytes in flight (K/M/G suffixes; 256M)\n"     \
  "  --batch-rows N     rows per batch where the format chooses (CSV, Avro,\n" \
  "                     Parquet, Cassandra; Python's batch_rows=)\n"         \
  "  -O, --option K=V   a format option, repeatable (CSV: delimiter, quote,\n"  \
  "                     header, comment, null_values, ...; all in\n"        \
  "                     docs/formats.md)\n"                                   \
  "  --schema SPEC      column types, e.g. 'a:int32,b:string' (CSV; %XX in a name\n"  \
  "                     spells , | : or %, as in 'a%2Cb:int64')\n"          \
  "  --reader-schema F  Avro reader schema file for schema resolution\n"     \
  "  --length-prefix K  lenprefix framing: varint (default), u8, u16le,\n"    \
  "                     u16be, u32le, u32be, u64le, u64be\n"                \
  "  --insecure         https/s3 (reads and writes): do not verify TLS\n"   \
  "                     certificates\n"                                     \
  "  --ca-bundle FILE   https/s3 (reads and writes): trust the CA\n"        \
  "                     certificates in FILE\n"                             \
  "  --timeout SECONDS  https/s3: a request that cannot connect, or brings no\n" \
  "                     byte, for this long fails and is retried (6 tries;\n" \
  "                     default 30 s to connect, 60 s without a byte);\n" \
  "                     cql: to connect and for each answer (default 120 s)\n" \
  "  --profile NAME     s3: the AWS profile (default: AWS_PROFILE, else\n"   \
  "                     'default'); credentials come from it or AWS_*\n"   \
  "  --region R         s3: the region (default: AWS_REGION, the profile)\n" \
  "  --endpoint-url U   s3: the endpoint, e.g. http://127.0.0.1:9000\n"    \
  "  --s3-addressing S  s3: path or virtual (default: by endpoint, bucket)\n" \
  "  --no-sign-request  s3: anonymous requests (public buckets)\n"          \
  "  --part-size BYTES  s3 outputs: multipart part size, 5M to 5G (default\n" \
  "                     8M; less is 5M)\n"                                  \
  "  --no-hive          many objects: no columns from key=value directories\n" \
  "                     (default: sales/year=2024/x.parquet adds 'year')\n"  \
  "  --union-by-name    many objects: match their columns by name; rows are\n" \
  "                     null in the columns their object lacks (default:\n"  \
  "                     every object must have the same columns)\n"          \
  "  --filter F         only the rows that pass F, e.g. 'x>5,city=Paris|Rome,\n" \
  "                     day>=2024-01-01' (=, !=, <, <=, >, >=; ',' and; '|'\n" \
  "                     or; ';' between groups any of which may hold; %XX\n" \
  "                     escapes; a null passes none): conditions on\n"     \
  "                     partition keys choose objects, Parquet row groups\n" \
  "                     their statistics, Bloom filters or dictionaries\n"  \
  "                     exclude are not read\n"                             \
  "  --partitions F     only the objects whose key=value directories pass F,\n" \
  "                     e.g. 'year>=2023,city=Paris|Rome' (=, !=, <, <=, >,\n" \
  "                     >=; ',' and; '|' or; ';' between alternatives; %XX\n"  \
  "                     escapes)\n"                                          \
  "  -q, --quiet        no progress bar\n"                                    \
  "  -h, --help         show help\n"

/// What SRC can be (after the options in every help).
#define SOURCES_HELP                                                          \
  "\n"                                                                        \
  "SRC: a path, '-' (standard input), http(s)://..., s3://bucket/key; or many\n" \
  "objects read as one table: a directory, a glob ('data/*.csv',\n"          \
  "'logs/**/*.parquet'), s3://bucket/prefix/ or s3://bucket/prefix/*.parquet.\n" \
  "Several SRC are read as one table, in the order given. A Cassandra table:\n"  \
  "cql://[user[:password]@]host[:port]/keyspace.table (or SLUICE_CQL_USER and\n" \
  "SLUICE_CQL_PASSWORD; -O consistency=..,page_rows=N,splits=N,\n"          \
  "compression=lz4; TLS: -O tls=true[,tls_cert=FILE,tls_key=FILE]).\n"

/// The writer options of cat and convert (-O is for the reader).
#define WRITE_OPTION_HELP                                                     \
  "  -W, --write-option KEY=VALUE\n"                                         \
  "                      an output format option, repeatable (CSV:\n"        \
  "                      delimiter=comma|semicolon|tab|pipe|space|<char>,\n" \
  "                      header=true|false, null=TEXT, quote=<char>|none,\n" \
  "                      line_terminator=lf|crlf, float_format=shortest|point,\n" \
  "                      timestamp_format=space|iso; Avro: codec=null|deflate|\n" \
  "                      snappy|zstandard|bzip2|xz|lzma, level=N, block_size=BYTES,\n" \
  "                      enums=true|false;\n"                                 \
  "                      Parquet: compression_level=N, row_group_size=ROWS,\n" \
  "                      page_size=BYTES, data_page_version=1|2,\n"          \
  "                      dictionary=true|false, write_statistics=true|false,\n" \
  "                      bloom_filters=COL|COL; Arrow IPC:\n"                \
  "                      compression=lz4|zstd|none, dictionary_deltas=true|false;\n" \
  "                      docs/formats.md lists them all)\n"                  \
  "      --no-fsync      a local output file is renamed into place without\n" \
  "                      syncing it to disk first (faster; not crash-safe)\n"

static const struct cli_command k_commands[] = {
    {"cat", "print a table, or write it in a machine format",
     "Usage: sluice cat SRC... [-c COLS] [--limit N] [-f FMT] [-t OUTFMT] [-o OUT]\n"
     "\n"
     "Prints SRC as an aligned table (first and last rows of large tables), or\n"
     "writes it as OUTFMT (arrow, arrows, avro, csv, jsonl, parquet) to OUT or\n"
     "standard output.\n"
     "\n"
     "Options:\n"
     "  -c, --columns COLS  comma-separated columns to read, in this order (a column\n"
     "                      named twice comes out twice; %XX escapes: 'a%2Cb' is\n"
     "                      the column a,b; an empty item names the empty name;\n"
     "                      st.x, when no column has that name, is the field x\n"
     "                      of the struct column st, as pyarrow's read_table)\n"
     "  -n, --limit N       read at most N rows\n"
     "  -f, --format FMT    input format (default: detected)\n"
     "  -t, --to OUTFMT     output format, or 'table' (default: table)\n"
     "  -o, --output OUT    write to OUT (format from its extension; the text table\n"
     "                      with -t table or a .txt name; another name is an error)\n"
     "      --compression C IPC: lz4, zstd, none; Avro: a codec (as -W codec=);\n"
     "                      Parquet: snappy (default), zstd, gzip, lz4, brotli,\n"
     "                      none; CSV/JSONL: gzip, zstd, bz2, xz; cql://: lz4 (the\n"
     "                      protocol's)\n"
     WRITE_OPTION_HELP,
     CLI_OPT_COLUMNS | CLI_OPT_LIMIT | CLI_OPT_FORMAT | CLI_OPT_TO | CLI_OPT_OUTPUT |
         CLI_OPT_COMPRESSION | CLI_OPT_WRITE_OPTION | CLI_OPT_NO_FSYNC,
     1, CLI_MAX_POSITIONAL, cli_cmd_cat},
    {"schema", "print the fields, types, nullability and metadata",
     "Usage: sluice schema SRC... [-f FMT] [-c COLS] [--json]\n"
     "\n"
     "Options:\n"
     "  -f, --format FMT    input format (default: detected)\n"
     "  -c, --columns COLS  only these columns (comma-separated; %XX escapes, as\n"
     "                      'a%2Cb' for the column a,b)\n"
     "      --json          print the schema as JSON\n"
     "\n"
     "The text output shows a backslash in a name or metadata as \\\\, a newline,\n"
     "tab or return as \\n, \\t, \\r, and other control bytes and bytes that are\n"
     "not UTF-8 as \\xNN. In --json a metadata value that is not UTF-8 is\n"
     "{\"base64\": \"...\"}, and a pair whose key is not UTF-8 is listed in\n"
     "\"binary_metadata\": [{\"key\": {\"base64\": ...}, \"value\": ...}].\n",
     CLI_OPT_FORMAT | CLI_OPT_JSON | CLI_OPT_COLUMNS, 1, CLI_MAX_POSITIONAL, cli_cmd_schema},
    {"convert", "write a table in another format",
     "Usage: sluice convert SRC... DST [-f FMT] [-t FMT] [--compression C] [-c COLS]\n"
     "                      [--limit N] [--partition-by COLS] [--max-partitions N]\n"
     "                      [--max-rows-per-file N] [--existing-data WHAT]\n"
     "\n"
     "The output format comes from DST's extension unless -t is given. DST may\n"
     "be a Cassandra table, cql://[user[:password]@]host[:port]/ks.table: rows\n"
     "are INSERTed by column name (-W consistency=..,batch_rows=N,in_flight=N,\n"
     "nulls=unset|null; -W create=true,partition_key=A|B,clustering_key=C\n"
     "creates the table if it is missing); not atomic, as Cassandra has no\n"
     "transactions.\n"
     "\n"
     "Options:\n"
     "  -t, --to FMT        output format (arrow, arrows, avro, csv, jsonl, parquet)\n"
     "      --compression C IPC: lz4, zstd, none; Avro: a codec (as -W codec=);\n"
     "                      Parquet: snappy (default), zstd, gzip, lz4, brotli,\n"
     "                      none; CSV/JSONL: gzip, zstd, bz2, xz; cql://: lz4 (the\n"
     "                      protocol's)\n"
     "  -c, --columns COLS  comma-separated columns to write (%XX escapes, as\n"
     "                      'a%2Cb' for the column a,b)\n"
     "  -n, --limit N       write at most N rows\n"
     "  -f, --format FMT    input format (default: detected)\n"
     "      --partition-by COLS\n"
     "                      write DST as a directory (or s3:// prefix) of Hive\n"
     "                      partitions, DST/col=value/.../part-N.EXT, one per\n"
     "                      combination of these columns' values (integers,\n"
     "                      strings, dates, booleans), which the files leave out;\n"
     "                      give the format with -t\n"
     "      --max-partitions N\n"
     "                      with --partition-by, more partitions than N is an\n"
     "                      error (default 1024)\n"
     "      --existing-data WHAT\n"
     "                      with --partition-by or --max-rows-per-file, what may\n"
     "                      be in DST already (pyarrow's and DuckDB's names):\n"
     "                      error (default: DST must be new or empty),\n"
     "                      overwrite_or_ignore (new part-N files replace files\n"
     "                      of those names, the rest stays), delete_matching\n"
     "                      (each partition written, or DST without partitions,\n"
     "                      has its files replaced, other partitions stay),\n"
     "                      append (files there stay, the new ones are named\n"
     "                      past their directory's part-N: a rerun adds its\n"
     "                      rows again)\n"
     "      --max-rows-per-file N\n"
     "                      a file holds at most N rows; the rest go on in the\n"
     "                      next file, part-1, part-2, ... (as pyarrow's\n"
     "                      write_dataset): per partition with --partition-by;\n"
     "                      without it DST is a directory (or s3:// prefix) of\n"
     "                      part-N.EXT files; give the format with -t\n"
     WRITE_OPTION_HELP,
     CLI_OPT_COLUMNS | CLI_OPT_LIMIT | CLI_OPT_FORMAT | CLI_OPT_TO | CLI_OPT_COMPRESSION |
         CLI_OPT_WRITE_OPTION | CLI_OPT_NO_FSYNC | CLI_OPT_PARTITION_BY |
         CLI_OPT_MAX_PARTITIONS | CLI_OPT_MAX_ROWS_PER_FILE | CLI_OPT_EXISTING_DATA,
     2, CLI_MAX_POSITIONAL,
     cli_cmd_convert},
    {"stats", "per column: count, nulls, min, max (computed in parallel)",
     "Usage: sluice stats SRC... [-c COLS] [-n N] [-f FMT] [--json] [--metadata]\n"
     "\n"
     "Options:\n"
     "  -c, --columns COLS  comma-separated columns (%XX escapes, as 'a%2Cb' for\n"
     "                      the column a,b)\n"
     "  -n, --limit N       look at the first N rows only\n"
     "  -f, --format FMT    input format (default: detected)\n"
     "      --json          print the statistics as JSON\n"
     "      --metadata      print what the stored metadata says (Parquet footer\n"
     "                      statistics, Arrow IPC file batch headers' counts;\n"
     "                      -1 = unknown), decoding nothing; of\n"
     "                      every row, so not with --filter or -n\n"
     "\n"
     "Figures taken from stored metadata instead of computed are marked with *\n"
     "(\"source\": \"metadata\" in JSON); bounds marked ~ are not the extremes\n"
     "(truncated or widened metadata, or a string/binary extreme over 64 KiB).\n"
     "The table shows names and bounds as 'sluice schema' shows names: a\n"
     "backslash as \\\\, a newline, tab or return as \\n, \\t, \\r, and other\n"
     "control bytes and bytes that are not UTF-8 as \\xNN.\n",
     CLI_OPT_COLUMNS | CLI_OPT_FORMAT | CLI_OPT_JSON | CLI_OPT_LIMIT | CLI_OPT_METADATA, 1,
     CLI_MAX_POSITIONAL,
     cli_cmd_stats},
};
#define N_COMMANDS (sizeof k_commands / sizeof k_commands[0])

enum {
  OPT_THREADS = 256, OPT_ORDERED, OPT_UNORDERED, OPT_BUDGET, OPT_BATCH_ROWS, OPT_COMPRESSION, OPT_JSON,
  OPT_VERSION, OPT_SCHEMA, OPT_READER_SCHEMA, OPT_LENGTH_PREFIX, OPT_INSECURE, OPT_CA_BUNDLE,
  OPT_METADATA, OPT_NO_HIVE, OPT_PARTITIONS, OPT_FILTER, OPT_NO_FSYNC, OPT_PROFILE, OPT_REGION,
  OPT_ENDPOINT_URL, OPT_S3_ADDRESSING, OPT_NO_SIGN_REQUEST, OPT_PART_SIZE, OPT_TIMEOUT,
  OPT_PARTITION_BY, OPT_MAX_PARTITIONS, OPT_EXISTING_DATA, OPT_MAX_ROWS_PER_FILE,
  OPT_UNION_BY_NAME,
};

static const struct option k_long_options[] = {
    {"columns", required_argument, NULL, 'c'},
    {"limit", required_argument, NULL, 'n'},
    {"format", required_argument, NULL, 'f'},
    {"to", required_argument, NULL, 't'},
    {"output", required_argument, NULL, 'o'},
    {"compression", required_argument, NULL, OPT_COMPRESSION},
    {"json", no_argument, NULL, OPT_JSON},
    {"metadata", no_argument, NULL, OPT_METADATA},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"ordered", no_argument, NULL, OPT_ORDERED},
    {"unordered", no_argument, NULL, OPT_UNORDERED},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"batch-rows", required_argument, NULL, OPT_BATCH_ROWS},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"option", required_argument, NULL, 'O'},
    {"write-option", required_argument, NULL, 'W'},
    {"schema", required_argument, NULL, OPT_SCHEMA},
    {"reader-schema", required_argument, NULL, OPT_READER_SCHEMA},
    {"length-prefix", required_argument, NULL, OPT_LENGTH_PREFIX},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"ca-bundle", required_argument, NULL, OPT_CA_BUNDLE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"no-hive", no_argument, NULL, OPT_NO_HIVE},
    {"union-by-name", no_argument, NULL, OPT_UNION_BY_NAME},
    {"partitions", required_argument, NULL, OPT_PARTITIONS},
    {"filter", required_argument, NULL, OPT_FILTER},
    {"no-fsync", no_argument, NULL, OPT_NO_FSYNC},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"region", required_argument, NULL, OPT_REGION},
    {"endpoint-url", required_argument, NULL, OPT_ENDPOINT_URL},
    {"s3-addressing", required_argument, NULL, OPT_S3_ADDRESSING},
    {"no-sign-request", no_argument, NULL, OPT_NO_SIGN_REQUEST},
    {"part-size", required_argument, NULL, OPT_PART_SIZE},
    {"partition-by", required_argument, NULL, OPT_PARTITION_BY},
    {"max-partitions", required_argument, NULL, OPT_MAX_PARTITIONS},
    {"existing-data", required_argument, NULL, OPT_EXISTING_DATA},
    {"max-rows-per-file", required_argument, NULL, OPT_MAX_ROWS_PER_FILE},
    {NULL, 0, NULL, 0},
};

static void print_main_help(FILE* out) {
  fprintf(out,
          "sluice %s: move tables between formats through Arrow memory\n\n"
          "Usage: sluice [GLOBAL OPTIONS] COMMAND [ARGS]\n\nCommands:\n",
          SLUICE_VERSION_STRING);
  for (size_t i = 0; i < N_COMMANDS; ++i) {
    fprintf(out, "  %-8s %s\n", k_commands[i].name, k_commands[i].summary);
  }
  fprintf(out, "  %-8s %s\n\n%s  --version          print the version\n%s\n"
               "Run 'sluice COMMAND --help' for a command's options.\n",
          "help", "show help for a command", GLOBAL_OPTIONS_HELP, SOURCES_HELP);
}

static void print_command_help(const struct cli_command* command, FILE* out) {
  fprintf(out, "%s\n%s%s", command->usage, GLOBAL_OPTIONS_HELP, SOURCES_HELP);
}

static const struct cli_command* find_command(const char* name) {
  for (size_t i = 0; i < N_COMMANDS; ++i) {
    if (strcmp(k_commands[i].name, name) == 0) return &k_commands[i];
  }
  return NULL;
}

/// Splits "a,b,c" (possibly given several times) into options->columns. Each
/// name is %XX-decoded (as --schema and --filter names are: '%2C' spells a
/// comma); an empty item names the column whose name is empty.
static int add_columns(struct cli_options* options, const char* list) {
  size_t old_len = options->columns_joined != NULL ? strlen(options->columns_joined) : 0;
  size_t add_len = strlen(list);
  char* joined = malloc(old_len + add_len + 2);
  char* storage = malloc(old_len + add_len + 2);
  if (joined == NULL || storage == NULL) {
    free(joined);
    free(storage);
    return -1;
  }
  if (options->columns_joined != NULL) {  // even "": -c '' named the empty column
    memcpy(joined, options->columns_joined, old_len);
    joined[old_len++] = ',';
  }
  memcpy(joined + old_len, list, add_len + 1);
  memcpy(storage, joined, old_len + add_len + 1);
  size_t n = 1;
  for (const char* p = storage; *p != '\0'; ++p) n += *p == ',';
  char** columns = malloc(n * sizeof *columns);
  if (columns == NULL) {
    free(joined);
    free(storage);
    return -1;
  }
  size_t k = 0;
  for (char* p = storage;;) {
    char* comma = strchr(p, ',');
    if (comma != NULL) *comma = '\0';
    size_t len = strlen(p);
    char* name = sl_percent_decoded(p, len, NULL);
    if (name == NULL) {
      free(joined);
      free(storage);
      free(columns);
      return -1;
    }
    memcpy(p, name, strlen(name) + 1);  // no longer than the escaped text
    sl_free(NULL, name, strlen(name) + 1);
    columns[k++] = p;
    if (comma == NULL) break;
    p = comma + 1;
  }
  free(options->columns_storage);
  free(options->columns_joined);
  free(options->columns);
  options->columns_joined = joined;
  options->columns_storage = storage;
  options->columns = columns;
  options->n_columns = k;
  return 0;
}

static int usage_error(const char* command, const char* fmt, const char* arg) {
  fputs("sluice: ", stderr);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see 'sluice %s%s--help')\n", command != NULL ? command : "",
          command != NULL ? " " : "");
  return CLI_USAGE;
}

/// Appends "key=value" to *list (options->format_options or write_options).
/// With `commas_to_bars` the value's commas become '|' (the option string
/// itself is comma-separated).
static int add_option_to(char** list, const char* key, const char* value, int commas_to_bars) {
  size_t old_len = *list != NULL ? strlen(*list) : 0;
  size_t key_len = key != NULL ? strlen(key) + 1 : 0;
  size_t len = old_len + 1 + key_len + strlen(value) + 1;
  char* joined = malloc(len);
  if (joined == NULL) return -1;
  snprintf(joined, len, "%s%s%s%s%s", old_len > 0 ? *list : "",
           old_len > 0 ? "," : "", key != NULL ? key : "", key != NULL ? "=" : "", value);
  if (commas_to_bars) {  // but not those inside "timestamp[us, tz=UTC]"
    for (char* p = joined + old_len + (old_len > 0) + key_len, *comma;
         (comma = (char*)sl_option_comma(p)) != NULL; p = comma + 1) {
      *comma = '|';
    }
  }
  free(*list);
  *list = joined;
  return 0;
}

static int add_format_option(struct cli_options* options, const char* key, const char* value,
                             int commas_to_bars) {
  return add_option_to(&options->format_options, key, value, commas_to_bars);
}

/// Applies one option returned by getopt_long. Returns CLI_OK or CLI_USAGE.
/// --partition-by a,b: the names, split at commas (the last one given wins).
/// -1 on an empty name or out of memory.
static int set_partition_by(struct cli_options* options, const char* list) {
  size_t n = 1;
  for (const char* p = list; *p != '\0'; ++p) n += *p == ',';
  char* storage = malloc(strlen(list) + 1);
  char** names = malloc(n * sizeof *names);
  if (storage == NULL || names == NULL) {
    free(storage);
    free(names);
    return -1;
  }
  strcpy(storage, list);
  size_t k = 0;
  for (char* p = storage;;) {
    char* comma = strchr(p, ',');
    if (comma != NULL) *comma = '\0';
    names[k++] = p;
    if (*p == '\0') {
      free(storage);
      free(names);
      return -1;
    }
    if (comma == NULL) break;
    p = comma + 1;
  }
  free(options->partition_by_storage);
  free(options->partition_by);
  options->partition_by_storage = storage;
  options->partition_by = names;
  options->n_partition_by = k;
  return 0;
}

static int apply_option(int c, char** argv, struct cli_options* options, unsigned* seen,
                        int* show_version) {
  const char* where = options->command;
  int64_t value = 0;
  switch (c) {
    case 1:  // a positional argument, in order
      if (options->n_positional == CLI_MAX_POSITIONAL) {
        return usage_error(where, "unexpected argument '%s'", optarg);
      }
      options->positional[options->n_positional++] = optarg;
      return CLI_OK;
    case 'c':
      if (add_columns(options, optarg) != 0) {
        cli_error("out of memory");
        return CLI_ERROR;
      }
      *seen |= CLI_OPT_COLUMNS;
      return CLI_OK;
    case 'n':
      if (cli_parse_count(optarg, &value) != 0) {
        return usage_error(where, "bad --limit '%s'", optarg);
      }
      options->limit = value;
      *seen |= CLI_OPT_LIMIT;
      return CLI_OK;
    case 'f': options->format = optarg; *seen |= CLI_OPT_FORMAT; return CLI_OK;
    case 't': options->to = optarg; *seen |= CLI_OPT_TO; return CLI_OK;
    case 'o': options->output = optarg; *seen |= CLI_OPT_OUTPUT; return CLI_OK;
    case OPT_COMPRESSION:
      options->compression = optarg;
      *seen |= CLI_OPT_COMPRESSION;
      return CLI_OK;
    case OPT_JSON: options->json = 1; *seen |= CLI_OPT_JSON; return CLI_OK;
    case OPT_METADATA: options->metadata = 1; *seen |= CLI_OPT_METADATA; return CLI_OK;
    case OPT_THREADS:
      if (cli_parse_count(optarg, &value) != 0 || value > 4096) {
        return usage_error(where, "bad --threads '%s'", optarg);
      }
      options->threads = (int)value;
      return CLI_OK;
    case OPT_ORDERED: options->ordered = 1; return CLI_OK;
    case OPT_UNORDERED: options->ordered = 0; return CLI_OK;
    case OPT_BUDGET:
      if (cli_parse_bytes(optarg, &value) != 0) {
        return usage_error(where, "bad --budget '%s'", optarg);
      }
      options->budget = value;
      return CLI_OK;
    case OPT_BATCH_ROWS:
      if (cli_parse_count(optarg, &value) != 0 || value <= 0) {
        return usage_error(where, "bad --batch-rows '%s' (a number of rows, > 0)", optarg);
      }
      options->batch_rows = value;
      return CLI_OK;
    case 'q': options->quiet = 1; return CLI_OK;
    case 'h': options->help = 1; return CLI_OK;
    case OPT_VERSION: *show_version = 1; return CLI_OK;
    case 'O':
      if (strchr(optarg, '=') == NULL) return usage_error(where, "-O wants KEY=VALUE, not '%s'", optarg);
      if (add_format_option(options, NULL, optarg, 0) != 0) {
        cli_error("out of memory");
        return CLI_ERROR;
      }
      return CLI_OK;
    case 'W':
      if (strchr(optarg, '=') == NULL) {
        return usage_error(where, "-W wants KEY=VALUE, not '%s'", optarg);
      }
      if (add_option_to(&options->write_options, NULL, optarg, 0) != 0) {
        cli_error("out of memory");
        return CLI_ERROR;
      }
      *seen |= CLI_OPT_WRITE_OPTION;
      return CLI_OK;
    case OPT_SCHEMA:
    case OPT_READER_SCHEMA:
      if (add_format_option(options, c == OPT_SCHEMA ? "schema" : "reader_schema", optarg,
                            c == OPT_SCHEMA) != 0) {
        cli_error("out of memory");
        return CLI_ERROR;
      }
      return CLI_OK;
    case OPT_LENGTH_PREFIX:
      if (add_format_option(options, "length_prefix", optarg, 0) != 0) {
        cli_error("out of memory");
        return CLI_ERROR;
      }
      return CLI_OK;
    case OPT_INSECURE: options->insecure = 1; return CLI_OK;
    case OPT_NO_HIVE: options->no_hive = 1; return CLI_OK;
    case OPT_UNION_BY_NAME: options->union_by_name = 1; return CLI_OK;
    case OPT_NO_FSYNC: options->no_fsync = 1; *seen |= CLI_OPT_NO_FSYNC; return CLI_OK;
    case OPT_PARTITION_BY:
      if (set_partition_by(options, optarg) != 0) {
        return usage_error(where, "bad --partition-by '%s' (column names, comma-separated)",
                           optarg);
      }
      *seen |= CLI_OPT_PARTITION_BY;
      return CLI_OK;
    case OPT_MAX_PARTITIONS:
      if (cli_parse_count(optarg, &value) != 0 || value <= 0) {
        return usage_error(where, "bad --max-partitions '%s' (a number of partitions, > 0)",
                           optarg);
      }
      options->max_partitions = value;
      *seen |= CLI_OPT_MAX_PARTITIONS;
      return CLI_OK;
    case OPT_MAX_ROWS_PER_FILE:
      if (cli_parse_count(optarg, &value) != 0 || value <= 0) {
        return usage_error(where, "bad --max-rows-per-file '%s' (a number of rows, > 0)", optarg);
      }
      options->max_rows_per_file = value;
      *seen |= CLI_OPT_MAX_ROWS_PER_FILE;
      return CLI_OK;
    case OPT_EXISTING_DATA:
      if (strcmp(optarg, "error") == 0) {
        options->existing_data = SLUICE_EXISTING_DATA_ERROR;
      } else if (strcmp(optarg, "overwrite_or_ignore") == 0) {
        options->existing_data = SLUICE_EXISTING_DATA_OVERWRITE_OR_IGNORE;
      } else if (strcmp(optarg, "delete_matching") == 0) {
        options->existing_data = SLUICE_EXISTING_DATA_DELETE_MATCHING;
      } else if (strcmp(optarg, "append") == 0) {
        options->existing_data = SLUICE_EXISTING_DATA_APPEND;
      } else {
        return usage_error(where, "bad --existing-data '%s' (error, overwrite_or_ignore, "
                           "delete_matching or append)", optarg);
      }
      *seen |= CLI_OPT_EXISTING_DATA;
      return CLI_OK;
    case OPT_PROFILE: options->s3.profile = optarg; return CLI_OK;
    case OPT_REGION: options->s3.region = optarg; return CLI_OK;
    case OPT_ENDPOINT_URL: options->s3.endpoint_url = optarg; return CLI_OK;
    case OPT_S3_ADDRESSING:
      if (strcmp(optarg, "path") != 0 && strcmp(optarg, "virtual") != 0) {
        return usage_error(where, "bad --s3-addressing '%s' (path or virtual)", optarg);
      }
      options->s3.addressing_style = optarg;
      return CLI_OK;
    case OPT_NO_SIGN_REQUEST: options->s3.anonymous = 1; return CLI_OK;
    case OPT_PART_SIZE:
      if (cli_parse_bytes(optarg, &value) != 0 || value <= 0) {
        return usage_error(where, "bad --part-size '%s'", optarg);
      }
      options->s3.part_size = value;
      return CLI_OK;
    case OPT_PARTITIONS: options->partitions = optarg; return CLI_OK;
    case OPT_FILTER: options->filter = optarg; return CLI_OK;
    case OPT_CA_BUNDLE: options->ca_bundle = optarg; return CLI_OK;
    case OPT_TIMEOUT: {
      char* end = NULL;
      double seconds = strtod(optarg, &end);
      if (end == optarg || *end != '\0' || !(seconds > 0) || seconds > 1e6) {
        return usage_error(where, "bad --timeout '%s' (seconds, more than 0)", optarg);
      }
      options->timeout_s = seconds;
      return CLI_OK;
    }
    case ':': return usage_error(where, "option '%s' needs a value", argv[optind - 1]);
    default: return usage_error(where, "unknown option '%s'", argv[optind - 1]);
  }
}

/// Parses argv in two passes: options before the command (stopping at its
/// name), then the command's own arguments, where GNU permutation lets
/// options and positional arguments mix.
static int parse_args(int argc, char** argv, struct cli_options* options,
                      const struct cli_command** command, int* show_version) {
  unsigned seen = 0;
  int status;
  opterr = 0;
  optind = 0;  // GNU: 0 forces a full reset of getopt's state
  int c;
  while ((c = getopt_long(argc, argv, "+:c:n:f:t:o:O:W:qh", k_long_options, NULL)) != -1) {
    if ((status = apply_option(c, argv, options, &seen, show_version)) != CLI_OK) return status;
  }
  int next = optind;
  if (next < argc && strcmp(argv[next], "help") == 0) {
    options->help = 1;
    ++next;
    // `sluice help help`, `sluice help --help`: the main help.
    if (next < argc && (strcmp(argv[next], "help") == 0 || strcmp(argv[next], "--help") == 0 ||
                        strcmp(argv[next], "-h") == 0))
      ++next;
  }
  if (next < argc) {
    *command = find_command(argv[next]);
    if (*command == NULL) return usage_error(NULL, "unknown command '%s'", argv[next]);
    options->command = (*command)->name;
    int sub_argc = argc - next;
    char** sub_argv = argv + next;
    optind = 0;
    while ((c = getopt_long(sub_argc, sub_argv, "-:c:n:f:t:o:O:W:qh", k_long_options, NULL)) != -1) {
      status = apply_option(c, sub_argv, options, &seen, show_version);
      if (status != CLI_OK) return status;
    }
    // After "--" everything is positional ("sluice cat -- -odd-name.arrow").
    for (int i = optind; i < sub_argc; ++i) {
      if (options->n_positional == CLI_MAX_POSITIONAL) {
        return usage_error(options->command, "unexpected argument '%s'", sub_argv[i]);
      }
      options->positional[options->n_positional++] = sub_argv[i];
    }
  }
  if (options->help || *show_version) return CLI_OK;
  if (*command == NULL) return usage_error(NULL, "missing command%s", "");
  if ((seen & ~(*command)->options) != 0) {
    static const struct {
      unsigned bit;
      const char* name;
    } k_names[] = {{CLI_OPT_COLUMNS, "-c/--columns"},     {CLI_OPT_LIMIT, "-n/--limit"},
                   {CLI_OPT_FORMAT, "-f/--format"},       {CLI_OPT_TO, "-t/--to"},
                   {CLI_OPT_OUTPUT, "-o/--output"},       {CLI_OPT_COMPRESSION, "--compression"},
                   {CLI_OPT_JSON, "--json"},              {CLI_OPT_WRITE_OPTION, "-W/--write-option"},
                   {CLI_OPT_METADATA, "--metadata"},          {CLI_OPT_NO_FSYNC, "--no-fsync"},
                   {CLI_OPT_PARTITION_BY, "--partition-by"},
                   {CLI_OPT_MAX_PARTITIONS, "--max-partitions"},
                   {CLI_OPT_MAX_ROWS_PER_FILE, "--max-rows-per-file"},
                   {CLI_OPT_EXISTING_DATA, "--existing-data"}};
    const char* name = "an option";
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; ++i) {
      if ((seen & ~(*command)->options) & k_names[i].bit) {
        name = k_names[i].name;
        break;
      }
    }
    char what[96];
    snprintf(what, sizeof what, "%s does not apply to '%s'", name, options->command);
    return usage_error(options->command, "%s", what);
  }
  if (options->max_partitions > 0 && options->n_partition_by == 0) {
    return usage_error(options->command, "--max-partitions needs --partition-by%s", "");
  }
  if (options->n_positional < (*command)->min_positional) {
    return usage_error(options->command, "'%s' needs more arguments", options->command);
  }
  if (options->n_positional > (*command)->max_positional) {
    return usage_error(options->command, "unexpected argument '%s'",
                       options->positional[options->n_positional - 1]);
  }
  if (options->format != NULL && !cli_reader_known(options->format)) {
    return usage_error(options->command, "unknown input format '%s'", options->format);
  }
  if (options->to != NULL && strcmp(options->to, "table") != 0 &&
      !cli_writer_known(options->to)) {
    if (!cli_reader_known(options->to)) {
      return usage_error(options->command, "unknown output format '%s'", options->to);
    }
    char written[256], message[512];
    snprintf(message, sizeof message, "'%s' is a format sluice reads but does not write (it "
             "writes %s)", options->to, cli_writer_list(written, sizeof written));
    return usage_error(options->command, "%s", message);
  }
  // --compression is checked by the output format's writer: the codecs
  // differ by format (IPC: lz4, zstd; Parquet: snappy, gzip, ...).
  return CLI_OK;
}

/// A partitioned write to S3 stages each object in a file of its own until
/// the uploads, so it holds as many descriptors as partitions; a soft limit
/// of 1024 open files (many systems' default, and the default
/// --max-partitions) would stop it short. The soft limit is raised to the
/// hard one, as Go programs do at start; sluice polls, it never select()s.
static void raise_open_file_limit(void) {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int main(int argc, char** argv) {
  raise_open_file_limit();
  // Character widths for the terminal table (wcwidth): UTF-8, whatever the
  // environment's locale; only the character type, so numbers and messages
  // stay as in the C locale.
  (void)setlocale(LC_CTYPE, "C.UTF-8");
  struct cli_options options;
  memset(&options, 0, sizeof options);
  options.limit = -1;
  options.ordered = 1;
  struct cli_interrupt interrupt;
  cli_interrupt_start(&interrupt);
  options.interrupt = &interrupt;
  const struct cli_command* command = NULL;
  int show_version = 0;
  int status = parse_args(argc, argv, &options, &command, &show_version);
  if (status == CLI_OK) {
    if (show_version && !options.help) {
      printf("sluice %s\n", SLUICE_VERSION_STRING);
    } else if (options.help || command == NULL) {
      if (command != NULL) print_command_help(command, stdout);
      else print_main_help(stdout);
    } else {
      status = command->run(&options);
    }
  }
  if (fflush(stdout) != 0 && status == CLI_OK) {
    cli_error("cannot write to standard output");
    status = CLI_ERROR;
  }
  free(options.columns);
  free(options.columns_storage);
  free(options.partition_by_storage);
  free(options.partition_by);
  free(options.columns_joined);
  free(options.format_options);
  free(options.write_options);
  cli_interrupt_stop(&interrupt);
  return status;
}

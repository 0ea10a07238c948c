// The table every format plugs into. A reader knows one format: it reads the
// schema, plans independent splits, and decodes one split into batches. It
// never starts threads and never decides delivery order (src/scan does).
#ifndef SL_FORMAT_H
#define SL_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"
#include "../core/sl_ref.h"
#include "../io/sl_source.h"

struct sl_row_filter;  // core/sl_row_filter.h

/// The caller's final columns, which a split whose rows the caller planned
/// may decode straight into (sluice_scan_options.placement): row r of the
/// split, column `c` of the file (not of the projection, so that a reader
/// opened on a subset of the columns finds its own), goes to
/// base[c] + (first_row + r) * width[c]. Only when the split turns out to
/// have exactly `rows` rows; other columns and splits decode as usual.
struct sl_split_place {
  uint8_t* const* base;  ///< per file column: NULL = not placed
  const int32_t* width;  ///< per file column: bytes per value
  int64_t first_row;
  int64_t rows;
  struct sl_ref* owner;  ///< arrays over the memory retain it
};

/// Columns the scan keeps only some struct fields of (asked as "st.x" and
/// never whole nor named by the filter): entry k is field path[k] ({depth,
/// child index per level}, as sl_array_struct_field) under file column
/// column[k]. Given only to readers that prune (prunes_fields).
struct sl_split_fields {
  int64_t n;
  const int64_t* column;
  const int64_t* const* path;
};

/// An independent unit of work: a file, a byte range, a record batch, a row
/// group. Fields other than `index`, `place` and `fields` are the format's
/// to interpret.
struct sl_split {
  int64_t index;      ///< position in plan order (0..n-1)
  int64_t offset;     ///< e.g. byte offset of the block / range
  int64_t length;     ///< e.g. bytes in the range
  int64_t est_bytes;  ///< decoded bytes expected per batch (budget), 0 = unknown
  int64_t est_rows;   ///< rows expected, -1 = unknown
  /// Set by the scan for placed scans (NULL = none); readers that can
  /// decode in place use it, the others ignore it.
  const struct sl_split_place* place;
  /// Set by the scan (NULL = none): struct fields it keeps of some columns.
  const struct sl_split_fields* fields;
};

struct sl_reader_args {
  struct sl_source* source;  ///< borrowed; outlives the reader (NULL for cql://)
  /// The location as the user wrote it: what a reader that talks to a
  /// database rather than reading bytes (cql://) connects to.
  const char* location;
  const struct sluice_allocator* alloc;
  int64_t batch_size;        ///< rows per batch wanted (0 = format default)
  /// The dataset's memory budget (sluice_open_options.memory_budget, the
  /// default filled in): readers that decode more than a batch at once (a
  /// Parquet row group) size that unit from it. 0 = unknown.
  int64_t memory_budget;
  /// Format-specific options as "key=value,key=value" (NULL = none), e.g.
  /// CSV: "delimiter=;,header=false,schema=a:int32|b:string".
  const char* format_options;
  /// For readers that connect themselves (cql:// with tls=true): skip the
  /// certificate checks; a PEM file of trusted CAs (NULL = the system's).
  int tls_insecure;
  const char* ca_bundle;
  /// For readers that connect themselves: seconds to connect and without a
  /// byte of an answer (sluice_open_options.timeout_s; 0 = their default).
  double timeout_s;
  /// union_by_name: the object is matched with others by column name, so a
  /// column the options name (CSV schema=) may be one it lacks.
  int columns_by_name;
};

/// Stored statistics of one column over the whole object (see stored_stats).
struct sl_stored_column_stats {
  int64_t null_count;  ///< -1 = unknown
  /// 1 when min_max holds bounds for this column that cover every row group
  /// (0 for nested columns, or when some row group has none).
  int has_min_max;
  /// The bounds are the actual extremes, not truncated or widened.
  int min_exact, max_exact;
};

struct sl_format_reader {
  const char* name;                 ///< "arrow", "arrows", "csv", ...
  const char* const* extensions;    ///< NULL-terminated, with the dot: ".arrow"
  /// Confidence 0..100 that `head` (the first bytes of the object, n >= 0)
  /// starts this format. Magic bytes give 100.
  int (*probe)(const uint8_t* head, int64_t n);
  int (*open)(const struct sl_reader_args* args, void** reader, struct sluice_error* error);
  /// The full schema (a struct with one child per column). Caller releases.
  int (*schema)(void* reader, struct ArrowSchema* out, struct sluice_error* error);
  /// Plans splits into a sl_alloc'd array of *n (free with sl_free(alloc, p,
  /// n * sizeof *p)). Zero splits is valid (empty input).
  int (*plan_splits)(void* reader, struct sl_split** splits, int64_t* n,
                     struct sluice_error* error);
  /// Starts decoding one split. `columns` (indexes into the full schema, in
  /// the order wanted; NULL = all) is a hint: readers that can skip columns
  /// do so and then emit only those columns, in that order; readers that
  /// cannot emit all columns and set *projected = 0 so the engine projects.
  /// No column is listed twice: the engine asks for a repeated column once
  /// and makes the repeats views of it.
  /// May be called concurrently for different splits from different threads.
  int (*split_open)(void* reader, const struct sl_split* split, const int64_t* columns,
                    int64_t n_columns, void** state, int* projected,
                    struct sluice_error* error);
  /// Next batch of the split as a struct array. At the end: 0 with
  /// out->release == NULL.
  int (*split_next)(void* state, struct ArrowArray* out, struct sluice_error* error);
  void (*split_close)(void* state);
  /// Optional (NULL = split_next decodes no more than the batch it returns).
  /// For a reader that decodes more of a split at once than a batch and
  /// hands it out in slices (a Parquet row group cut to batch_rows):
  /// *held = decoded bytes the split holds that no batch returned so far
  /// covers (> 0 while it has slices left to hand out); *next = what the
  /// next split_next will decode at once beyond that (the whole unit,
  /// estimated, when it is about to decode one that it will slice; else 0).
  /// The engine reserves *next before that split_next and counts *held in
  /// the budget until the split hands it out or closes; batches cut from
  /// what is held need no room. A split that decodes each batch anew (a
  /// Parquet row group read page by page) reports *held 0 and its batch as
  /// *next, so that it waits for room as other splits do. Called between
  /// split_next calls of the split's own thread.
  void (*split_held_bytes)(void* state, int64_t* held, int64_t* next);
  void (*close)(void* reader);
  /// Optional (NULL = the format stores no statistics). What the object's
  /// metadata says about its values (a Parquet footer), so that `sluice stats`
  /// can answer count(*) and min/max without decoding. For `columns`
  /// (indexes into the full schema, in the order wanted; NULL = all) fills
  /// *row_count (-1 = unknown), stats[i] for each column, and `min_max`: a
  /// struct array of 2 rows (row 0 = min, row 1 = max) with one child per
  /// column in that column's Arrow type (null where a bound is unknown).
  int (*stored_stats)(void* reader, const int64_t* columns, int64_t n_columns,
                      int64_t* row_count, struct sl_stored_column_stats* stats,
                      struct ArrowArray* min_max, struct sluice_error* error);
  /// Optional (NULL = no statistics to judge by): 0 when the object's
  /// statistics (a Parquet row group's min, max and null count) show that no
  /// row of `split` passes `filter` (whose conditions name columns of the
  /// full schema), so the scan skips it; 1 when some row may pass. Called
  /// after plan_splits, before any split opens.
  int (*split_may_match)(void* reader, const struct sl_split* split,
                         const struct sl_row_filter* filter);
  /// Optional (NULL = none): custom metadata of the batch split_next returned
  /// last (an IPC message's custom_metadata) in the C Data Interface metadata
  /// layout, or NULL. Valid until the next split_next / split_close.
  const char* (*split_batch_metadata)(void* state);
  /// Optional (NULL = the format never drops rows): rows dropped so far
  /// because the user asked to skip bad ones (CSV bad_rows=skip), and the
  /// reason for the first (line, byte, why) into `first_reason` (cap bytes).
  int64_t (*rows_skipped)(void* reader, char* first_reason, size_t cap);
  /// 1 = a split may be decoded as several column subsets at once, which the
  /// scan engine zips back (so that one big split uses several cores). The
  /// reader promises: split_open honours `columns` exactly (*projected = 1),
  /// and the row counts of a split's batches depend only on the split and
  /// the batch size, never on which columns are decoded.
  int split_by_columns;
  /// 1 = opening reads the object's end first (a footer format): a remote
  /// object of a known format is then opened by a GET of its last 64 KiB,
  /// and the reader does not read its head to open.
  int tail_first;
  /// 1 = the reader reads an object forward from its first byte to its last
  /// and nothing else (length-delimited records, Arrow IPC streams): a remote
  /// object of such a format (named, or by its name) is opened by its
  /// download itself, one request fewer.
  int streams;
  /// 1 = split_open honours sl_split.fields: every field of such a struct
  /// that is not kept, nor on the way to one that is, comes out as an
  /// array of type null (no buffers, every slot null: nothing decoded), and
  /// the scan measures and filters the column by a schema that says so.
  int prunes_fields;
  /// 1 = open inflates a compressed object itself (x.csv.gz, x.ldr.zst):
  /// a compressed object is refused before any other reader sees its bytes.
  int inflates;
  /// Optional (NULL = unknown): the estimated cost, in bytes, of decoding
  /// column `column` (index into the full schema) over the whole object, so
  /// that the engine can balance column parts by size rather than by count.
  int64_t (*column_bytes)(void* reader, int64_t column);
  /// Optional (NULL = est_rows is all the reader knows): fills est_rows of
  /// splits[0..n) (the plan, unchanged otherwise) with the exact rows of each
  /// split where reading a little of the object tells them (Avro block
  /// headers of a mapped file); leaves -1 where it cannot. Not called while
  /// splits of this reader are being decoded.
  int (*count_split_rows)(void* reader, struct sl_split* splits, int64_t n,
                          struct sluice_error* error);
  /// Optional (NULL = the schema never changes): applies what scans found
  /// since the last call about types inferred from a sample (a later CSV
  /// value that did not fit its column, see csv_widening): *changed = 1 when
  /// the schema is now wider. Not called while splits of this reader are
  /// being decoded.
  int (*refine)(void* reader, int* changed, struct sluice_error* error);
  /// Optional (NULL = never): 1 when column `column`'s type was inferred
  /// from a sample and a later value may still widen it (refine), so that a
  /// filter value it does not take may yet fit (sl_row_filter_parse_inferred).
  int (*type_inferred)(void* reader, int64_t column);
  /// Optional (NULL = the data alone decides the types): widens the column
  /// types inferred from a sample so that values of the column types of
  /// `other`, a reader of this format over another object, fit too, so that
  /// the objects of one dataset read with one schema (CSV: int64 and float64
  /// as float64, a date and a timestamp as the timestamp, other mixes as
  /// string; a column of only nulls in a sample takes the other's type).
  /// `map` NULL: column c against other's column c (by position; objects of
  /// other column counts are left alone); else column c against other's
  /// column map[c], and not at all where map[c] < 0 (union_by_name matches
  /// them by name). *changed = 1 when this reader's schema changed. Not
  /// called while splits of either reader are decoded.
  int (*widen_to)(void* reader, const void* other, const int64_t* map, int* changed,
                  struct sluice_error* error);
  /// Optional (NULL = never): the object holds no rows at all (a CSV header
  /// alone), so its inferred types say nothing.
  int (*holds_no_rows)(void* reader);
  /// Optional (NULL = the open holds nothing worth letting go): the dataset
  /// opened this object with the others and reads it later, from its start;
  /// what opening it read ahead may go (a compressed CSV object's sample and
  /// the download it started). Not called while its splits are decoded.
  void (*trim)(void* reader);
};

struct sl_write_args {
  const struct sluice_allocator* alloc;
  const char* compression;   ///< NULL = none
  /// Writer options as "key=value,key=value" (NULL = none); see
  /// sluice_write_options.format_options.
  const char* format_options;
  /// Per-batch message metadata (see sluice_write_options.batch_metadata);
  /// NULL = none.
  int (*batch_metadata)(void* user, const struct ArrowArray* batch, const char** metadata);
  void* batch_metadata_user;
  /// Where the data goes; table writers (cql) connect to it themselves,
  /// with these TLS settings and timeout (see sl_reader_args).
  const char* location;
  int tls_insecure;
  const char* ca_bundle;
  double timeout_s;
  /// The rows of the input before this file's (a dataset's next part
  /// file): writers number the rows their errors name from it.
  int64_t first_row;
};

struct sl_sink;

/// sl_format_writer.push's flags.
#define SL_PUSH_END_ROW_GROUP 1
#define SL_PUSH_OWNED 2  ///< the batch's memory is not changed until it is released

struct sl_format_writer {
  const char* name;
  const char* const* extensions;
  /// Writes all of `stream` into `sink` (not committing: the caller commits
  /// on success, aborts on error).
  int (*write)(struct ArrowArrayStream* stream, struct sl_sink* sink,
               const struct sl_write_args* args, struct sluice_error* error);
  /// 1: a database table writer (cql): `write` gets no sink and writes to
  /// args->location itself; there is no file to commit or abort.
  int table;
  /// 1: a name ending in .gz or .zst compresses the whole file (x.csv.gz),
  /// as the format's reader reads such files back.
  int compressible;
  /// Optional push interface (NULL = none), for writers that take batches
  /// as they come instead of pulling a stream: a partitioned write keeps a
  /// file per partition open and hands each its rows when they are spilled.
  /// open: a writer of `schema` (copied) into `sink`. push: writes `batch`
  /// (taken, also on error; NULL = none) and, with SL_PUSH_END_ROW_GROUP in
  /// `flags`, ends the row group (block, batch) there so that nothing stays
  /// buffered and no thread or codec context is held until the next push.
  /// A writer reads no buffer of `batch` after push returns (its producer
  /// may refill them): what it keeps it copies, unless SL_PUSH_OWNED says
  /// the memory stays as it is until the batch is released. finish: the rest
  /// and the footer. close: frees the writer (after finish, or after an
  /// error). Such writers' `write` is sl_format_write_pushed.
  int (*open)(const struct ArrowSchema* schema, struct sl_sink* sink,
              const struct sl_write_args* args, void** state, struct sluice_error* error);
  int (*push)(void* state, struct ArrowArray* batch, int flags, struct sluice_error* error);
  int (*finish)(void* state, struct sluice_error* error);
  void (*close)(void* state);
};

/// `writer->write` for writers with the push interface: opens a writer of
/// the stream's schema, pushes every batch (flags 0), finishes and
/// closes it (src/format/sl_format_push.c).
int sl_format_write_pushed(const struct sl_format_writer* writer,
                           struct ArrowArrayStream* stream, struct sl_sink* sink,
                           const struct sl_write_args* args, struct sluice_error* error);

/// The registry (src/format/sl_format_registry.c): static tables of the
/// formats linked in. The i-th reader / writer (0-based), NULL past the end.
/// (An index rather than a NULL-terminated array of pointers: the formats
/// expose accessor functions, and a static const table cannot hold their
/// results without mutable global state.)
const struct sl_format_reader* sl_format_reader_at(size_t i);
const struct sl_format_writer* sl_format_writer_at(size_t i);
/// NULL-terminated names of the readers / writers, in registry order.
const char* const* sl_format_reader_names(void);
const char* const* sl_format_writer_names(void);
const struct sl_format_reader* sl_format_reader_find(const char* name);

/// format->open on args->source; when the format refuses a forward-only
/// source it has not read from (ENOTSUP: a footer to seek to, from a pipe or
/// a server without Range support), the bytes are copied to a temporary
/// file (sl_source_spool), args->source is closed and becomes that copy, and
/// the open is tried again. *reader is NULL on error.
int sl_format_open_spooling(const struct sl_format_reader* format, struct sl_reader_args* args,
                            void** reader, struct sluice_error* error);
/// A name's compression suffix is looked through to find the format
/// (x.parquet.gz is Parquet by name), but only some readers inflate: for the
/// others, compressed bytes in `source`, named `object`, are refused (ENOTSUP,
/// "decompress it first"), where they would fail later with a message about
/// the format's framing or magic. 0 for plain bytes, whatever the name.
int sl_format_refuse_compressed(const struct sl_format_reader* format, struct sl_source* source,
                                const char* object, struct sluice_error* error);
const struct sl_format_writer* sl_format_writer_find(const char* name);
/// Picks the reader for a location: by magic bytes first, then extension
/// (compression suffixes such as .gz/.zst are looked through). NULL when
/// neither tells, or when the name says a format sluice only writes
/// (x.jsonl) and no magic bytes say otherwise.
const struct sl_format_reader* sl_format_reader_detect(const char* location,
                                                       const uint8_t* head, int64_t n);
/// The writer whose extension `location` has when no reader has that
/// format's name (x.jsonl, x.ndjson.gz: "jsonl"), else NULL.
const struct sl_format_writer* sl_format_write_only(const char* location);
/// The writer for a location: a cql:// table's, else by extension.
const struct sl_format_writer* sl_format_writer_for_path(const char* location);

#endif

/// @file sluice.h
/// The public C API of libsluice: open a dataset (a path or URL in some
/// format), read its schema, scan it as an Arrow C stream, write any Arrow C
/// stream to a path in a format.
///
/// Conventions
/// - Every function that can fail returns 0 or an errno-style code (EINVAL for
///   bad arguments, EIO for I/O, EILSEQ for malformed input, ENOMEM, ENOTSUP,
///   ENOENT) and, when `error` is not NULL, fills it with a one-line message
///   that names the object, the byte offset or row, and the reason. A failed
///   file system call returns its own errno (EACCES, EROFS, ENOTDIR,
///   ENAMETOOLONG, ENOSPC, ...), except one that would read as another of
///   these meanings (EINVAL, EILSEQ, ENOTSUP, ERANGE, EOVERFLOW, ECANCELED,
///   EDOM), which is EIO.
/// - No global state. A handle may be used by one thread at a time; distinct
///   handles may be used from any threads concurrently.
/// - Ownership follows the Arrow C Data Interface: whoever holds a struct
///   ArrowSchema / ArrowArray / ArrowArrayStream calls its `release`.
#ifndef SLUICE_H
#define SLUICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLUICE_VERSION_MAJOR 0
#define SLUICE_VERSION_MINOR 1
#define SLUICE_VERSION_PATCH 0
#define SLUICE_VERSION_STRING "0.1.0"

#if defined(SLUICE_BUILDING) && defined(__GNUC__)
#define SLUICE_EXPORT __attribute__((visibility("default")))
#else
#define SLUICE_EXPORT
#endif

/* ---- Arrow C Data Interface and C Stream Interface, verbatim from the spec -- */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  // Array type description
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  // Release callback
  void (*release)(struct ArrowSchema*);
  // Opaque producer-specific data
  void* private_data;
};

struct ArrowArray {
  // Array data description
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  // Release callback
  void (*release)(struct ArrowArray*);
  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_DATA_INTERFACE

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  // Callback to get the stream type
  // (will be the same for all arrays in the stream).
  //
  // Return value: 0 if successful, an `errno`-compatible error code otherwise.
  //
  // If successful, the ArrowSchema must be released independently from the stream.
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);

  // Callback to get the next array
  // (if no error and the array is released, the stream has ended)
  //
  // Return value: 0 if successful, an `errno`-compatible error code otherwise.
  //
  // If successful, the ArrowArray must be released independently from the stream.
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);

  // Callback to get optional detailed error information.
  // This must only be called if the last stream operation failed
  // with a non-0 return code.
  //
  // Return value: pointer to a null-terminated character array describing
  // the last error, or NULL if no description is available.
  //
  // The returned pointer is only valid until the next operation on this stream
  // (including release).
  const char* (*get_last_error)(struct ArrowArrayStream*);

  // Release callback: release the stream's own resources.
  // Note that arrays returned by `get_next` must be individually released.
  void (*release)(struct ArrowArrayStream*);

  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_STREAM_INTERFACE

/* ---- Errors --------------------------------------------------------------- */

/// Room for one error message, filled by any failing call. Every function
/// taking one clears it on entry (code 0, message ""), so a struct reused
/// across calls holds the last call's outcome, never an older failure's.
struct sluice_error {
  /// The errno-style code the call returned (0 when it succeeded).
  int code;
  /// NUL-terminated, one line: "<object>: <where>: <reason>".
  char message[1024];
};

/* ---- Types ----------------------------------------------------------------- */

/// Writes the type of Arrow C Data Interface format string `format` as
/// pyarrow prints it ("l" is "int64", "tsu:UTC" "timestamp[us, tz=UTC]";
/// nested types by their kind, "list"; types sluice does not take, such as
/// "vu", too: "string_view"), for messages: at most `cap` bytes,
/// NUL-terminated. A format that does not parse is written as it is, a
/// NULL format as "(null)"; nothing is written when `out` is NULL or `cap`
/// is 0.
SLUICE_EXPORT void sluice_type_name(const char* format, char* out, size_t cap);

/* ---- Allocation ----------------------------------------------------------- */

/// One allocation hook for everything a handle allocates: buffers handed out in
/// arrays, decoded data, bookkeeping. Tests use it to count bytes and to fail
/// allocations on purpose. Functions may be called from several threads at once.
struct sluice_allocator {
  /// Returns `size` bytes aligned to `alignment` (a power of two, at most 64),
  /// or NULL. `size` is never 0.
  void* (*allocate)(void* ctx, size_t size, size_t alignment);
  /// Frees a block returned by `allocate`; `size` is the size asked for.
  void (*deallocate)(void* ctx, void* ptr, size_t size);
  void* ctx;
};

/// The default allocator (aligned_alloc/free). Never NULL; immutable.
SLUICE_EXPORT const struct sluice_allocator* sluice_default_allocator(void);

/// A cache of freed buffers that handles share, so that a program reading
/// (or writing) one table after another reuses the memory of the tables it
/// has freed: fresh memory costs a page fault and the zeroing of each 4 KiB
/// page on first write, a third to half of the time of a load. Blocks of
/// 64 KiB and more freed through its allocator are kept, up to `max_bytes`
/// in all (and at most 16,384 blocks), and handed out again for requests of
/// their size or up to a fifth smaller; once what is kept passes half of
/// `max_bytes`, a request that none fits frees the oldest kept blocks of at
/// least its size first, so that a table of another shape reuses the
/// dropped one's memory through the kernel instead of adding to it.
/// Everything else goes to the default
/// allocator. Pass sluice_buffer_cache_allocator() as the options'
/// allocator of sluice_dataset_open and sluice_write (without one, each
/// handle keeps a cache of its own, freed with it). Thread-safe. Kept memory
/// stays allocated (in the process's RSS) until reused, released or closed.
/// NULL when out of memory or when `max_bytes` is negative.
struct sluice_buffer_cache;
SLUICE_EXPORT struct sluice_buffer_cache* sluice_buffer_cache_create(int64_t max_bytes);

/// The allocator to pass in options. Valid until the cache is closed and
/// the last block it handed out is freed.
SLUICE_EXPORT const struct sluice_allocator* sluice_buffer_cache_allocator(
    struct sluice_buffer_cache* cache);

/// Frees the blocks kept so far (blocks in use are kept when freed later);
/// returns the bytes freed.
SLUICE_EXPORT int64_t sluice_buffer_cache_release_unused(struct sluice_buffer_cache* cache);

/// In the child of a fork(): the cache as the child's alone. Another thread
/// of the parent may have held its lock at the fork, which would then never
/// be released in the child: the lock is made anew and the kept blocks are
/// freed. Call it first thing in the child (pthread_atfork's child handler,
/// Python's os.register_at_fork), before anything allocates through it.
SLUICE_EXPORT void sluice_buffer_cache_after_fork(struct sluice_buffer_cache* cache);

/// Frees the kept blocks and lets go of the cache; blocks still in use go to
/// the default allocator when freed, and the last of them frees the cache.
/// NULL-safe.
SLUICE_EXPORT void sluice_buffer_cache_close(struct sluice_buffer_cache* cache);

/* ---- Opening and scanning a dataset --------------------------------------- */

/// s3:// settings given by the caller. Each set field overrides what AWS
/// tools would find (the AWS_* environment variables, then the profile in
/// ~/.aws/credentials and ~/.aws/config); NULL or 0 keeps what they find.
/// Zero-initialise it ({0} or memset) and set what you need.
struct sluice_s3_options {
  /// Credentials (both, or neither), with an optional session token.
  const char* access_key_id;
  const char* secret_access_key;
  const char* session_token;
  /// The profile to read from the shared files instead of AWS_PROFILE /
  /// "default". A profile named here or in AWS_PROFILE must exist.
  const char* profile;
  /// Region for signing and for the default endpoint (e.g. "eu-west-1").
  const char* region;
  /// Endpoint URL, scheme://host[:port] (MinIO, Ceph, R2, a local server).
  const char* endpoint_url;
  /// "path" (ENDPOINT/bucket/key) or "virtual" (bucket.ENDPOINT/key); NULL =
  /// the profile's `s3 = addressing_style`, else virtual-hosted on AWS for
  /// DNS-safe bucket names and path-style for custom endpoints.
  const char* addressing_style;
  /// Non-zero: unsigned requests (public buckets), whatever credentials
  /// are configured.
  int anonymous;
  /// Writes: bytes per part of a multipart upload (0 = SLUICE_S3_PART_SIZE
  /// or 8 MiB; at least 5 MiB; doubled as needed to stay within 10,000
  /// parts). Outputs up to one part go up in one PUT. More than 5 GiB
  /// (S3's most for a part) is EINVAL when the write starts.
  int64_t part_size;
};

/// Options for sluice_dataset_open. Always start from sluice_open_options_init:
/// unlike sluice_s3_options, a zeroed struct ({0}, memset) is not the
/// defaults. Its limit 0 reads no rows at all (and succeeds), and its
/// ordered 0 delivers batches out of order.
struct sluice_open_options {
  /// Format name ("arrow" = IPC file, "arrows" = IPC stream, ...), or NULL to
  /// detect it from the magic bytes, then the extension.
  const char* format;
  /// Columns to read, by name, in the order wanted; NULL = all columns. A
  /// name that two columns share is an error (which one is meant?).
  const char* const* columns;
  size_t n_columns;
  /// Preferred rows per batch for formats that choose their batch size
  /// (0 = the format's default). Formats with stored batches keep them.
  int64_t batch_size;
  /// Worker threads for decoding (0 = one per core in the process's CPU
  /// affinity mask, at most its cgroup (v2 or v1) CPU quota; two per core for
  /// http(s):// and s3:// locations, whose splits also wait on requests).
  int threads;
  /// Bytes of decoded batches allowed in flight, i.e. decoded but not yet
  /// returned to the consumer (0 = default, 256 MiB). Workers wait when it is
  /// spent. It counts the batches' logical bytes: the allocator sees more
  /// (buffers are rounded up, and each worker holds the compressed input it
  /// decodes), about 1.3x in tests. A Parquet row group expected to decode to
  /// more than a quarter of it (at least 8 MiB) comes out in batches of about
  /// that size, read page by page (lists and maps too: a batch ends where a
  /// row does), not decoded whole.
  int64_t memory_budget;
  /// Non-zero (default): batches are delivered in plan order. Zero: as they
  /// finish; use sluice_scanner_next's tag to restore order.
  int ordered;
  /// Stop after this many rows (-1 = no limit, the default that
  /// sluice_open_options_init sets; 0 = no rows). With ordered = 0 they are
  /// the first rows delivered, not necessarily the input's first.
  int64_t limit;
  /// Allocator for everything the dataset and its scans allocate
  /// (NULL = sluice_default_allocator()), except what libraries allocate
  /// without a hook: jansson parsing an Avro schema's JSON, the brotli and
  /// libdeflate compressors.
  const struct sluice_allocator* allocator;
  /// Format-specific options as "key=value,key=value" (NULL = defaults), e.g.
  /// for CSV "delimiter=;,header=false,schema=a:int32|b:string"; for Avro
  /// "reader_schema=FILE". Each format documents its keys in the README.
  const char* format_options;
  /// https:// and s3:// locations: non-zero skips TLS certificate and host
  /// name verification (default 0: verified).
  int tls_insecure;
  /// A PEM file of CA certificates to trust instead of the system's
  /// (NULL = the system store).
  const char* ca_bundle;
  /// http(s):// and s3:// requests: seconds a connection may take to open,
  /// and a transfer may go without a byte (a silent server, a stalled
  /// link), before the attempt fails and is retried (6 attempts in all).
  /// 0 = the defaults: 30 s to connect, 60 s without a byte. cql://: the
  /// time to connect and to wait for each answer (default 120 s).
  double timeout_s;
  /// Non-zero (default): when the location names many objects, `key=value`
  /// directories below it (`sales/year=2024/month=1/part-0.parquet`) add a
  /// column per key after the objects' own, as Hive, Spark, pyarrow, polars
  /// and DuckDB lay out and read partitioned data. Values are int64 when
  /// every one is an integer, date32 when every one is a YYYY-MM-DD date,
  /// else utf8; `__HIVE_DEFAULT_PARTITION__` is null; %XX escapes are
  /// decoded. Objects with different keys are an error (EINVAL, as in
  /// DuckDB); keys that name a column of the objects add nothing. Zero:
  /// never.
  int hive_partitioning;
  /// Only the objects whose partition values pass (NULL = all): conditions
  /// `key OP value` joined by ',' (all must hold), OP one of = != < <= > >=,
  /// `key=a|b` either value; values compare as the key's type, a null
  /// passes none; %XX escapes in keys and values (a ',' as %2C). The other
  /// objects are never opened. E.g. "year>=2023,city=Paris|Rome".
  const char* partition_filter;
  /// Only the rows that pass (NULL = all), as pyarrow's `filters=`: the
  /// conditions of partition_filter's form on any columns. Those on
  /// partition keys choose objects as partition_filter does; the others
  /// are evaluated on every decoded batch (a null passes none), and a
  /// reader with statistics (a Parquet row group's min, max and null count,
  /// Bloom filters and dictionary pages for `=`) skips the splits they
  /// exclude without decoding them. Groups of conditions separated by ';'
  /// are alternatives: a row passes every condition of some group
  /// ("x>5,city=Paris;y<0"); such groups may not name partition keys, and
  /// a literal ';' is %3B. Compared as the
  /// column's type: integers (another number by its exact value, as DuckDB
  /// compares it), floats, bool, strings and binary (bytewise),
  /// dates (YYYY-MM-DD), times (HH:MM:SS[.f]), timestamps (ISO 8601; a zone
  /// in the value is honoured, else it is taken as written; a time or
  /// timestamp finer than the unit by its exact value) and durations
  /// (integers in the column's unit); other types are an error. A value a
  /// type inferred from a sample does not take is an error only once the
  /// whole input is read and the column did not widen to a type that takes
  /// it (sluice_dataset_type_inferred). The columns
  /// a filter needs are read even when not projected. With a filter, split
  /// row counts are unknown (sluice_dataset_split_rows gives -1).
  /// E.g. "x>5,city=Paris|Rome,day>=2024-01-01".
  const char* filter;
  /// s3:// settings that override the environment and the AWS files
  /// (NULL = none); read during sluice_dataset_open only.
  const struct sluice_s3_options* s3;
  /// Many objects (Parquet, Arrow IPC, Avro, CSV): non-zero matches their
  /// columns by name, as DuckDB's union_by_name: the dataset has every
  /// object's columns, each once, in the order first met, and an object's
  /// rows are null in the columns it lacks. A name must have one type in
  /// every object that has it, or types that join (EINVAL otherwise,
  /// naming the column and both objects); CSV types, inferred object by
  /// object, are joined by name (int64 and float64 as float64, other mixes
  /// as string). Zero (the default): every object must have the same
  /// columns in the same order.
  int union_by_name;
  /// Polled while sluice_dataset_open (or _open_many) waits on an object's
  /// bytes: a pipe, a FIFO or standard input that is slow to write, an
  /// http(s):// or s3:// server that is slow to answer or a body that
  /// trickles (format detection, a header, a CSV schema sample); while a
  /// directory or glob is walked (when the walk starts, then every 50 ms)
  /// and an s3:// prefix or glob is listed (before each page, and while one
  /// is waited for); with several objects (a list, a glob, a directory,
  /// Hive partitions) also before each object is opened, and every 50 ms
  /// from the calling thread while it waits for the threads opening the
  /// others. A non-zero return stops the open with ECANCELED
  /// ("interrupted") within about 50 ms (an http(s):// or s3:// transfer:
  /// within about a second, as libcurl reports progress). Called from the
  /// opening thread, or from sluice's (some with a lock held): it must be
  /// quick and thread-safe (read a flag); a hook that only the opening
  /// thread can answer is still asked on it while the others wait. Not
  /// called after the open returns (a scan is stopped by releasing its
  /// stream). NULL (default) = never cancelled.
  int (*cancelled)(void* user);
  void* cancelled_user;
};

/// Fills `options` with the defaults: detect format, all columns, ordered,
/// no limit, all cores, 256 MiB budget, default allocator.
SLUICE_EXPORT void sluice_open_options_init(struct sluice_open_options* options);

/// An opened dataset: one object (file, URL), or several read as one table
/// (a directory, a glob, an S3 prefix), in one format.
struct sluice_dataset;

/// Opens `location` (a path, "-" for standard input, or a URL) and reads its
/// schema. A directory, a glob (`data/*.csv`, `logs/**/*.parquet`), an S3
/// prefix (`s3://bucket/dir/`) or an S3 glob names many objects: they are
/// read in name order as one table (names starting with '.' or '_' are
/// skipped, unless the glob spells that character: `_x*.csv`) and must all
/// have the same columns. `s3://bucket/dir` that is no object but has
/// objects under `dir/` reads as that prefix (here, not among the locations
/// of sluice_dataset_open_many: spell it `dir/` there). A `\` escapes a glob
/// character: `s3://b/run\[1\].csv` is the one object `run[1].csv`.
/// `cql://[user[:password]@]host[:port]/keyspace.table` names an Apache
/// Cassandra table, read by token ranges (format "cql", implied; format
/// options consistency=, page_rows=, splits=). On success `*out` must be
/// closed with sluice_dataset_close.
SLUICE_EXPORT int sluice_dataset_open(const char* location, const struct sluice_open_options* options,
                        struct sluice_dataset** out, struct sluice_error* error);

/// Opens `size` bytes in memory (a file's contents: Parquet, Arrow IPC,
/// Avro, CSV, ... as a file of them would hold) as a dataset, read in place
/// without a copy, as a mapped file is. The format comes from
/// options->format, else from `name`'s extension, else from the bytes (as
/// for a file); `name` (NULL = "<memory>") also names the data in messages.
/// The bytes must stay unchanged until `release(release_ctx)` is called
/// (release may be NULL): once the dataset is closed and no array of its
/// scans points into them, from whichever thread lets go last. The bytes
/// are sluice's from the call on: on failure, release has been called when
/// this returns.
SLUICE_EXPORT int sluice_dataset_open_memory(const void* data, size_t size, const char* name,
                               void (*release)(void* release_ctx), void* release_ctx,
                               const struct sluice_open_options* options,
                               struct sluice_dataset** out, struct sluice_error* error);

/// Opens several locations as one table: the objects of locations[0], then
/// those of locations[1], ... (each a path or URL as for sluice_dataset_open;
/// one naming many objects gives them in name order), like a list of files
/// given to pyarrow.dataset, polars or DuckDB. All must be in one format and
/// have the same columns. No partition columns (there is no one root to read
/// them below). "-" is refused (standard input is one object).
SLUICE_EXPORT int sluice_dataset_open_many(const char* const* locations, size_t n,
                                           const struct sluice_open_options* options,
                                           struct sluice_dataset** out,
                                           struct sluice_error* error);

/// The name of the format the dataset is read as ("arrow", "arrows", ...).
SLUICE_EXPORT const char* sluice_dataset_format(const struct sluice_dataset* dataset);

/// Copies the (projected) schema into `out`, a struct type with one child per
/// column. The caller releases it.
SLUICE_EXPORT int sluice_dataset_schema(struct sluice_dataset* dataset, struct ArrowSchema* out,
                          struct sluice_error* error);

/// Copies the schema of every column, projected or not (partition keys
/// included): the columns a filter may name, as it compares them. The
/// caller releases it.
SLUICE_EXPORT int sluice_dataset_full_schema(struct sluice_dataset* dataset,
                                             struct ArrowSchema* out, struct sluice_error* error);

/// 1 when the dataset's column `column` takes its values from key=value
/// directories (a partition key), else 0.
SLUICE_EXPORT int sluice_dataset_is_partition_key(struct sluice_dataset* dataset,
                                                  const char* column);

/// 1 when the dataset's column `column` has a type inferred from a sample
/// of the data that a later value may still widen (a CSV column that no
/// schema option types, read from a source that can be read again: see
/// sluice_dataset_refine), else 0. A filter value such a type does not take
/// is not refused when the dataset opens: no row passes it, and a scan that
/// reaches its end fails with the error the value gives, unless a value on
/// the way widened the column (the filter then compares as the wider type).
SLUICE_EXPORT int sluice_dataset_type_inferred(struct sluice_dataset* dataset,
                                               const char* column);

/// Number of independent splits the dataset plans to read (>= 0).
SLUICE_EXPORT int64_t sluice_dataset_num_splits(struct sluice_dataset* dataset);

/// Rows the reader dropped so far because the format options asked it to
/// skip bad rows (CSV bad_rows=skip), over every scan of the dataset; the
/// first one's position and reason go to `first_reason` (up to `cap` bytes,
/// may be NULL). 0 for formats that never drop rows.
SLUICE_EXPORT int64_t sluice_dataset_rows_skipped(struct sluice_dataset* dataset,
                                                  char* first_reason, size_t cap);

/// Applies what failed scans found out about column types that were inferred
/// from a sample: a CSV value that did not fit its column's inferred type
/// ends the scan with an error and asks for a wider type (int64 -> float64
/// -> string; a time or timestamp with finer digits -> nanoseconds). After
/// such a failure, call this: *changed = 1 means the schema is now wider and
/// scanning again reads the whole input with it (the CLI's convert and stats
/// and Python's sluice.read do this by themselves); 0 means the error
/// stands. EBUSY while a scan of the dataset is still open (close its stream
/// first). A source that can be read only once (a pipe) cannot be scanned
/// again. The row filter is parsed again for the wider types; when it
/// cannot be (a date past timestamp[ns]'s range), or when the objects of a
/// dataset cannot take the wider types together (union_by_name: a partition
/// key named like a column that is now of another type), the error is
/// returned with *changed = 1 and every later scan of the dataset fails
/// with it.
SLUICE_EXPORT int sluice_dataset_refine(struct sluice_dataset* dataset, int* changed,
                                        struct sluice_error* error);

/// Starts a scan as an Arrow C stream of struct arrays (one child per column).
/// Several scans of one dataset may run at once, except of a stream format
/// (an Arrow IPC stream, length-prefixed records), which is read once per
/// dataset, even from a file: its stats take that one read too (open the
/// location again for another). The stream may outlive the dataset handle.
SLUICE_EXPORT int sluice_dataset_scan(struct sluice_dataset* dataset, struct ArrowArrayStream* out,
                        struct sluice_error* error);

/// Closes the dataset. Streams and arrays it produced stay valid.
SLUICE_EXPORT void sluice_dataset_close(struct sluice_dataset* dataset);

/// Where a batch comes from: the split that produced it in plan order, and its
/// index within that split. (split, batch) sorts batches into plan order.
struct sluice_batch_tag {
  int64_t split;
  int64_t batch;
  /// Custom metadata the source attached to the batch (an Arrow IPC record
  /// batch message's custom_metadata), in the C Data Interface metadata
  /// layout, or NULL. Valid until the next sluice_scanner_next or close.
  const char* metadata;
};

/// A scan with positions: like sluice_dataset_scan, but each batch comes with
/// its tag, which matters with ordered = 0.
struct sluice_scanner;

/// Starts a scan of every split with the dataset's options into *out (close
/// it with sluice_scanner_close). As with sluice_dataset_scan, a stream
/// format (an Arrow IPC stream, length-prefixed records) is read once per
/// dataset: a second scan of it fails at its first sluice_scanner_next
/// ("can be scanned only once"). NULL arguments are EINVAL, a scan that
/// cannot start (out of memory) fails here; a split's own errors come from
/// sluice_scanner_next. Same as sluice_scanner_open_with(dataset, NULL, ...).
SLUICE_EXPORT int sluice_scanner_open(struct sluice_dataset* dataset, struct sluice_scanner** out,
                        struct sluice_error* error);

/// Next batch into `out` and its position into `tag` (may be NULL). At the end
/// of the scan returns 0 with out->release == NULL.
SLUICE_EXPORT int sluice_scanner_next(struct sluice_scanner* scanner, struct ArrowArray* out,
                        struct sluice_batch_tag* tag, struct sluice_error* error);

/// Stops the workers and frees the scanner. Arrays already returned stay valid.
SLUICE_EXPORT void sluice_scanner_close(struct sluice_scanner* scanner);

/// Rows split `split` (0..sluice_dataset_num_splits - 1) is planned to hold,
/// before any row limit, when the format knows it ahead (e.g. a Parquet row
/// group's count); -1 when it does not, or when `split` is out of range.
/// Lets a caller place each split's rows in preallocated columns.
SLUICE_EXPORT int64_t sluice_dataset_split_rows(struct sluice_dataset* dataset, int64_t split);

/// Reads what it takes for sluice_dataset_split_rows to know more splits'
/// rows: the block headers of a local Avro file (every 16 KiB or so, so it
/// reads a little of the whole file; remote objects are left unknown). Other
/// formats already know theirs or cannot tell: 0 and nothing changes. Call
/// it before scanning the dataset, never while a scan of it runs. Errors (a
/// bad block header) are those a scan would meet.
SLUICE_EXPORT int sluice_dataset_count_split_rows(struct sluice_dataset* dataset,
                                                  struct sluice_error* error);

/// Memory for the final columns of a whole scan, for callers that gather a
/// read into one column per field (a DataFrame): where a split's rows are
/// known ahead and its reader can (Parquet), values are decoded straight
/// into their place instead of into a batch the caller copies from. The
/// batches are delivered as usual; those decoded in place have buffers that
/// point into this memory, so the caller can tell and skip the copy.
struct sluice_placement {
  /// Entries in `values` and `widths`: the scan's (projected) columns.
  int64_t n_columns;
  /// Per column: room for every row of the scan (sum of split_rows), or
  /// NULL to leave the column alone. Must not move while the scan runs.
  void* const* values;
  /// Per placed column: bytes per value, that of its Arrow type (e.g. 8 for
  /// int64, float64, timestamps); a reader places only a matching column.
  const int32_t* widths;
  /// Rows planned for each split of the scan, in order (the scan's
  /// n_splits entries, e.g. from sluice_dataset_split_rows); split k's rows
  /// start at the sum of those before it. A split whose count turns out
  /// different is decoded into its own memory.
  const int64_t* split_rows;
  /// Called exactly once, also when opening the scan fails: when the scan
  /// and every array that points into the memory are done with it (NULL:
  /// the caller keeps the memory alive long enough on its own).
  void (*release)(void* ctx);
  void* ctx;
};

/// Options for sluice_scanner_open_with: which splits to scan, and overrides of
/// what the dataset was opened with. Always start from sluice_scan_options_init.
struct sluice_scan_options {
  /// The first split to scan, in the dataset's plan numbering (default 0).
  int64_t first_split;
  /// Splits to scan from first_split (-1 = to the last one, the default; 0 =
  /// none: the scan ends at once).
  int64_t n_splits;
  /// -1 (default): as the dataset was opened; 1: batches in plan order; 0: as
  /// they finish.
  int ordered;
  /// Bytes of decoded batches allowed in flight (0 = as the dataset was opened).
  int64_t memory_budget;
  /// Worker threads (0 = as the dataset was opened).
  int threads;
  /// Optional (NULL = none): final columns to decode straight into.
  const struct sluice_placement* placement;
};

/// Fills `options` with the defaults: every split, everything else as the
/// dataset was opened.
SLUICE_EXPORT void sluice_scan_options_init(struct sluice_scan_options* options);

/// Like sluice_scanner_open, over splits [first_split, first_split + n_splits)
/// only (e.g. one Dask partition's group of splits). Tags keep the dataset's
/// split numbers. The dataset's row limit applies to each scan. A range
/// outside 0..sluice_dataset_num_splits or a bad override is EINVAL.
/// `options` NULL = sluice_scan_options_init's defaults.
SLUICE_EXPORT int sluice_scanner_open_with(struct sluice_dataset* dataset,
                                           const struct sluice_scan_options* options,
                                           struct sluice_scanner** out,
                                           struct sluice_error* error);

/* ---- Statistics ----------------------------------------------------------- */

/// Per-column statistics as `sluice stats` prints them. min/max are rendered as
/// text (the CSV spelling of the value) so that every type fits.
///
/// Strings and binaries (fixed-size too) keep at most 64 KiB of a value's
/// bytes: when the min or max value is longer, it is reported the way Parquet
/// truncates statistics, as an inexact bound. min is the value's first 64 KiB
/// (a lower bound), max the first 64 KiB with the last byte incremented and
/// carried (strings: cut back to a whole character and the last code point
/// incremented, so both stay valid UTF-8): an upper bound. min_exact /
/// max_exact are 0 for them. When nothing is above the prefix (its bytes are
/// all 0xFF, its characters all U+10FFFF) there is no upper bound and
/// has_min_max is 0. So a column holding one huge value costs 64 KiB (128
/// KiB of hex), not a copy of the value. Stored bounds longer than that go
/// the same way.
struct sluice_column_stats {
  char* name;
  char* type;          ///< Arrow format string of the column
  int64_t count;       ///< values, nulls included
  int64_t null_count;
  /// 0 when the type has no order, all values are null, a float column
  /// holds only NaN and nulls (min and max skip NaN, as pyarrow's min_max),
  /// or a string/binary max is over 64 KiB of 0xff bytes (no bound above it)
  int has_min_max;
  char* min;
  char* max;
  /// Bytes of min / max before their terminating NUL: a string value may
  /// hold U+0000, which a C string would cut short.
  int64_t min_len;
  int64_t max_len;
  /// min / max are the actual extremes. 0 for a bound only: stored
  /// statistics may hold truncated or widened bounds, and a string or binary
  /// extreme longer than 64 KiB is cut (see above), computed or stored.
  int min_exact;
  int max_exact;
  /// 1 when count, null_count, min and max came from statistics stored in the
  /// data's metadata (e.g. a Parquet footer) without decoding any values.
  int from_metadata;
};

/// Computes statistics for the (projected) columns in parallel over all splits.
/// Column by column: a column whose stored statistics answer it exactly in
/// every file (known null counts, exact bounds) is taken from them, with
/// from_metadata set, and only the other columns are decoded. With a row
/// limit or a row filter nothing is taken from stored statistics.
/// `*out` is an array of `*n_out` entries; free it with sluice_stats_free.
SLUICE_EXPORT int sluice_dataset_stats(struct sluice_dataset* dataset, struct sluice_column_stats** out,
                         int64_t* n_out, struct sluice_error* error);

/// What the data's stored metadata says about the (projected) columns,
/// without decoding anything: count = the row count (-1 if unknown),
/// null_count (-1 if unknown), has_min_max with min/max rendered as
/// sluice_dataset_stats renders them, and min_exact/max_exact. An Arrow IPC
/// file gives counts (its batches' headers: rows and top-level nulls, left
/// -1 for dictionary and union columns) and no bounds. Formats that store
/// no statistics (CSV, Avro, IPC streams, ...) give count = null_count = -1
/// and no bounds. The figures cover the whole data: a row limit is not applied.
/// Free the result with sluice_stats_free.
SLUICE_EXPORT int sluice_dataset_stored_stats(struct sluice_dataset* dataset,
                                              struct sluice_column_stats** out, int64_t* n_out,
                                              struct sluice_error* error);

/// Frees an array of `n` statistics from sluice_dataset_stats or
/// sluice_dataset_stored_stats (names and rendered bounds included).
/// NULL-safe.
SLUICE_EXPORT void sluice_stats_free(struct sluice_column_stats* stats, int64_t n);

/* ---- Writing -------------------------------------------------------------- */

/// Options for sluice_write. Always start from sluice_write_options_init.
struct sluice_write_options {
  /// Output format name, or NULL to choose from the extension of `location`.
  const char* format;
  /// Body compression where the format has it: "none", "lz4", "zstd", ...
  /// NULL or "" = the format's default (Parquet: snappy, as pyarrow; CSV
  /// and JSON Lines: from the name's suffix, .gz, .zst, ...; others: none).
  const char* compression;
  /// Allocator for the writer's own memory (NULL = default).
  const struct sluice_allocator* allocator;
  /// Writer options as "key=value,key=value" (NULL = none). A comma right
  /// after '=' is the value ("delimiter=,"). CSV keys: delimiter
  /// (comma|semicolon|tab|pipe|space|<char>), header (true|false), null (the
  /// spelling of nulls, default empty), quote (<char>|none), line_terminator
  /// (lf|crlf), float_format (shortest|point: "1" or "1.0"), timestamp_format
  /// (space|iso: "2023-01-15 12:00:00Z" or "2023-01-15T12:00:00Z"). An
  /// unknown key or a bad value is EINVAL; formats without options ignore
  /// them.
  const char* format_options;
  /// Optional: custom metadata for each record batch's message (Arrow IPC
  /// outputs; other formats ignore it). Called once per batch, right after
  /// the writer took it from the stream; sets *metadata to a blob in the C
  /// Data Interface metadata layout that stays valid until the next call, or
  /// to NULL. A non-zero return fails the write with that code.
  int (*batch_metadata)(void* user, const struct ArrowArray* batch, const char** metadata);
  void* batch_metadata_user;
  /// s3:// outputs over https: non-zero skips TLS certificate and host name
  /// verification (default 0: verified).
  int tls_insecure;
  /// A PEM file of CA certificates to trust instead of the system's
  /// (NULL = the system store).
  const char* ca_bundle;
  /// http(s):// and s3:// requests: seconds a connection may take to open,
  /// and a transfer may go without a byte (a silent server, a stalled
  /// link), before the attempt fails and is retried (6 attempts in all).
  /// 0 = the defaults: 30 s to connect, 60 s without a byte. cql://: the
  /// time to connect and to wait for each answer (default 120 s).
  double timeout_s;
  /// Local file outputs: non-zero renames the finished file into place
  /// without the fsync before (default 0: the file's bytes, then the
  /// directory entry, are on disk when sluice_write returns, so a crash
  /// leaves the old file or the whole new one). Faster when durability does
  /// not matter (scratch files): the bytes then wait in the page cache.
  int no_fsync;
  /// s3:// outputs: settings that override the environment and the AWS
  /// files (NULL = none), part_size included.
  const struct sluice_s3_options* s3;
  /// Optional: polled before each batch is taken from the stream and while
  /// the output is committed (deferred copies, S3 parts), from any thread.
  /// A non-zero return stops the write with ECANCELED ("interrupted"),
  /// leaving nothing at `location` (the CLI's and Python's Ctrl-C).
  int (*cancelled)(void* user);
  void* cancelled_user;
  /// Hive-partitioned output (n_partition_by > 0): `location` is a
  /// directory or an s3:// prefix, and each row goes to a file
  /// `<location>/<key>=<value>/.../part-<n><ext>` chosen by its values of
  /// these top-level columns, which the files leave out (as pyarrow's
  /// write_dataset, DuckDB's PARTITION_BY and polars' partition_by write
  /// them; readers of Hive partitions, sluice's included, give them back as
  /// columns). Values are spelled as in CSV (integers, YYYY-MM-DD dates,
  /// true/false, strings; dictionaries through their values) and
  /// percent-escaped except for A-Z a-z 0-9 - . _ ~; a null is
  /// `__HIVE_DEFAULT_PARTITION__`. Other types (floats, timestamps, ...)
  /// are refused (EINVAL). The format comes from `format`, else from the
  /// location's extension. No file appears before all are written, and on
  /// error none does: a local output is written in a hidden directory
  /// made inside it (`.sluice-XXXXXX`), whose partitions are moved into
  /// place at the end; S3 objects are uploaded at the end (8 at a time). What may be
  /// there already: see existing_data_behavior. n_partition_by > 0 with
  /// partition_by NULL is EINVAL.
  const char* const* partition_by;
  int64_t n_partition_by;
  /// Partitioned output: more distinct partitions than this is an error
  /// (0 = 1024, as pyarrow's max_partitions). Here and in the counts below
  /// (and n_partition_by), a negative value is EINVAL, not the default.
  int64_t max_partitions;
  /// Partitioned output: rows are buffered per partition until this many
  /// bytes are held in all, then the partition holding the most is written
  /// out to its file, which stays open (a row group of Parquet, a block of
  /// Avro, record batches of Arrow IPC, rows of text); the rest are written
  /// at the end. Between spills an open file holds a descriptor and no
  /// buffer; at most a quarter of the process's RLIMIT_NOFILE soft limit
  /// of files stay open (64 to 1024; 64 for s3:// and whole-file
  /// compressed outputs, whose files hold more), the least recently used
  /// ended first (its partition goes on in its next file).
  /// 0 = 256 MiB.
  int64_t partition_buffer_bytes;
  /// Dataset output (partition_by or max_rows_per_file; not allowed for a
  /// single file): what may already be at `location`, with the meanings of
  /// pyarrow's write_dataset and DuckDB's COPY options. Without
  /// partition_by the location itself is the one partition.
  /// - SLUICE_EXISTING_DATA_ERROR (0, the default): a local directory must
  ///   be absent or empty, an S3 prefix hold no object (EEXIST).
  /// - SLUICE_EXISTING_DATA_OVERWRITE_OR_IGNORE: the new files are named
  ///   part-0, part-1, ... in their partition's directory and replace files
  ///   of those names; everything else stays (pyarrow's
  ///   overwrite_or_ignore, DuckDB's OVERWRITE_OR_IGNORE). Writing the same
  ///   table again gives the same files; a partition that got more files
  ///   before keeps the extra ones.
  /// - SLUICE_EXISTING_DATA_DELETE_MATCHING: each partition written
  ///   replaces its directory's contents; other partitions stay (pyarrow's
  ///   delete_matching).
  /// - SLUICE_EXISTING_DATA_APPEND: what is there stays; the new files go
  ///   beside it, named past the highest part-<n> of their directory, so
  ///   none is replaced (DuckDB's APPEND). Writing a table again adds its
  ///   rows again.
  /// Locally the new files and directories are swapped in one rename each
  /// (RENAME_EXCHANGE where the file system has it, so a partition is
  /// never missing), old entries removed at the end, and a failure on the
  /// way puts everything back. On S3 new objects get new names (past the
  /// existing part-<n>) except with overwrite_or_ignore. After a failed
  /// upload, the objects uploaded before it that replaced nothing are
  /// deleted again; those overwrite_or_ignore uploaded over old ones cannot
  /// be given back (S3 keeps no old version). delete_matching deletes the
  /// old objects of the partitions written after every upload (a failure
  /// then leaves some of them beside the new ones; the message says so).
  int existing_data_behavior;
  /// A file holds at most this many rows; the rows after it go on in the
  /// next file (part-1, part-2, ...), as with pyarrow's
  /// write_dataset(max_rows_per_file=). With partition_by, per partition;
  /// without it, `location` becomes a directory or s3:// prefix of
  /// part-<n><ext> files (pyarrow's write_dataset without partitioning),
  /// written as partitioned output is (all or nothing, existing_data_behavior).
  /// 0 = no limit (and one file without partition_by).
  int64_t max_rows_per_file;
};

/// sluice_write_options.existing_data_behavior.
enum sluice_existing_data_behavior {
  SLUICE_EXISTING_DATA_ERROR = 0,
  SLUICE_EXISTING_DATA_OVERWRITE_OR_IGNORE = 1,
  SLUICE_EXISTING_DATA_DELETE_MATCHING = 2,
  SLUICE_EXISTING_DATA_APPEND = 3
};

/// Fills `options` with the defaults: format from the extension, no
/// compression, no options, default allocator, TLS verified, fsync on
/// commit, S3 settings from the environment.
SLUICE_EXPORT void sluice_write_options_init(struct sluice_write_options* options);

/// Writes every batch of `stream` (struct arrays) to `location` ("-" =
/// standard output). A batch whose struct array has null rows (a validity
/// bitmap of its own) is refused with EINVAL naming the first, as pyarrow
/// refuses to import one as a record batch: the writer would otherwise
/// write the children's values under it. The file appears atomically: on error nothing is left at
/// `location` and an existing file there is untouched; a local file is
/// fsynced before it appears (see no_fsync). An existing file keeps its
/// mode (and owner where permitted); one the caller may not write is
/// refused with EACCES, as open(O_WRONLY) would refuse it. The stream is
/// consumed but not released.
///
/// EDOM: an Avro output's enum column (a string dictionary, whose first
/// batch's values became the enum's symbols) met a value its symbols lack,
/// as a Parquet file's categorical column does when each row group has its
/// own dictionary. Writing again from the start with the Avro write option
/// enums=false (strings) takes it; the CLI and the Python package do that
/// by themselves when the input can be read again.
///
/// A `cql://[user[:password]@]host[:port]/keyspace.table` location loads the
/// rows into that existing Cassandra table (format "cql", implied): INSERTs
/// by column name, each value encoded as the table's type for it. Not
/// atomic: rows written before an error stay (Cassandra has no transaction
/// across partitions). format_options keys: consistency
/// (one|local_one|quorum|local_quorum|all), batch_rows (rows of one partition
/// per UNLOGGED BATCH, default 32), in_flight (requests awaiting answers,
/// default 128), nulls (unset|null: a null leaves the cell as it was, the
/// default, or deletes it).
SLUICE_EXPORT int sluice_write(struct ArrowArrayStream* stream, const char* location,
                 const struct sluice_write_options* options, struct sluice_error* error);

/// A writer that takes batches one at a time (the push side of
/// sluice_write, as pyarrow's RecordBatchWriter / ParquetWriter): open it
/// with the schema, hand it each batch, close it. Every output sluice_write
/// knows works the same (formats, partition_by, s3://, cql://), and so does
/// the commit: nothing appears before sluice_writer_close succeeds, and
/// sluice_writer_abort (or a failed write) leaves nothing. The batches are
/// written on a thread of the writer's own.
struct sluice_writer;

/// Opens a writer of `schema` (copied) to `location`. `options` (NULL =
/// defaults) and everything it points to must stay valid until
/// sluice_writer_close or sluice_writer_abort returns. Errors of the output
/// itself (an unknown format, a location that cannot be written) may come
/// from the first sluice_writer_write or from sluice_writer_close instead.
SLUICE_EXPORT int sluice_writer_open(const char* location, const struct ArrowSchema* schema,
                                     const struct sluice_write_options* options,
                                     struct sluice_writer** out, struct sluice_error* error);

/// Hands `batch` (a struct array of the schema; taken: released by the
/// writer, also on error) to the writer and returns once the writer has
/// consumed it: its buffers are not read after this returns, so the caller
/// may refill the memory they point to (as pyarrow's writers allow). What
/// the writer must keep past that (rows of an unfinished Parquet row group,
/// a partition's rows) it has copied. Its release callback may still be
/// called later, from the writer's thread (the Arrow C data interface lets
/// a consumer release when it likes). After the write failed, returns its
/// error.
/// The batch is checked against the schema's layout (buffers, children,
/// lengths, offsets, the UTF-8 of strings) before it is written, not
/// against its logical types: an int64
/// column under an int32 schema has the same layout and would be misread,
/// so hand over batches of the schema given to sluice_writer_open.
SLUICE_EXPORT int sluice_writer_write(struct sluice_writer* writer, struct ArrowArray* batch,
                                      struct sluice_error* error);

/// Ends the input, waits until everything is written and committed, and
/// frees the writer: 0, or the write's error (nothing left at the
/// location then).
SLUICE_EXPORT int sluice_writer_close(struct sluice_writer* writer, struct sluice_error* error);

/// Stops the write (nothing left at the location, an existing file kept)
/// and frees the writer. NULL-safe.
SLUICE_EXPORT void sluice_writer_abort(struct sluice_writer* writer);

/* ---- Formats -------------------------------------------------------------- */

/// Names of the formats sluice reads (NULL-terminated list).
SLUICE_EXPORT const char* const* sluice_reader_formats(void);
/// Names of the formats sluice writes (NULL-terminated list).
SLUICE_EXPORT const char* const* sluice_writer_formats(void);

#ifdef __cplusplus
}
#endif

#endif  // SLUICE_H

// Sources: where bytes come from. A source hands out *views*: a pointer and a
// length into memory the source owns, kept alive by a reference (struct
// sl_ref) that the reader retains for as long as arrays point into it. A local
// file is mmap'd whole, so views of it cost nothing.
#ifndef SL_SOURCE_H
#define SL_SOURCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sluice.h"
#include "../core/sl_ref.h"

/// A view of bytes. Valid while `owner` is retained; release it with
/// sl_view_release. `owner` may be NULL when the bytes live as long as the
/// source itself.
struct sl_view {
  const uint8_t* data;
  int64_t size;
  struct sl_ref* owner;
};

void sl_view_release(struct sl_view* view);

/// Where views of zero bytes point, rather than at NULL, so that callers
/// may memcmp/memcpy them without special cases. Shared by every source.
extern const uint8_t sl_empty_bytes[1];
/// Replaces *view with a copy of its bytes in a block of its own, for bytes
/// kept as long as the reader (a footer) that would otherwise keep a larger
/// fetched block alive (a remote object's cached edge). On failure *view is
/// unchanged.
int sl_view_detach(struct sl_view* view, const struct sluice_allocator* alloc,
                   struct sluice_error* error);

struct sl_source;

struct sl_source_ops {
  /// Ranged read of exactly `length` bytes at `offset` (EIO + message naming
  /// the object and offset if the object is shorter). Thread-safe.
  /// NULL for forward-only sources (pipes).
  int (*read_at)(struct sl_source* source, int64_t offset, int64_t length,
                 struct sl_view* out, struct sluice_error* error);
  /// Forward read of up to `length` bytes from the stream position (fewer
  /// only at end of data; size 0 = end). Not thread-safe: one reader at a
  /// time.
  int (*read_next)(struct sl_source* source, int64_t length, struct sl_view* out,
                   struct sluice_error* error);
  /// Optional (NULL = read_next): see sl_source_read_some.
  int (*read_some)(struct sl_source* source, int64_t length, struct sl_view* out,
                   struct sluice_error* error);
  void (*close)(struct sl_source* source);
  /// Forward-only sources: a view of up to `length` bytes from the stream
  /// position WITHOUT consuming them (format detection reads the head, then
  /// the reader starts at byte 0 again). NULL for ranged sources.
  int (*peek)(struct sl_source* source, int64_t length, struct sl_view* out,
              struct sluice_error* error);
  /// Optional (NULL = no-op): see sl_source_drop.
  void (*drop)(struct sl_source* source, int64_t offset, int64_t length);
  /// Optional (NULL = no-op): see sl_source_trim.
  void (*trim)(struct sl_source* source);
  /// Optional (NULL = no-op): see sl_source_prefetch.
  void (*prefetch)(struct sl_source* source);
  /// Optional (NULL = ENOTSUP): see sl_source_seek.
  int (*seek)(struct sl_source* source, int64_t offset, struct sluice_error* error);
};

struct sl_source {
  const struct sl_source_ops* ops;
  /// The location as the user wrote it (for error messages). Owned.
  char* name;
  /// Total size in bytes, or -1 when unknown (pipes).
  int64_t size;
  const struct sluice_allocator* alloc;
  /// The ref that owns the source's memory (e.g. the mapping), or NULL.
  struct sl_ref* owner;
  /// read_at hands out views of memory that is already there (a mapped local
  /// file): a view of the whole object costs nothing and holds no memory of
  /// its own. 0 for sources whose read_at fetches (HTTP, S3): a reader that
  /// would view the whole object reads it forward instead, in bounded memory.
  int mapped;
  /// While sluice_dataset_open reads the source (each object's, with
  /// several): its caller's
  /// sluice_open_options.cancelled (NULL = none), polled by reads that wait
  /// (a pipe, an HTTP body) every SL_SOURCE_CANCEL_POLL_MS. Set with
  /// sl_source_ask_cancel and asked only on the thread that set it
  /// (`cancel_asker`): the source's own threads (HTTP readahead) run on past
  /// the open, when the hook and its caller's state may be gone, and read
  /// only `cancel_seen`, which the asker sets when the hook says yes.
  int (*cancelled)(void* user);
  void* cancelled_user;
  pthread_t cancel_asker;
  int has_asker;  ///< set once, before the source's own threads start
  atomic_int cancel_seen;
};

/// How often a read that waits polls sl_source.cancelled.
#define SL_SOURCE_CANCEL_POLL_MS 50

/// Gives `source` the open's cancel hook, to be asked on the calling thread.
/// A source that has an asker keeps it (an HTTP source takes the hook when
/// it is made, and its threads may be reading `has_asker` by now).
static inline void sl_source_ask_cancel(struct sl_source* source, int (*cancelled)(void* user),
                                        void* user) {
  if (cancelled == NULL || source->has_asker) return;
  source->cancelled = cancelled;
  source->cancelled_user = user;
  source->cancel_asker = pthread_self();
  source->has_asker = 1;
}

/// Takes the hook away when the open is done: on the asker's thread, or on
/// one that joined it.
static inline void sl_source_stop_asking(struct sl_source* source) {
  source->cancelled = NULL;
  source->cancelled_user = NULL;
}

/// Whether the reads on this thread ask the hook (and so wait in slices).
static inline int sl_source_asks_here(const struct sl_source* source) {
  return source->has_asker && pthread_equal(pthread_self(), source->cancel_asker) &&
         source->cancelled != NULL;
}

/// Whether the open `source` is read for was cancelled: the hook, on the
/// thread that asks it; elsewhere, whether that thread has heard yes.
static inline int sl_source_cancelled(struct sl_source* source) {
  if (atomic_load(&source->cancel_seen)) return 1;
  if (!sl_source_asks_here(source) || !source->cancelled(source->cancelled_user)) return 0;
  atomic_store(&source->cancel_seen, 1);
  return 1;
}

struct sl_http_pool;

/// Settings for remote locations (http://, https://).
struct sl_remote_options {
  int tls_insecure;       ///< non-zero: skip certificate and host name checks
  const char* ca_bundle;  ///< PEM file of trusted CAs, NULL = system store
  double timeout_s;       ///< connect / no-byte timeout (sluice_open_options), 0 = defaults
  /// Bytes a forward read's readahead may hold at once (parts fetched and not
  /// yet consumed); 0 = the default, 4 parts of 8 MiB. A small budget means
  /// fewer and smaller parts.
  int64_t readahead_bytes;
  /// Easy handles (and so connections) shared with the other objects of the
  /// same dataset (sl_http_pool.h); NULL = the source keeps its own.
  struct sl_http_pool* http_pool;
  /// The object's size as a listing gave it (0 = not known): a small object
  /// is then fetched whole by its opening GET instead of in two requests.
  int64_t size_hint;
  /// The reader reads the object's end first (a Parquet footer): the opening
  /// GET asks for the last 64 KiB instead of the first.
  int tail_first;
  /// The reader reads the object forward from byte 0, now (a named stream
  /// format, the one object or a dataset's first): the opening GET is the
  /// download (bytes=0-), which goes on in the background into the
  /// readahead, instead of a GET of the first 64 KiB and then the download.
  int stream_first;
  /// s3:// settings from the caller, over the environment's (NULL = none).
  const struct sluice_s3_options* s3;
  /// Writes: the caller's sluice_write_options.cancelled (NULL = none),
  /// polled between the pieces of a commit (copies, S3 parts). Reads: the
  /// caller's sluice_open_options.cancelled while the dataset opens, which
  /// an http(s):// source takes as its sl_source.cancelled. Both: asked by
  /// sl_location_expand's listing, on its (the calling) thread.
  int (*cancelled)(void* user);
  void* cancelled_user;
};

/// Whether the write `remote` (NULL = none) belongs to was cancelled.
static inline int sl_remote_cancelled(const struct sl_remote_options* remote) {
  return remote != NULL && remote->cancelled != NULL && remote->cancelled(remote->cancelled_user);
}

/// 1 for http:// and https:// URLs.
int sl_location_is_http(const char* location);
/// 1 for http://, https:// and s3:// locations (read through libcurl).
int sl_location_is_remote(const char* location);
/// `location` as messages show it, into out[cap] (cut short if needed):
/// the password of an http(s):// or cql:// location's user:password@ as
/// "***" (libcurl sends it as Basic authentication; it appeared in every
/// error), and of any other URL's (where a redirect led: ftp://), and so the values of a presigned http(s) URL's signature and
/// credential parameters (X-Amz-Signature, X-Amz-Credential, ...); on one
/// line (a name with a newline or another control byte as sl_escaped_line
/// spells it). The length of the whole result, as snprintf.
size_t sl_location_shown(const char* location, char* out, size_t cap);

/// Opens a location: a path, "file://path", "-" (standard input), or an
/// http:// / https:// URL, or s3://bucket/key.
int sl_source_open(const char* location, const struct sluice_allocator* alloc,
                   struct sl_source** out, struct sluice_error* error);
/// sl_source_open with settings for remote locations (`remote` may be NULL:
/// defaults).
int sl_source_open_remote(const char* location, const struct sl_remote_options* remote,
                          const struct sluice_allocator* alloc, struct sl_source** out,
                          struct sluice_error* error);

/// Convenience wrappers over ops (read_at returns ENOTSUP when forward-only).
int sl_source_read_at(struct sl_source* source, int64_t offset, int64_t length,
                      struct sl_view* out, struct sluice_error* error);
int sl_source_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                        struct sluice_error* error);
/// read_next for readers that take any amount: up to `length` bytes, at
/// least one unless the data ended (size 0 = end). A remote source returns
/// what has arrived, so the reader decodes while the rest downloads.
int sl_source_read_some(struct sl_source* source, int64_t length, struct sl_view* out,
                        struct sluice_error* error);
/// The first bytes of the object (up to `length`; fewer when it is shorter)
/// without moving the stream position: read_at when the source has it, else
/// the forward source's peek.
int sl_source_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                   struct sluice_error* error);
/// A hint that bytes [offset, offset + length) will not be read again soon
/// (e.g. a split is done with its byte range): a mapped file releases those
/// pages from the process's resident set, so that scanning a file larger than
/// memory keeps RSS bounded. Always safe, even while views of the range are
/// alive: the bytes are read back from the file if touched again.
void sl_source_drop(struct sl_source* source, int64_t offset, int64_t length);
/// A hint that the reader has opened the object and planned its splits:
/// bytes the source cached only to serve that (a remote object's first and
/// last 64 KiB) may go, so that a dataset of many objects, all opened before
/// its scan, holds little per object until each is read. Bytes cached for
/// the scan itself (a small object fetched whole) stay.
void sl_source_trim(struct sl_source* source);
/// A hint that the object will be read soon (a dataset's next objects while
/// one is scanned): a remote source that its reader reads forward starts
/// fetching ahead of the stream position now. Thread-safe.
void sl_source_prefetch(struct sl_source* source);
/// Forward reads go on from byte `offset` (0 <= offset <= size), and what
/// was fetched ahead of the old stream position goes (views keep their
/// bytes). For a reader that sampled a remote object's head by ranged reads
/// and reads it forward from there, or from its start again (a compressed
/// CSV object of a dataset, read after all are opened; a second scan).
/// ENOTSUP when the source cannot (pipes, servers without ranges). Not while
/// another thread reads the source forward.
int sl_source_seek(struct sl_source* source, int64_t offset, struct sluice_error* error);
void sl_source_close(struct sl_source* source);

/// For read_at implementations: clears *out and checks that [offset,
/// offset + length) lies within the source (EIO naming the object, the
/// offset and the size if not).
int sl_source_check_range(const struct sl_source* source, int64_t offset, int64_t length,
                          struct sl_view* out, struct sluice_error* error);
/// read_next of a source whose bytes are all there (a mapped file, memory):
/// up to `length` bytes at *cursor through read_at, *cursor moved past them.
int sl_source_read_forward(struct sl_source* source, int64_t* cursor, int64_t length,
                           struct sl_view* out, struct sluice_error* error);

#endif

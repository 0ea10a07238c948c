// HTTP(S) sources: see sl_source_http.h for the behaviour. This file holds
// the request machinery (one easy handle per request, taken from a pool so
// connections are reused), the retry policy, ranged reads, and the readahead
// of parts behind forward reads.
#include "sl_source_http.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../core/sl_alloc.h"
#include "../core/sl_block_pool.h"
#include "../core/sl_error.h"
#include "../core/sl_hash.h"
#include "../core/sl_sleep.h"
#include "../core/sl_value_text.h"
#include "sl_curl.h"
#include "sl_http_pool.h"
#include "sl_s3_xml.h"
#include "sl_source_inflate.h"

/// Readahead parts are small, so that their buffers return to the block pool
/// and are refilled while the object downloads (W3's 16.5 MiB in parts of 8
/// MiB mapped 16.5 MiB of fresh pages: a fifth of its CPU time).
#define HTTP_DEFAULT_PART ((int64_t)1 << 20)
#define HTTP_DEFAULT_PARALLEL 4
#define HTTP_MIN_PART ((int64_t)64 << 10)
/// A helper's GET asks for this many bytes of parts at once (fewer requests
/// on a slow link, where each costs a round trip).
#define HTTP_RUN_BYTES ((int64_t)8 << 20)
/// Most parts held at once (the readahead's slots).
#define HTTP_MAX_SLOTS 256
/// One connection streaming at this rate or faster is left alone; a slower
/// one gets helpers fetching ranges ahead of it in parallel. Against an
/// object store across a network (tens of MB/s to about a hundred per
/// connection) parallel ranges multiply the throughput; against a server on
/// the same machine, more connections only take CPU from it and from the
/// decoding (W3 over MinIO on loopback, where one connection brings 220 to
/// 1,000 MB/s: one GET 43 ms, four ranged GETs 50 ms; curl's one GET 31 ms).
#define HTTP_FAST_LINK ((int64_t)128 << 20)
/// The lead alone keeps at most this many bytes of parts ahead of the
/// consumer: a single stream needs little to absorb jitter, and parts within
/// it are refilled from the block pool instead of being fresh memory (a
/// window of 32 MiB mapped all of W3's 16.5 MiB afresh). Helpers get the
/// whole readahead for their runs.
#define HTTP_LEAD_WINDOW ((int64_t)4 << 20)
/// A download waits at most this long inside its transfer for the reader to
/// free a slot; then it ends the GET there and waits outside it, to resume
/// with a new one. A reader that pauses (a consumer busy with each batch)
/// would otherwise hold the connection silent until libcurl's stall timeout
/// (60 s) failed it, six times over, or the server dropped it.
#define HTTP_PARK_AFTER_MS 5000
/// The lead's rate is judged once this many bytes of its stream arrived (or
/// two parts, if parts are smaller).
#define HTTP_RATE_SAMPLE ((int64_t)1 << 20)
/// Ranged reads within the first or the last this many bytes of the object
/// are served from one cached fetch of that edge: opening a file reads magic
/// numbers, a detection peek, a footer length and a footer there, which would
/// otherwise be four round trips.
#define HTTP_EDGE_CACHE ((int64_t)64 << 10)
/// Objects up to this size are fetched whole at open (by the opening GET
/// when a listing gave the size, else by one more after its 64 KiB), and
/// every read is served from memory: a round trip costs as much as a
/// transfer of several hundred KiB, and a small Parquet object's footer and
/// column chunks were three more GETs (256 small objects under an S3 prefix:
/// 4 requests each, now 1). Within the dataset's budget for them
/// (sl_http_pool.h); an object read to its end lets go (http_drop).
#define HTTP_WHOLE_OBJECT (4 * HTTP_EDGE_CACHE)
/// The largest read of the head kept for the reads after the open (a CSV's
/// default inference sample); larger ones (an Avro split) are not read again.
#define HTTP_KEEP_HEAD (((int64_t)1 << 20) + HTTP_EDGE_CACHE)
#define HTTP_MAX_PARALLEL 16
/// Read buffers kept for reuse per object (sl_block_pool.h): a CSV read
/// holds a few 32 MiB split ranges at a time, a readahead its parts.
#define HTTP_POOL_BYTES ((int64_t)128 << 20)
/// libcurl's receive buffer (its default is 16 KiB; 7.88 allows up to 10 MiB).
#define SL_HTTP_RECV_BUFFER (512L << 10)
/// Attempts per transfer before giving up (the first one included).
#define HTTP_MAX_ATTEMPTS 6
#define HTTP_BACKOFF_BASE_MS 200
#define HTTP_BACKOFF_CAP_MS 5000
/// The longest a server's Retry-After is waited (curl's --retry waits it
/// whole; a minute bounds how long a read can sit idle per attempt).
#define HTTP_RETRY_AFTER_CAP_S 60
/// Redirects followed per request (curl -L follows 50).
#define HTTP_MAX_REDIRECTS 5


enum part_state { PART_EMPTY, PART_FETCHING, PART_READY, PART_FAILED };

/// A validator header's value (ETag, Last-Modified). `text` holds it whole
/// when it fits (then it can be sent back in If-Match or
/// If-Unmodified-Since), else its start, for messages; its length and hash
/// compare values of any length (an ETag of 256 bytes or more used to be
/// dropped, and with it every check that the object stayed the same).
struct http_tag {
  char text[256];
  size_t len;     ///< the value's length; 0 = none
  uint64_t hash;  ///< of the whole value
};

/// One readahead part. `ref` owns `data`; views retain it, so a part's bytes
/// outlive the slot that fetched them.
struct http_part {
  int64_t index;
  enum part_state state;
  uint8_t* data;  ///< set when the fetch starts
  int64_t size;    ///< bytes the part holds when complete (READY)
  /// Bytes arrived so far (== size once READY): read_some hands them out
  /// while the rest downloads.
  int64_t filled;
  struct sl_ref* ref;
  int rc;
  struct sluice_error error;
};

struct sl_http_source {
  struct sl_source base;  // first
  char* url;
  char* ca_bundle;
  int insecure;
  double timeout_s;  ///< sl_curl_set_timeouts
  struct sl_http_signer signer;
  int has_signer;
  /// The first response's version of the object, which every later one
  /// must be: its ETag (If-Match on ranged requests when strong and
  /// whole), its Last-Modified (If-Unmodified-Since when there is no such
  /// ETag) and its total size (a 206's Content-Range total, a 200's
  /// Content-Length; -1 = unknown).
  struct http_tag etag;
  struct http_tag modified;
  int64_t total;
  /// The first response's Content-Encoding other than identity ("" =
  /// none): an object stored compressed so (S3 serves its
  /// Content-Encoding metadata whatever was asked). Its byte ranges are
  /// not the object's, so it is read as one stream, of unknown size;
  /// `total` is the encoded one. gzip and zstd come as they are sent and
  /// sl_http_source_open_config inflates them (sl_source_inflate_adopt):
  /// libcurl's gzip decoder stops after the first member (a .csv.gz
  /// written by `cat a.gz b.gz` failed with "Failed writing received
  /// data"); libcurl decodes the others (deflate, br).
  char coding[64];
  int ranges;      ///< the server honours Range requests
  struct sl_block_pool* blocks;  ///< where read buffers come from and return to
  /// Where request handles come from and return to (the dataset's, or this
  /// source's own): each keeps its live connections.
  struct sl_http_pool* handles;
  const struct sl_curl* curl;  ///< the pool's libcurl table

  // The object's first and last HTTP_EDGE_CACHE bytes, fetched on first use.
  pthread_mutex_t edge_lock;
  struct http_edge {
    uint8_t* data;
    struct sl_ref* ref;  // NULL until fetched
  } edges[2];            // [0] = head, [1] = tail
  atomic_int whole;      ///< edges[0] holds the whole object (HTTP_WHOLE_OBJECT)
  int64_t whole_reserved;  ///< bytes of the pool's whole-object budget held
  /// A read of the head past the edge while opening (a CSV's inference
  /// sample, 1 MiB), kept within the same budget: the split that reads
  /// those bytes again takes them from here and fetches only the rest (a
  /// 1.2 MB CSV cost 2.06 times its bytes). Under edge_lock; goes once the
  /// first split read past it, or when the object is done (http_drop), or
  /// with the other edges at http_trim (a dataset's objects but its first
  /// wait for their turn: a MiB each was too much to hold meanwhile).
  struct http_edge head;
  int64_t head_size;  ///< bytes `head` holds (also the budget it holds)
  int trimmed;        ///< the reader opened (http_trim): no head is kept after

  // Readahead (forward reads). Part k covers [k * part_size, ...) and lives in
  // slot k % depth; a worker fetches part k only when k < cur + depth, i.e.
  // when the previous occupant of that slot was left by the consumer.
  int64_t part_size;
  int depth;
  int parallel;        ///< ranged: most download threads (the lead and its helpers)
  int64_t run_parts;   ///< ranged: parts a helper asks for in one GET
  int64_t lead_window; ///< parts one stream alone (the lead, streaming mode) holds ahead
  int64_t fast_link;   ///< ranged: bytes/s at which the lead needs no helpers
  int64_t park_ms;     ///< ranged: HTTP_PARK_AFTER_MS, or SLUICE_HTTP_PARK_MS
  int64_t n_parts;     ///< ranged: parts in the object
  atomic_int helping;  ///< ranged: the helpers were started
  int64_t starved;     ///< ranged: the reader's waits for bytes since the lead last judged
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int started;
  atomic_int stopping;
  /// Read forward at least once (a reader that streams the object, not one
  /// that reads ranges): what sl_source_prefetch starts the readahead for.
  atomic_int forward;
  pthread_t threads[HTTP_MAX_PARALLEL];
  int n_threads;
  struct http_part* slots;
  int64_t next_fetch;  ///< ranged mode: the first part no worker has taken
  int64_t cur;         ///< parts below cur are left by the consumer
  /// An open by download (http_open_by_stream): OPEN_WAITING until the
  /// lead's response settles the object or does not.
  enum { OPEN_NONE, OPEN_WAITING, OPEN_SETTLED, OPEN_REFUSED } open_state;
  int64_t pos;         ///< consumer stream position
  int64_t stream_end;  ///< end of data, -1 while unknown (streaming)
  int failed;          ///< streaming mode: the producer gave up
  struct sluice_error fail_error;
};

/* ---- Request machinery ------------------------------------------------------ */

/// One transfer's state, shared by the header and write callbacks.
struct xfer {
  struct sl_http_source* s;
  uint8_t* buf;        ///< destination (ranged: the caller's buffer)
  int64_t need;        ///< bytes wanted in buf
  int64_t got;         ///< bytes stored so far (kept across attempts)
  int64_t skip;        ///< bytes of the body to drop first (server ignored Range)
  int64_t range_from;  ///< the Range start asked for this attempt (-1 = none)
  int64_t suffix;      ///< > 0: the Range asked for is the last `suffix` bytes
  int body_started;
  long status;
  long retry_after_s;  ///< a 429's or 503's Retry-After in seconds (0 = none, -1 = too long)
  int64_t retry_after_asked;  ///< that Retry-After as the server gave it (0 = none)
  struct http_tag etag;
  struct http_tag modified;
  int accept_ranges;
  char coding[64];      ///< Content-Encoding other than identity ("" = none)
  int coded;            ///< the response's coding is not the object's (s->coding)
  int64_t range_start;  ///< from Content-Range, -1 if absent
  int64_t range_total;  ///< from Content-Range, -1 if absent or "*"
  int changed;  ///< the response is of another version of the object than the first
  char changed_why[160];
  int bad_range;
  int open_refused;  ///< an open by download got no 206 from byte 0: it ends
  char snippet[2048];  ///< the start of an error response body (S3's is ~500 bytes)
  size_t snippet_len;
  /// The stall timeout: when a body byte last came (or the attempt began,
  /// or a sink returned), and the byte count libcurl last reported.
  double last_byte_t;
  curl_off_t last_dlnow;
  int stalled;          ///< aborted by on_progress: no byte for stall_s
  /// Where the attempt's redirects led, as messages show a location
  /// (sl_location_shown): the last URL asked for, or for too many
  /// redirects the one not followed; "" = no redirect.
  char target[1024];
  /// Readahead: bytes handed to the parts go through this instead of buf.
  int (*sink)(struct xfer* x, const uint8_t* data, int64_t n);
  /// Streaming mode: every response is the object from byte 0.
  int from_start;
  int64_t faulted;  ///< bytes of buf mapped ahead of the copies (fault_ahead)
  int64_t stream_received;  ///< streaming: bytes of the object delivered so far
  int stream_rc;
  // A ranged readahead run (fetch_run): parts [run_part, run_end) are this
  // transfer's; run_part is being filled, run_within bytes of it so far.
  int64_t run_part;
  int64_t run_within;
  int64_t run_end;
  int run_lead;        ///< takes part after part (run_end grows) and may call helpers
  int run_stopped;     ///< the lead met a part a helper took: the GET ends there
  int run_parked;      ///< no free slot for a while: the GET ends, resumed later
  double run_t0;       ///< the lead: when its stream's first byte came
  double run_waited;   ///< the lead: seconds spent waiting for a free slot
  int64_t run_bytes;   ///< the lead: bytes its stream brought
};

static double now_seconds(void);

static void trim_value(const char** v, size_t* n) {
  while (*n > 0 && ((*v)[0] == ' ' || (*v)[0] == '\t')) {
    ++*v;
    --*n;
  }
  while (*n > 0 && ((*v)[*n - 1] == '\r' || (*v)[*n - 1] == '\n' || (*v)[*n - 1] == ' ')) --*n;
}

static void tag_set(struct http_tag* t, const char* v, size_t n) {
  size_t k = n < sizeof t->text ? n : sizeof t->text - 1;
  memcpy(t->text, v, k);
  t->text[k] = '\0';
  t->len = n;
  t->hash = sl_hash_bytes(v, n);
}

/// Held whole (can be sent back in a request header).
static int tag_whole(const struct http_tag* t) { return t->len > 0 && t->len < sizeof t->text; }

static int tag_differs(const struct http_tag* a, const struct http_tag* b) {
  return a->len > 0 && b->len > 0 && (a->len != b->len || a->hash != b->hash);
}

static int header_is(const char* line, size_t n, const char* name, const char** value,
                     size_t* value_len) {
  size_t k = strlen(name);
  if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return 0;
  *value = line + k + 1;
  *value_len = n - k - 1;
  trim_value(value, value_len);
  return 1;
}

static size_t on_header(char* line, size_t size, size_t nitems, void* user) {
  struct xfer* x = user;
  size_t n = size * nitems;
  const char* v;
  size_t vn;
  if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
    // A new response (after a redirect or a 100 Continue): forget the last.
    memset(&x->etag, 0, sizeof x->etag);
    memset(&x->modified, 0, sizeof x->modified);
    x->coding[0] = '\0';
    x->accept_ranges = 0;
    x->range_start = -1;
    x->range_total = -1;
  } else if (header_is(line, n, "etag", &v, &vn)) {
    tag_set(&x->etag, v, vn);
  } else if (header_is(line, n, "last-modified", &v, &vn)) {
    tag_set(&x->modified, v, vn);
  } else if (header_is(line, n, "content-encoding", &v, &vn)) {
    if (!(vn == 8 && strncasecmp(v, "identity", 8) == 0)) {
      size_t k = vn < sizeof x->coding ? vn : sizeof x->coding - 1;
      memcpy(x->coding, v, k);
      x->coding[k] = '\0';
    }
  } else if (header_is(line, n, "accept-ranges", &v, &vn)) {
    x->accept_ranges = vn >= 5 && strncasecmp(v, "bytes", 5) == 0;
  } else if (header_is(line, n, "content-range", &v, &vn)) {
    char text[128];
    if (vn < sizeof text) {
      memcpy(text, v, vn);
      text[vn] = '\0';
      long long a, b, total;
      if (sscanf(text, "bytes %lld-%lld/%lld", &a, &b, &total) == 3) {
        x->range_start = a;
        x->range_total = total;
      } else if (sscanf(text, "bytes %lld-%lld/*", &a, &b) == 2) {
        x->range_start = a;
      } else if (sscanf(text, "bytes */%lld", &total) == 1) {
        x->range_total = total;  // a 416's answer: the object's size
      }
    }
  }
  return n;
}

/// The object's version is the one response `x` gives, of `total` bytes.
static void adopt_version(struct sl_http_source* s, const struct xfer* x, int64_t total) {
  s->etag = x->etag;
  s->modified = x->modified;
  s->total = total;
}

/// Whether response x (a 2xx) is of another version of the object than the
/// first response: their ETags differ; or, where one has none, their
/// Last-Modified dates; or its total size does (a server with neither
/// validator has only this). x->changed_why says how.
static int other_version(struct xfer* x, CURL* h) {
  const struct sl_http_source* s = x->s;
  int64_t total = x->range_total;
  if (x->status == 200) {
    curl_off_t length = -1;
    s->curl->easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    total = length;
  }
  if (tag_differs(&s->etag, &x->etag)) {
    snprintf(x->changed_why, sizeof x->changed_why, "ETag %.60s, now %.60s", s->etag.text,
             x->etag.text);
  } else if ((s->etag.len == 0 || x->etag.len == 0) && tag_differs(&s->modified, &x->modified)) {
    snprintf(x->changed_why, sizeof x->changed_why, "Last-Modified %.40s, now %.40s",
             s->modified.text, x->modified.text);
  } else if (s->total >= 0 && total >= 0 && total != s->total) {
    snprintf(x->changed_why, sizeof x->changed_why, "size %" PRId64 " bytes, now %" PRId64, s->total,
             total);
  } else {
    return 0;
  }
  return 1;
}

/// The response to an open by download (a 2xx one): a 206 from byte 0
/// gives the object's size and ETag, and the parts can take its bytes; any
/// other ends the transfer, and the opener opens the usual way.
static void settle_open_by_stream(struct xfer* x) {
  struct sl_http_source* s = x->s;
  int ok = x->status == 206 && x->range_start == 0 && x->range_total > 0 && x->coding[0] == '\0';
  pthread_mutex_lock(&s->lock);
  if (ok) {
    s->base.size = s->stream_end = x->range_total;
    s->n_parts = (x->range_total + s->part_size - 1) / s->part_size;
    adopt_version(s, x, x->range_total);
    s->ranges = 1;
    s->open_state = OPEN_SETTLED;
  } else {
    x->open_refused = 1;
    s->open_state = OPEN_REFUSED;
  }
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

/// A Content-Encoding sl_source_inflate decodes (as SL_COMPRESS_*, else
/// NONE): its bytes are fetched as they are sent, not decoded by libcurl.
static enum sl_compression own_decoding(const char* coding) {
  if (strcasecmp(coding, "gzip") == 0 || strcasecmp(coding, "x-gzip") == 0) {
    return SL_COMPRESS_GZIP;
  }
  return strcasecmp(coding, "zstd") == 0 ? SL_COMPRESS_ZSTD : SL_COMPRESS_NONE;
}

/// Checks the response once its body starts: status, ETag, range.
static void on_body_start(struct xfer* x, CURL* h) {
  x->body_started = 1;
  x->s->curl->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
  if (x->status < 200 || x->status > 299) return;
  // (a body inflated here must come encoded as the first did, not plain)
  if ((x->coding[0] != '\0' || own_decoding(x->s->coding) != SL_COMPRESS_NONE) &&
      strcasecmp(x->coding, x->s->coding) != 0 && !(x->run_lead && x->s->base.size < 0)) {
    x->coded = 1;
    return;
  }
  if (other_version(x, h)) {
    x->changed = 1;
    return;
  }
  if (x->run_lead && x->s->base.size < 0) {
    settle_open_by_stream(x);
  } else if (x->from_start) {
    // Streaming: every response starts at byte 0; a retry skips what the
    // parts already hold.
    x->skip = x->stream_received;
  } else if (x->status == 206) {
    if (x->suffix == 0 && (x->range_from < 0 || x->range_start != x->range_from)) x->bad_range = 1;
  } else if (x->range_from > 0) {
    x->skip = x->range_from;  // the server sent the whole object: skip to our bytes
  }
}

/// The real write callback: CURLOPT_WRITEDATA is this wrapper so that the
/// callback can reach the handle for the response code.
struct xfer_call {
  struct xfer* x;
  CURL* h;
};

/// Maps the pages of buf[0, size) ahead of the copy that reaches `upto`, a
/// MiB at a time (cheaper than a fault per page), instead of all before the
/// request is sent: the first bytes are then usable sooner.
#define HTTP_FAULT_STEP ((int64_t)1 << 20)
static void fault_ahead(uint8_t* buf, int64_t size, int64_t upto, int64_t* faulted) {
  while (*faulted < upto && *faulted < size) {
    int64_t n = size - *faulted < HTTP_FAULT_STEP ? size - *faulted : HTTP_FAULT_STEP;
    sl_prefault(buf + *faulted, (size_t)n);
    *faulted += n;
  }
}

/// Makes part bytes [0, filled) visible to the consumer, and the part READY
/// with them when `ready` (a streamed part is complete when full).
static void publish_filled(struct sl_http_source* s, struct http_part* part, int64_t filled,
                           int ready) {
  pthread_mutex_lock(&s->lock);
  part->filled = filled;
  if (ready) part->state = PART_READY;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

static size_t on_write_call(char* data, size_t size, size_t nmemb, void* user) {
  struct xfer_call* call = user;
  struct xfer* x = call->x;
  size_t n = size * nmemb;
  x->last_byte_t = now_seconds();
  if (!x->body_started) on_body_start(x, call->h);
  if (x->status < 200 || x->status > 299) {
    size_t room = sizeof x->snippet - 1 - x->snippet_len;
    size_t k = n < room ? n : room;
    memcpy(x->snippet + x->snippet_len, data, k);
    x->snippet_len += k;
    x->snippet[x->snippet_len] = '\0';
    return n;
  }
  if (x->changed || x->bad_range || x->open_refused || x->coded) return 0;  // the caller says
  const uint8_t* p = (const uint8_t*)data;
  int64_t left = (int64_t)n;
  if (x->skip > 0) {
    int64_t k = x->skip < left ? x->skip : left;
    x->skip -= k;
    p += k;
    left -= k;
  }
  if (left == 0) return n;
  if (x->sink != NULL) {
    x->stream_rc = x->sink(x, p, left);
    x->last_byte_t = now_seconds();  // (a sink may wait for the reader: not a stall)
    return x->stream_rc == 0 ? n : 0;
  }
  int64_t room = x->need - x->got;
  int64_t k = left < room ? left : room;
  fault_ahead(x->buf, x->need, x->got + k, &x->faulted);
  memcpy(x->buf + x->got, p, (size_t)k);
  x->got += k;
  // More than asked for: we have our bytes, stop the transfer here.
  return k == left ? n : 0;
}

/// The stall timeout, if not given (sl_curl_set_timeouts' default).
#define HTTP_STALL_DEFAULT_S 60.0

/// Closing cancels, and so does the open's cancel hook; and an attempt that
/// brought no byte of its body for
/// the timeout (`--timeout`, 60 s by default) ends as timed out. libcurl
/// calls this at least once a second, so the stall is caught within a
/// second of the timeout; libcurl's own low-speed check averages over
/// about 5 s, so a stall after some data took N + 6 s to catch.
static int on_progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
  struct xfer* x = user;
  (void)dltotal;
  (void)ultotal;
  (void)ulnow;
  if (atomic_load(&x->s->stopping)) return 1;
  if (sl_source_cancelled(&x->s->base)) return 1;  // (an open the caller gave up)
  if (dlnow != x->last_dlnow) {  // (on_write_call noted when the bytes came)
    x->last_dlnow = dlnow;
    return 0;
  }
  double stall_s = x->s->timeout_s > 0 ? x->s->timeout_s : HTTP_STALL_DEFAULT_S;
  if (now_seconds() - x->last_byte_t >= stall_s) {
    x->stalled = 1;
    return 1;
  }
  return 0;
}

/// Where the attempt's redirects led (x->target). A 3xx that libcurl went
/// on from and then failed (the target's connection or certificate, a
/// scheme it refuses, too many redirects) is no answer: the failure is the
/// target's, reported as a direct request's would be (and retried so), not
/// as "HTTP 302".
static void note_redirects(const struct sl_http_source* s, CURL* h, CURLcode c, struct xfer* x) {
  long redirects = 0;
  s->curl->easy_getinfo(h, CURLINFO_REDIRECT_COUNT, &redirects);
  if (redirects > 0 || c == CURLE_TOO_MANY_REDIRECTS) {
    char* url = NULL;
    s->curl->easy_getinfo(
        h, c == CURLE_TOO_MANY_REDIRECTS ? CURLINFO_REDIRECT_URL : CURLINFO_EFFECTIVE_URL, &url);
    if (url != NULL) sl_location_shown(url, x->target, sizeof x->target);
  }
  if (c != CURLE_OK && x->status >= 300 && x->status <= 399) x->status = 0;
}

/// Performs one request attempt. `range_from` / `range_to` (inclusive; -1 =
/// open end) ask for a Range when range_from >= 0.
static CURLcode http_perform(struct sl_http_source* s, CURL* h, const char* method,
                             int64_t range_from, int64_t range_to, struct xfer* x,
                             char* errbuf, int* sign_rc, struct sluice_error* error) {
  struct curl_slist* headers = NULL;
  struct xfer_call call = {x, h};
  // Only the write callback reads `call`, and only during curl_easy_perform.
  char line[320];  // (the validators sent back fit: tag_whole)
  *sign_rc = 0;
  x->body_started = 0;
  x->status = 0;
  x->skip = 0;
  memset(&x->etag, 0, sizeof x->etag);
  memset(&x->modified, 0, sizeof x->modified);
  x->changed = 0;
  x->changed_why[0] = '\0';
  x->coded = 0;
  x->coding[0] = '\0';
  x->bad_range = 0;
  x->snippet_len = 0;
  x->snippet[0] = '\0';
  x->range_from = range_from;
  x->range_start = -1;
  x->range_total = -1;
  x->target[0] = '\0';
  errbuf[0] = '\0';
  s->curl->easy_reset(h);
  s->curl->easy_setopt(h, CURLOPT_URL, s->url);
  s->curl->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  s->curl->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  s->curl->easy_setopt(h, CURLOPT_MAXREDIRS, (long)HTTP_MAX_REDIRECTS);
  // Redirects stay on HTTP(S): libcurl's default also follows one to ftp://
  // (and others), which a server should not be able to send a read to.
#if LIBCURL_VERSION_NUM >= 0x075500
  s->curl->easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  s->curl->easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  // An S3 key is a name, not a path: its "." and ".." segments are sent as
  // they are (as botocore does), and signed so; libcurl would remove them.
  if (s->has_signer) s->curl->easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  // A stalled transfer is a timeout, retried.
  sl_curl_set_timeouts(s->curl, h, s->timeout_s);
  s->curl->easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  // Large reads: a 16 KiB default buffer means one recv and one callback per
  // 16 KiB, a CPU cost that shows at loopback speeds (GB/s).
  s->curl->easy_setopt(h, CURLOPT_BUFFERSIZE, SL_HTTP_RECV_BUFFER);
  s->curl->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  s->curl->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  s->curl->easy_setopt(h, CURLOPT_HEADERDATA, x);
  s->curl->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write_call);
  s->curl->easy_setopt(h, CURLOPT_WRITEDATA, &call);
  s->curl->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  s->curl->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  s->curl->easy_setopt(h, CURLOPT_XFERINFODATA, x);
  x->last_byte_t = now_seconds();
  x->last_dlnow = 0;
  x->stalled = 0;
  if (s->insecure) {
    s->curl->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    s->curl->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (s->ca_bundle != NULL) s->curl->easy_setopt(h, CURLOPT_CAINFO, s->ca_bundle);
  // An object stored with a Content-Encoding is read whole, decoded; no
  // other request asks for a coding (libcurl sends no Accept-Encoding
  // unless told). gzip and zstd are decoded by the inflating source over
  // this one, which reads any number of members.
  if (s->coding[0] != '\0' && x->from_start) {
    s->curl->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, s->coding);
    if (own_decoding(s->coding) != SL_COMPRESS_NONE) {
      s->curl->easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    }
  }
  if (strcmp(method, "HEAD") == 0) s->curl->easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (x->suffix > 0) {
    snprintf(line, sizeof line, "Range: bytes=-%" PRId64, x->suffix);
    headers = s->curl->slist_append(headers, line);
  } else if (range_from >= 0) {
    if (range_to >= 0) {
      snprintf(line, sizeof line, "Range: bytes=%" PRId64 "-%" PRId64, range_from, range_to);
    } else {
      snprintf(line, sizeof line, "Range: bytes=%" PRId64 "-", range_from);
    }
    headers = s->curl->slist_append(headers, line);
  }
  // If-Match only with a strong ETag (weak ones never match strongly);
  // without one, If-Unmodified-Since the first response's Last-Modified.
  // The server then refuses (412) bytes of another version; other_version
  // checks what came all the same, for servers that ignore both.
  int strong = tag_whole(&s->etag) && strncmp(s->etag.text, "W/", 2) != 0;
  if (range_from >= 0 && (strong || tag_whole(&s->modified))) {
    snprintf(line, sizeof line, strong ? "If-Match: %s" : "If-Unmodified-Since: %s",
             strong ? s->etag.text : s->modified.text);
    struct curl_slist* more = s->curl->slist_append(headers, line);
    if (more != NULL) headers = more;
  }
  if (s->has_signer) {
    *sign_rc = s->signer.sign(s->signer.ctx, method, s->url, &headers, error);
    if (*sign_rc != 0) {
      s->curl->slist_free_all(headers);
      return CURLE_ABORTED_BY_CALLBACK;
    }
  }
  if (headers != NULL) s->curl->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  x->retry_after_s = 0;
  x->retry_after_asked = 0;
  CURLcode c = s->curl->easy_perform(h);
  if (c == CURLE_ABORTED_BY_CALLBACK && x->stalled) {
    c = CURLE_OPERATION_TIMEDOUT;
    snprintf(errbuf, CURL_ERROR_SIZE, "no byte came for %g s",
             s->timeout_s > 0 ? s->timeout_s : HTTP_STALL_DEFAULT_S);
  }
  // A 2xx without a body is checked as one with a body is (its version,
  // its coding).
  if (!x->body_started && c == CURLE_OK) on_body_start(x, h);
  if (!x->body_started) s->curl->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
  note_redirects(s, h, c, x);
  if (x->status == 429 || x->status == 503) {
    // (libcurl before 7.66 does not know it: then no Retry-After is seen)
    curl_off_t after = 0;
    if (s->curl->easy_getinfo(h, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0) {
      // Longer than the cap: the server is down for long; retrying after
      // the cap would only wait minutes in silence (status_error says it).
      x->retry_after_s = after <= HTTP_RETRY_AFTER_CAP_S ? (long)after : -1;
      x->retry_after_asked = after;
    }
  }
  s->curl->slist_free_all(headers);
  return c;
}

/// Before retry `attempt` of a request whose last answer was `x`: as long
/// as the server's Retry-After asked (capped), else exponential backoff.
static void backoff(int attempt, const struct xfer* x, unsigned* seed) {
  if (x->retry_after_s > 0) {  // in slices, so that a source being closed need not wait
    for (long ms = 0; ms < x->retry_after_s * 1000 && !atomic_load(&x->s->stopping); ms += 100) {
      sl_sleep_ms(100);
    }
    return;
  }
  sl_backoff(attempt, HTTP_BACKOFF_BASE_MS, HTTP_BACKOFF_CAP_MS, seed);
}

/// A busy server's answer worth asking again: a 5xx or 429, unless its
/// Retry-After passes HTTP_RETRY_AFTER_CAP_S.
static int busy_retryable(const struct xfer* x) {
  return (x->status >= 500 || x->status == 429) && x->retry_after_s >= 0;
}

static unsigned make_seed(const void* p, int64_t salt) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned)((uintptr_t)p ^ (uint64_t)salt ^ (uint64_t)ts.tv_nsec);
}

static const char* status_reason(long status) {
  switch (status) {
    case 400: return "bad request";
    case 401: return "unauthorized";
    case 403: return "access denied";
    case 404: return "not found";
    case 412: return "precondition failed";
    case 416: return "range not satisfiable";
    case 429: return "too many requests";
    case 503: return "service unavailable";
    default:
      return status >= 500   ? "server error"
             : status >= 400 ? "request failed"
                             : "redirect not followed";
  }
}

/// Turns an HTTP error status into an error with what the response body
/// says: an S3-style XML error as "Code: Message", else its first bytes.
static int status_error(struct sl_http_source* s, const struct xfer* x, const char* what,
                        struct sluice_error* error) {
  int code = x->status == 404 ? ENOENT : (x->status == 401 || x->status == 403) ? EACCES : EIO;
  char body[1200];
  size_t k = sl_s3_error_text(x->snippet, x->snippet_len, body, sizeof body);
  if (k > 0) {
    // (S3's Code: Message, and a wrong region's endpoint and region)
  } else if ((x->status >= 300 && x->status <= 303) || x->status == 307 ||
             x->status == 308) {
    // A redirect libcurl stopped at (it goes on from one with a Location;
    // where it failed to, note_redirects made the failure the target's).
    k = (size_t)snprintf(body, sizeof body, "the answer has no Location");
  } else {
    for (size_t i = 0; i < x->snippet_len && i < 200; ++i) {
      char ch = x->snippet[i];
      body[k++] = (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : ch;
    }
    body[k] = '\0';
  }
  char later[96] = "";
  if (x->retry_after_s < 0) {
    snprintf(later, sizeof later, " (it asks to retry after %lld s: more than %d s, not waited)",
             (long long)x->retry_after_asked, HTTP_RETRY_AFTER_CAP_S);
  }
  return sl_error_set(error, code, "%s: %s: %s%s%sHTTP %ld (%s)%s%s%s", s->base.name, what,
                      x->target[0] != '\0' ? "redirected to " : "", x->target,
                      x->target[0] != '\0' ? ": " : "", x->status, status_reason(x->status),
                      later, k > 0 ? ": " : "", body);
}

/// A failed attempt `x` that got no answer: libcurl's reason (sl_curl_reason),
/// after where a redirect led.
static int curl_error(struct sl_http_source* s, const struct xfer* x, CURLcode c,
                      const char* errbuf, const char* what, struct sluice_error* error) {
  if (c == CURLE_ABORTED_BY_CALLBACK && sl_source_cancelled(&s->base)) {
    return sl_error_set(error, ECANCELED, "%s: %s: interrupted", s->base.name, what);
  }
  if (c == CURLE_TOO_MANY_REDIRECTS) {
    return sl_error_set(error, EIO, "%s: %s: too many redirects (%d)%s%s", s->base.name, what,
                        HTTP_MAX_REDIRECTS, x->target[0] != '\0' ? ", the last to " : "",
                        x->target);
  }
  char reason[512];
  int code = sl_curl_reason(s->curl, c, errbuf, reason, sizeof reason);
  return sl_error_set(error, code, "%s: %s: %s%s%s%s", s->base.name, what,
                      x->target[0] != '\0' ? "redirected to " : "", x->target,
                      x->target[0] != '\0' ? ": " : "", reason);
}

/// A response of another version of the object than the first (or a 412
/// to If-Match / If-Unmodified-Since).
static int changed_error(struct sl_http_source* s, const struct xfer* x, const char* what,
                         struct sluice_error* error) {
  char why[200];
  if (x->changed) {
    snprintf(why, sizeof why, "%s", x->changed_why);
  } else if (s->etag.len > 0 && strncmp(s->etag.text, "W/", 2) != 0) {
    snprintf(why, sizeof why, "ETag %.120s no longer matches", s->etag.text);
  } else {
    snprintf(why, sizeof why, "modified since %.120s", s->modified.text);
  }
  return sl_error_set(error, ESTALE, "%s: %s: the object changed while being read (%s)",
                      s->base.name, what, why);
}

/// A response with a Content-Encoding the object's first response did not
/// have: its bytes are not the object's.
static int coded_error(struct sl_http_source* s, const struct xfer* x, const char* what,
                       struct sluice_error* error) {
  return sl_error_set(error, EIO,
                      "%s: %s: the server sent it with Content-Encoding: %s, where the first "
                      "response had %s: its bytes are not the object's",
                      s->base.name, what, x->coding, s->coding[0] != '\0' ? s->coding : "none");
}

/// Judges a ranged GET attempt that did not bring all its bytes: the error
/// to report now, or 0 with *retry = 1 when it may be retried (resuming from
/// the last byte received; *error then says why, for the last attempt).
static int ranged_attempt_error(struct sl_http_source* s, const struct xfer* x, CURLcode c,
                                const char* errbuf, const char* what, int* retry,
                                struct sluice_error* error) {
  *retry = 0;
  if (atomic_load(&s->stopping)) {
    return sl_error_set(error, ECANCELED, "%s: %s: cancelled", s->base.name, what);
  }
  if (x->changed || x->status == 412) return changed_error(s, x, what, error);
  if (x->coded) return coded_error(s, x, what, error);
  if (x->bad_range) {
    return sl_error_set(error, EIO, "%s: %s: the server answered with a different range",
                        s->base.name, what);
  }
  if (busy_retryable(x)) {
    *retry = 1;
    status_error(s, x, what, error);
    return 0;
  }
  if (x->status >= 300) return status_error(s, x, what, error);
  // A 2xx with a short body: the connection broke. Or no response at all.
  int answered = x->status >= 200;
  *retry = (answered && c == CURLE_OK) || sl_curl_retryable(c);
  int e = answered && c == CURLE_OK
              ? curl_error(s, x, CURLE_PARTIAL_FILE, "transfer ended early", what, error)
              : curl_error(s, x, c, errbuf, what, error);
  return *retry ? 0 : e;
}

/// A complete 206 answer that brought fewer bytes than asked (some servers
/// cap the bytes of one answer) but some: the rest is asked for at once,
/// and the answer counts as no failed attempt. Each such answer makes
/// progress, so the asking ends.
static int short_answer(const struct xfer* x, CURLcode c, int progressed) {
  return c == CURLE_OK && x->status == 206 && progressed && !x->bad_range && !x->changed;
}

/// Fetches `length` bytes at `offset` into `buf` (ranged GET, retried and
/// resumed from the last byte received). `recycled`: buf came from the block
/// pool used.
static int http_fetch(struct sl_http_source* s, int64_t offset, int64_t length, uint8_t* buf,
                      int recycled, struct sluice_error* error) {
  struct xfer x;
  memset(&x, 0, sizeof x);
  x.s = s;
  x.buf = buf;
  x.need = length;
  x.faulted = recycled ? length : 0;  // a recycled buffer's pages are mapped
  char errbuf[CURL_ERROR_SIZE];
  char what[96];
  unsigned seed = make_seed(buf, offset);
  CURL* h = sl_http_pool_get(s->handles);
  if (h == NULL) return sl_error_set(error, ENOMEM, "%s: cannot create an HTTP handle", s->base.name);
  int rc = 0;
  for (int attempt = 0;; ++attempt) {
    snprintf(what, sizeof what, "GET of %" PRId64 " bytes at offset %" PRId64, length, offset);
    int sign_rc;
    int64_t from = offset + x.got;
    CURLcode c = http_perform(s, h, "GET", from, offset + length - 1, &x, errbuf, &sign_rc, error);
    if (sign_rc != 0) {
      rc = sign_rc;
      break;
    }
    if (x.got == length) break;  // done (possibly aborted by us after the last byte)
    if (short_answer(&x, c, offset + x.got > from)) {
      attempt = -1;
      continue;
    }
    int retry;
    rc = ranged_attempt_error(s, &x, c, errbuf, what, &retry, error);
    if (!retry) break;
    if (attempt + 1 >= HTTP_MAX_ATTEMPTS) {
      rc = error != NULL && error->code != 0 ? error->code : EIO;
      break;
    }
    backoff(attempt, &x, &seed);
  }
  sl_http_pool_put(s->handles, h);
  return rc;
}

/// Whether a server that did not announce Accept-Ranges still honours Range:
/// a GET of byte 0 answered with 206. Any failure counts as "no".
static int probe_ranges(struct sl_http_source* s, CURL* h) {
  struct xfer x;
  uint8_t byte;
  char errbuf[CURL_ERROR_SIZE];
  struct sluice_error ignored;
  int sign_rc;
  memset(&x, 0, sizeof x);
  x.s = s;
  x.buf = &byte;
  x.need = 1;
  CURLcode c = http_perform(s, h, "GET", 0, 0, &x, errbuf, &sign_rc, &ignored);
  return sign_rc == 0 && (c == CURLE_OK || c == CURLE_WRITE_ERROR) && x.status == 206 &&
         x.got == 1;
}

/// HEAD at open when the ranged GET did not settle it: size, ETag,
/// Accept-Ranges (retried like a GET). A server that does not do HEAD
/// (405, 501) is read as one stream of unknown size.
static int http_head(struct sl_http_source* s, struct sluice_error* error) {
  struct xfer x;
  memset(&x, 0, sizeof x);
  x.s = s;
  char errbuf[CURL_ERROR_SIZE];
  unsigned seed = make_seed(s, 0);
  CURL* h = sl_http_pool_get(s->handles);
  if (h == NULL) return sl_error_set(error, ENOMEM, "%s: cannot create an HTTP handle", s->base.name);
  int rc = 0;
  for (int attempt = 0;; ++attempt) {
    int sign_rc;
    CURLcode c = http_perform(s, h, "HEAD", -1, -1, &x, errbuf, &sign_rc, error);
    if (sign_rc != 0) {
      rc = sign_rc;
      break;
    }
    int retry = 0;
    if (c == CURLE_OK && x.status >= 200 && x.status <= 299) {
      curl_off_t length = -1;
      s->curl->easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
      s->base.size = length >= 0 && x.coding[0] == '\0' ? (int64_t)length : -1;
      adopt_version(s, &x, length >= 0 ? (int64_t)length : -1);
      memcpy(s->coding, x.coding, sizeof s->coding);
      s->ranges = x.accept_ranges && s->base.size >= 0 && s->coding[0] == '\0';
      if (!s->ranges && s->base.size > 0) s->ranges = probe_ranges(s, h);
      break;
    }
    if (c == CURLE_OK && (x.status == 405 || x.status == 501)) {
      s->base.size = -1;
      s->ranges = 0;
      break;
    }
    if (c == CURLE_OK && busy_retryable(&x)) {
      retry = 1;
      status_error(s, &x, "HEAD", error);
    } else if (c == CURLE_OK) {
      rc = status_error(s, &x, "HEAD", error);
    } else {
      retry = sl_curl_retryable(c);
      int e = curl_error(s, &x, c, errbuf, "HEAD", error);
      if (!retry) rc = e;
    }
    if (!retry) break;
    if (attempt + 1 >= HTTP_MAX_ATTEMPTS) {
      rc = error != NULL && error->code != 0 ? error->code : EIO;
      break;
    }
    backoff(attempt, &x, &seed);
  }
  sl_http_pool_put(s->handles, h);
  return rc;
}

/* ---- Ranged reads ------------------------------------------------------------ */

/// A buffer of `size` bytes owned by a new ref, from the source's block pool
/// (*recycled = 1: used before, its pages mapped).
static int new_block(struct sl_http_source* s, int64_t size, uint8_t** data, struct sl_ref** ref,
                     int* recycled, struct sluice_error* error) {
  *ref = sl_block_pool_get(s->blocks, size > 0 ? (size_t)size : 1, data, recycled);
  if (*ref == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory for a %" PRId64 "-byte read buffer",
                        s->base.name, size);
  }
  return 0;
}

/// Returns the whole-object budget this source holds to the pool.
static void give_back(struct sl_http_source* s) {
  if (s->whole_reserved > 0) sl_http_pool_cache_give(s->handles, s->whole_reserved);
  s->whole_reserved = 0;
}

/// After the open GET of a small object: the rest of it in one request,
/// joined to the `have` bytes that GET brought (`head`, owned by `head_ref`,
/// released) as edges[0].
static int fetch_whole(struct sl_http_source* s, const uint8_t* head, int64_t have,
                       struct sl_ref* head_ref, struct sluice_error* error) {
  uint8_t* data = NULL;
  struct sl_ref* ref = NULL;
  int recycled = 0;
  int rc = new_block(s, s->base.size, &data, &ref, &recycled, error);
  if (rc == 0) {
    memcpy(data, head, (size_t)have);
    rc = http_fetch(s, have, s->base.size - have, data + have, recycled, error);
  }
  sl_ref_release(head_ref);
  if (rc != 0) {
    sl_ref_release(ref);
    give_back(s);
    return rc;
  }
  s->edges[0].data = data;
  s->edges[0].ref = ref;
  atomic_store(&s->whole, 1);
  return 0;
}

/// An object no larger than an edge, which the opening GET brought whole
/// into edges[0]: held as a whole object (within the budget for them), so
/// that the reader's trim after its open keeps it. A CSV of up to 64 KiB
/// was fetched whole twice (the opening GET, then its split's).
static void hold_whole_edge(struct sl_http_source* s, int64_t total) {
  if (total > 0 && total <= HTTP_EDGE_CACHE && s->whole_reserved == 0 &&
      sl_http_pool_cache_take(s->handles, total)) {
    s->whole_reserved = total;
    atomic_store(&s->whole, 1);
  }
}

/// Opening by a ranged GET of the object's first HTTP_EDGE_CACHE bytes (the
/// whole object when a listing said it is small: `size_hint`) instead of a
/// HEAD: a 206's Content-Range gives the size, its ETag the
/// version, and the bytes become the head edge (what format detection and
/// most headers read first). One round trip fewer per remote open (2.5 ms
/// of W3's 37 on loopback; far more against a real object store). A 200
/// (a server that ignores Range) settles it too: its Content-Length is the
/// size (none when chunked), and the object is read as one stream. 1 when
/// that settled the object's size and ranges; 0 to ask by HEAD instead (a
/// 206 without a total, or failed in a way HEAD will retry and report);
/// an error for a failed request signature and for a 401, 403 or 404, with
/// what the response body says.
static int http_open_by_get(struct sl_http_source* s, int64_t size_hint, int tail_first,
                            int* settled, struct sluice_error* error) {
  *settled = 0;
  int64_t want = HTTP_EDGE_CACHE;
  if (size_hint > HTTP_EDGE_CACHE && size_hint <= HTTP_WHOLE_OBJECT &&
      sl_http_pool_cache_take(s->handles, size_hint)) {
    want = s->whole_reserved = size_hint;
  }
  // A footer format's opening GET is for the tail edge (a suffix range: its
  // Content-Range gives the size all the same): the head is not read to
  // open it, so the footer comes one request sooner.
  int tail = tail_first && s->whole_reserved == 0;
  uint8_t* data = NULL;
  struct sl_ref* ref = NULL;
  int recycled;
  SL_RETURN_NOT_OK(new_block(s, want, &data, &ref, &recycled, error));
  struct xfer x;
  char errbuf[CURL_ERROR_SIZE];
  CURL* h = sl_http_pool_get(s->handles);
  if (h == NULL) {
    sl_ref_release(ref);
    return sl_error_set(error, ENOMEM, "%s: cannot create an HTTP handle", s->base.name);
  }
  int sign_rc;
  CURLcode c;
  unsigned seed = make_seed(s, 1);
  for (int attempt = 0;; ++attempt) {
    memset(&x, 0, sizeof x);
    x.s = s;
    x.buf = data;
    x.need = want;
    x.suffix = tail ? want : 0;
    c = http_perform(s, h, "GET", tail ? -1 : 0, tail ? -1 : want - 1, &x, errbuf, &sign_rc,
                     error);
    // Busy or unreachable for a moment (503 SlowDown, a reset): the opening
    // GET again, as every ranged GET is retried (a presigned URL may refuse
    // the HEAD below).
    int again = sign_rc == 0 && (busy_retryable(&x) ||
                                 (x.status == 0 && sl_curl_retryable(c)));
    if (!again || attempt + 1 >= HTTP_MAX_ATTEMPTS) break;
    backoff(attempt, &x, &seed);
  }
  curl_off_t length = -1;
  s->curl->easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  sl_http_pool_put(s->handles, h);
  if (sign_rc != 0) {
    sl_ref_release(ref);
    return sign_rc;
  }
  if ((x.status == 200 || x.status == 206) && x.coding[0] != '\0') {
    // Stored with a Content-Encoding (gzip, as S3 serves such an object
    // whatever was asked): a range of its bytes is one of the encoded
    // ones, so it is read as one stream, decoded, of unknown size (the
    // formats with footers spool it). Its error otherwise was the
    // format's ("no PAR1 magic").
    give_back(s);
    s->base.size = -1;
    adopt_version(s, &x, x.status == 206 ? x.range_total : length >= 0 ? (int64_t)length : -1);
    memcpy(s->coding, x.coding, sizeof s->coding);
    s->ranges = 0;
    *settled = 1;
    sl_ref_release(ref);
    return 0;
  }
  if (x.status == 200) {
    // The server ignored the Range: this answer says what a HEAD would
    // (which some servers refuse with a 405, or answer with another
    // length), and the object is read as one stream. When it brought the
    // whole object, that is edges[0], read from memory.
    give_back(s);
    s->base.size = length >= 0 ? (int64_t)length : -1;
    adopt_version(s, &x, s->base.size);
    s->ranges = 0;
    *settled = 1;
    if (c == CURLE_OK && length >= 0 && x.got == (int64_t)length) {
      s->edges[0].data = data;
      s->edges[0].ref = ref;
      atomic_store(&s->whole, 1);
    } else {
      sl_ref_release(ref);
    }
    return 0;
  }
  int64_t total = x.range_total;
  int64_t edge = total < want ? total : want;
  if (x.status == 206 && total > 0 && x.range_start == (tail ? total - edge : 0) &&
      x.got < edge && (c == CURLE_OK || sl_curl_retryable(c))) {
    // Fewer bytes than asked (a server that caps each answer, or a broken
    // transfer), the size known all the same: the rest of the edge is asked
    // for by range, not by a HEAD, which presigned URLs refuse.
    adopt_version(s, &x, total);
    s->base.size = total;
    int rc = http_fetch(s, x.range_start + x.got, edge - x.got, data + x.got, recycled, error);
    if (rc != 0) {
      give_back(s);
      sl_ref_release(ref);
      return rc;
    }
    x.got = edge;
    c = CURLE_OK;
  }
  int whole_edge = total >= 0 && x.got == edge;
  int transferred = c == CURLE_OK || c == CURLE_WRITE_ERROR;  // (we stop it past the edge)
  if (x.status == 206 && x.range_start == (tail ? total - x.got : 0) && whole_edge &&
      transferred) {
    s->base.size = total;
    adopt_version(s, &x, total);
    s->ranges = 1;
    *settled = 1;
    if (tail) {  // the tail edge; the whole object when it is that small
      struct http_edge* e = &s->edges[total <= HTTP_EDGE_CACHE ? 0 : 1];
      e->data = data;
      e->ref = ref;
      hold_whole_edge(s, total);
      return 0;
    }
    // (The listed size may be out of date: what matters is what came.)
    int small = total > HTTP_EDGE_CACHE && total <= HTTP_WHOLE_OBJECT;
    if (small && x.got == total && s->whole_reserved >= total) {
      atomic_store(&s->whole, 1);
    } else {
      give_back(s);
      if (small && sl_http_pool_cache_take(s->handles, total)) {
        s->whole_reserved = total;
        return fetch_whole(s, data, x.got, ref, error);
      }
    }
    s->edges[0].data = data;  // read_at's head edge: min(size, HTTP_EDGE_CACHE) bytes, or all
    s->edges[0].ref = ref;
    hold_whole_edge(s, total);
    return 0;
  }
  give_back(s);
  // Refused, missing, malformed (S3's wrong-region AuthorizationHeaderMalformed
  // is a 400), moved (a 301 PermanentRedirect names the endpoint) or still
  // failing: what the server said, from the body (a HEAD has none). 416 and
  // a 200 without a range fall through to the HEAD.
  if ((x.status >= 300 && x.status != 416) || x.status == 429) {
    sl_ref_release(ref);
    return status_error(s, &x, "GET", error);
  }
  if (x.status == 0 && c != CURLE_OK) {  // no answer at all (TLS, refused, timed out)
    sl_ref_release(ref);
    return curl_error(s, &x, c, errbuf, "GET", error);
  }
  // An empty object has no byte 0; some servers refuse a suffix range
  // longer than the object, saying its size ("bytes */SIZE"): no HEAD needed.
  if (x.status == 416 && (total == 0 || (tail && total > 0))) {
    s->base.size = total;
    adopt_version(s, &x, total);
    s->ranges = 1;
    *settled = 1;
  }
  sl_ref_release(ref);
  return 0;
}

/// A view of [offset, offset + length) inside the head (which = 0) or tail
/// (1) edge of `edge` bytes, fetching the edge on first use.
static int edge_read(struct sl_http_source* s, int which, int64_t edge, int64_t offset,
                     int64_t length, struct sl_view* out, struct sluice_error* error) {
  int64_t edge_at = which == 0 ? 0 : s->base.size - edge;
  struct http_edge* e = &s->edges[which];
  int rc = 0;
  pthread_mutex_lock(&s->edge_lock);
  if (e->ref == NULL) {
    uint8_t* data = NULL;
    struct sl_ref* ref = NULL;
    int recycled = 0;
    rc = new_block(s, edge, &data, &ref, &recycled, error);
    if (rc == 0) rc = http_fetch(s, edge_at, edge, data, recycled, error);
    if (rc == 0) {
      e->data = data;
      e->ref = ref;
    } else if (ref != NULL) {
      sl_ref_release(ref);
    }
  }
  if (rc == 0) {
    out->data = e->data + (offset - edge_at);
    out->size = length;
    out->owner = sl_ref_retain(e->ref);
  }
  pthread_mutex_unlock(&s->edge_lock);
  return rc;
}

static int readahead_view(struct sl_http_source* s, int64_t length, int consume, int some,
                          struct sl_view* out, struct sluice_error* error);

/// Lets go of the kept head and its budget (views keep their bytes).
static void release_head(struct sl_http_source* s) {
  pthread_mutex_lock(&s->edge_lock);
  sl_ref_release(s->head.ref);
  s->head.ref = NULL;
  s->head.data = NULL;
  if (s->head_size > 0) sl_http_pool_cache_give(s->handles, s->head_size);
  s->head_size = 0;
  pthread_mutex_unlock(&s->edge_lock);
}

/// Keeps the `size` bytes a read of the head past the edge brought, while
/// opening and within the whole-object budget.
static void keep_head(struct sl_http_source* s, uint8_t* data, struct sl_ref* ref, int64_t size) {
  pthread_mutex_lock(&s->edge_lock);
  if (!s->trimmed && s->head.ref == NULL && size <= HTTP_KEEP_HEAD &&
      sl_http_pool_cache_take(s->handles, size)) {
    s->head.data = data;
    s->head.ref = sl_ref_retain(ref);
    s->head_size = size;
  }
  pthread_mutex_unlock(&s->edge_lock);
}

static int http_read_at(struct sl_source* source, int64_t offset, int64_t length,
                        struct sl_view* out, struct sluice_error* error) {
  struct sl_http_source* s = (struct sl_http_source*)source;
  SL_RETURN_NOT_OK(sl_source_check_range(source, offset, length, out, error));
  if (length == 0) {
    out->data = sl_empty_bytes;
    return 0;
  }
  // An object opened by its download: a look at its first bytes before the
  // stream moves (format detection) is a peek at the download, not a GET.
  pthread_mutex_lock(&s->lock);
  int at_start = offset == 0 && s->open_state == OPEN_SETTLED && s->pos == 0;
  pthread_mutex_unlock(&s->lock);
  if (at_start) return readahead_view(s, length, 0, 0, out, error);
  int64_t edge =
      source->size < HTTP_EDGE_CACHE || atomic_load(&s->whole) ? source->size : HTTP_EDGE_CACHE;
  int which = offset + length <= edge ? 0 : offset >= source->size - edge ? 1 : -1;
  if (which >= 0) return edge_read(s, which, edge, offset, length, out, error);
  // Bytes the kept head holds: a view, or copied and only the rest fetched.
  pthread_mutex_lock(&s->edge_lock);
  struct http_edge head = s->head;
  int64_t have = head.ref != NULL && offset < s->head_size ? s->head_size - offset : 0;
  if (have >= length) {
    out->data = head.data + offset;
    out->size = length;
    out->owner = sl_ref_retain(head.ref);
    pthread_mutex_unlock(&s->edge_lock);
    return 0;
  }
  if (have > 0) sl_ref_retain(head.ref);
  pthread_mutex_unlock(&s->edge_lock);
  uint8_t* data;
  struct sl_ref* ref;
  int recycled;
  int rc = new_block(s, length, &data, &ref, &recycled, error);
  if (rc == 0 && have > 0) memcpy(data, head.data + offset, (size_t)have);
  if (rc == 0) rc = http_fetch(s, offset + have, length - have, data + have, recycled, error);
  if (have > 0) {
    sl_ref_release(head.ref);
    // The read it was kept for: the first split's, from the head (a later
    // split that reads its end may come first).
    if (rc == 0 && offset < HTTP_EDGE_CACHE) release_head(s);
  }
  if (rc != 0) {
    sl_ref_release(ref);
    return rc;
  }
  if (offset == 0 && have == 0) keep_head(s, data, ref, length);
  out->data = data;
  out->size = length;
  out->owner = ref;
  return 0;
}

/* ---- Readahead ---------------------------------------------------------------- */

static int64_t part_length(const struct sl_http_source* s, int64_t k) {
  int64_t start = k * s->part_size;
  int64_t left = s->stream_end - start;
  return left < s->part_size ? left : s->part_size;
}

/// Gives `slot` to part k (lock held): its block, the size it will hold,
/// nothing arrived yet.
static void start_part(struct http_part* slot, int64_t k, uint8_t* data, struct sl_ref* ref,
                       int64_t size) {
  slot->index = k;
  slot->state = PART_FETCHING;
  slot->data = data;
  slot->ref = ref;
  slot->size = size;
  slot->filled = 0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void* helper_worker(void* arg);

/// Starts the helpers (lock held), once: the lead's link is slow.
static void start_helpers(struct sl_http_source* s) {
  atomic_store(&s->helping, 1);
  while (s->n_threads < s->parallel &&
         pthread_create(&s->threads[s->n_threads], NULL, helper_worker, s) == 0) {
    ++s->n_threads;  // (fewer helpers, or none, still make progress)
  }
}

/// The lead after each of its parts: helpers when its stream, not counting
/// its waits for a free slot, has been slower than fast_link, the reader
/// waited for bytes since the lead's last part (not only for its first
/// one: an object opened but not read yet needs no more speed; a dataset
/// opens them all, and on a busy machine their leads seemed slow) and
/// enough of the object is left for them.
static void judge_lead_rate(struct sl_http_source* s, struct xfer* x) {
  double busy = now_seconds() - x->run_t0 - x->run_waited;
  pthread_mutex_lock(&s->lock);
  int starved = s->starved > 0 && x->run_bytes > s->part_size;
  s->starved = 0;
  if ((x->run_bytes >= HTTP_RATE_SAMPLE || x->run_bytes >= 2 * s->part_size) && busy > 0 &&
      (double)x->run_bytes / busy < (double)s->fast_link && starved &&
      !atomic_load(&s->helping) && !atomic_load(&s->stopping) && s->n_parts - x->run_end >= 2) {
    start_helpers(s);
  }
  pthread_mutex_unlock(&s->lock);
}

/// Whether part k has no free slot yet (lock held): the lead alone keeps
/// lead_window parts ahead of the reader, with helpers all of them.
static int no_room_for(const struct sl_http_source* s, int64_t k) {
  return !atomic_load(&s->stopping) &&
         k >= s->cur + (atomic_load(&s->helping) ? s->depth : s->lead_window);
}

/// Waits (lock held) until part k has a slot, or `park_ms` passed (when
/// > 0): 0 when it has one (or the source is closing).
static int wait_for_room(struct sl_http_source* s, int64_t k, int64_t park_ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)(park_ms / 1000);
  until.tv_nsec += (long)(park_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000L;
  }
  while (no_room_for(s, k)) {
    if (park_ms <= 0) {
      pthread_cond_wait(&s->cond, &s->lock);
    } else if (pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0 && no_room_for(s, k)) {
      return ETIMEDOUT;
    }
  }
  return 0;
}

/// Readies part x->run_part for the bytes of a run: waits until its slot is
/// free (parking after park_ms), extends the lead's claim to it (or stops
/// the lead, when a helper has it), and gives the slot a buffer. 0,
/// ECANCELED when closing, ENOMEM, or -1 when the GET ends here
/// (run_stopped or run_parked says why).
static int begin_run_part(struct sl_http_source* s, struct xfer* x) {
  int64_t k = x->run_part;
  double t = x->run_lead ? now_seconds() : 0;
  pthread_mutex_lock(&s->lock);
  if (k >= x->run_end) {
    if (x->run_lead && s->next_fetch == k && k < s->n_parts) {
      s->next_fetch = x->run_end = k + 1;
    } else {
      pthread_mutex_unlock(&s->lock);
      x->run_stopped = 1;
      return -1;
    }
  }
  int parked = wait_for_room(s, k, s->park_ms) != 0;
  pthread_mutex_unlock(&s->lock);
  if (x->run_lead) x->run_waited += now_seconds() - t;
  if (parked) {
    x->run_parked = 1;
    return -1;
  }
  if (atomic_load(&s->stopping)) return ECANCELED;
  uint8_t* data;
  struct sl_ref* ref;
  struct sluice_error err;
  int recycled;
  int64_t len = part_length(s, k);
  if (new_block(s, len, &data, &ref, &recycled, &err) != 0) return ENOMEM;
  pthread_mutex_lock(&s->lock);
  start_part(&s->slots[k % s->depth], k, data, ref, len);
  pthread_mutex_unlock(&s->lock);
  x->faulted = recycled ? len : 0;
  return 0;
}

/// The bytes of a run's GET, part after part.
static int run_sink(struct xfer* x, const uint8_t* data, int64_t n) {
  struct sl_http_source* s = x->s;
  if (x->run_lead && x->run_t0 == 0) x->run_t0 = now_seconds();
  while (n > 0) {
    if (x->run_within == 0) {
      int rc = begin_run_part(s, x);
      if (rc != 0) return rc;  // -1 stops the transfer (run_stopped / run_parked tell)
    }
    struct http_part* slot = &s->slots[x->run_part % s->depth];
    int64_t len = slot->size;
    int64_t take = n < len - x->run_within ? n : len - x->run_within;
    fault_ahead(slot->data, len, x->run_within + take, &x->faulted);
    memcpy(slot->data + x->run_within, data, (size_t)take);
    data += take;
    n -= take;
    x->run_within += take;
    if (x->run_lead) x->run_bytes += take;
    publish_filled(s, slot, x->run_within, x->run_within == len);
    if (x->run_within == len) {
      x->run_part++;
      x->run_within = 0;
      if (x->run_lead && !atomic_load(&s->helping)) judge_lead_rate(s, x);
    }
  }
  return 0;
}

/// A run that failed: its current part reports the error (the consumer
/// stops there; later parts of the run are never asked for).
static void fail_run(struct sl_http_source* s, struct xfer* x, int rc,
                     const struct sluice_error* err) {
  int64_t k = x->run_part;
  pthread_mutex_lock(&s->lock);
  while (!atomic_load(&s->stopping) && k >= s->cur + s->depth) {
    pthread_cond_wait(&s->cond, &s->lock);
  }
  struct http_part* slot = &s->slots[k % s->depth];
  if (!atomic_load(&s->stopping) && k < s->n_parts) {
    // A part the run had not begun: its slot's last part was left (empty).
    if (slot->index != k || slot->state != PART_FETCHING) {
      start_part(slot, k, NULL, NULL, part_length(s, k));
    }
    sl_ref_release(slot->ref);  // views handed out keep their own references
    slot->ref = NULL;
    slot->data = NULL;
    slot->state = PART_FAILED;
    slot->rc = rc;
    slot->error = *err;
    if (slot->error.code == 0) slot->error.code = rc;
  }
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

/// Fetches parts [first, end) with one GET (retried, resuming at the byte
/// after the last one received); the lead asks for the rest of the object
/// and takes part after part while no helper has the next one. 0, or the
/// error its part now reports.
static int fetch_run(struct sl_http_source* s, int64_t first, int64_t end, int lead) {
  struct xfer x;
  memset(&x, 0, sizeof x);
  x.s = s;
  x.sink = run_sink;
  x.run_part = first;
  x.run_end = end;
  x.run_lead = lead;
  char errbuf[CURL_ERROR_SIZE];
  char what[96];
  struct sluice_error err;
  memset(&err, 0, sizeof err);
  unsigned seed = make_seed(s, first);
  int rc = 0;
  CURL* h = sl_http_pool_get(s->handles);
  if (h == NULL) rc = sl_error_set(&err, ENOMEM, "%s: cannot create an HTTP handle", s->base.name);
  for (int attempt = 0; rc == 0;) {
    int64_t from = x.run_part * s->part_size + x.run_within;
    int64_t part_before = x.run_part, within_before = x.run_within;
    int64_t to = (lead ? s->base.size : x.run_end * s->part_size) - 1;
    if (to > s->base.size - 1) to = s->base.size - 1;
    if (s->base.size < 0) to = -1;  // an open by download: bytes=0- (the size comes with it)
    snprintf(what, sizeof what, "GET of bytes %" PRId64 "-%" PRId64, from, to);
    int sign_rc;
    x.stream_rc = 0;
    CURLcode c = http_perform(s, h, "GET", from, to, &x, errbuf, &sign_rc, &err);
    if (sign_rc != 0) {
      rc = sign_rc;
      break;
    }
    // An open by download that did not settle: the opener opens the usual
    // way, which reports what went wrong.
    if (s->base.size < 0) break;
    if (x.run_stopped || x.run_part >= (lead ? s->n_parts : x.run_end)) break;  // done
    if (x.run_parked) {  // (run_within is 0: parked before a part's first byte)
      double t = lead ? now_seconds() : 0;
      pthread_mutex_lock(&s->lock);
      wait_for_room(s, x.run_part, 0);
      pthread_mutex_unlock(&s->lock);
      if (lead) x.run_waited += now_seconds() - t;
      x.run_parked = 0;
      if (!atomic_load(&s->stopping)) continue;  // a new GET from that part
    }
    if (x.stream_rc == ENOMEM) {
      rc = sl_error_set(&err, ENOMEM, "%s: out of memory for a read buffer", s->base.name);
      break;
    }
    int progressed = x.run_part > part_before ||
                     (x.run_part == part_before && x.run_within > within_before);
    if (!atomic_load(&s->stopping) && x.stream_rc == 0 && short_answer(&x, c, progressed)) {
      attempt = 0;
      continue;
    }
    int retry;  // (a sink cancelled by closing is `stopping`)
    rc = ranged_attempt_error(s, &x, c, errbuf, what, &retry, &err);
    if (!retry) break;
    if (++attempt >= HTTP_MAX_ATTEMPTS) {
      rc = err.code != 0 ? err.code : EIO;
      break;
    }
    backoff(attempt - 1, &x, &seed);
  }
  if (h != NULL) sl_http_pool_put(s->handles, h);
  if (rc != 0) fail_run(s, &x, rc, &err);
  return rc;
}

/// Ranged readahead, a helper: takes the next parts no one has (run_parts,
/// or a share of what is left, so that all helpers get some) and fetches
/// them with one GET, until none are left or one fails (the consumer stops
/// at the failed part: nothing after it is needed).
static void* helper_worker(void* arg) {
  struct sl_http_source* s = arg;
  int rc = 0;
  pthread_mutex_lock(&s->lock);
  while (rc == 0 && !atomic_load(&s->stopping) && s->next_fetch < s->n_parts) {
    int64_t first = s->next_fetch;
    int64_t share = (s->n_parts - first + s->parallel - 1) / s->parallel;
    int64_t end = first + (share < s->run_parts ? share : s->run_parts);
    s->next_fetch = end;
    pthread_mutex_unlock(&s->lock);
    rc = fetch_run(s, first, end, 0);
    pthread_mutex_lock(&s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/// Ranged readahead, the lead: one GET for the rest of the object from the
/// stream position, as curl would fetch it. Once helpers take parts ahead
/// of it, it stops where they start and helps.
static void* lead_worker(void* arg) {
  struct sl_http_source* s = arg;
  pthread_mutex_lock(&s->lock);
  int64_t first = s->next_fetch;
  int go = first < s->n_parts && !atomic_load(&s->stopping);
  if (go) s->next_fetch = first + 1;
  pthread_mutex_unlock(&s->lock);
  if (go && fetch_run(s, first, first + 1, 1) != 0) return NULL;
  return helper_worker(s);
}

static void clear_readahead(struct sl_http_source* s);

/// An open by download's lead: any lead once its response settled the
/// object; else it ends, and tells the opener.
static void* open_lead_worker(void* arg) {
  struct sl_http_source* s = arg;
  lead_worker(s);
  pthread_mutex_lock(&s->lock);
  if (s->open_state == OPEN_WAITING) s->open_state = OPEN_REFUSED;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/// Waits (lock held) for the source's condition at most one
/// SL_SOURCE_CANCEL_POLL_MS slice: a wait that asks the open's cancel hook
/// between slices.
static void wait_cancel_slice(struct sl_http_source* s) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += SL_SOURCE_CANCEL_POLL_MS * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&s->cond, &s->lock, &until);
}

/// Opens an object its reader streams from byte 0 (remote.stream_first) by
/// its download: a lead GETs bytes=0-; its response's Content-Range and
/// ETag settle the object, and the lead goes on into the readahead's parts
/// while the reader opens (W3 over MinIO: one request instead of an edge's
/// 64 KiB and then the stream). *settled = 0, with nothing of it left, when
/// no 206 from byte 0 came (an empty object, a server without ranges, an
/// error): the caller then opens the usual way, which reports errors.
static int http_open_by_stream(struct sl_http_source* s, int* settled,
                               struct sluice_error* error) {
  *settled = 0;
  s->slots = sl_calloc(s->base.alloc, (size_t)s->depth, sizeof *s->slots);
  if (s->slots == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", s->base.name);
  pthread_mutex_lock(&s->lock);
  s->open_state = OPEN_WAITING;
  s->n_parts = 1;  // the lead's first part; its response gives the rest
  int cancelled = 0;
  if (pthread_create(&s->threads[0], NULL, open_lead_worker, s) == 0) {
    s->started = 1;
    s->n_threads = 1;
    // The lead's requests run on its thread, which only reads `cancel_seen`:
    // with a hook, this thread waits in slices and asks it (a server that
    // never answers was waited for until the timeout, Ctrl-C or not).
    while (s->open_state == OPEN_WAITING && !cancelled) {
      if (!sl_source_asks_here(&s->base)) {
        pthread_cond_wait(&s->cond, &s->lock);
      } else if (!(cancelled = sl_source_cancelled(&s->base))) {
        wait_cancel_slice(s);
      }
    }
  } else {
    s->open_state = OPEN_REFUSED;
  }
  if (cancelled) {  // (the lead, which now sees cancel_seen, is joined by http_destroy)
    pthread_mutex_unlock(&s->lock);
    return sl_error_set(error, ECANCELED, "%s: interrupted", s->base.name);
  }
  *settled = s->open_state == OPEN_SETTLED;
  pthread_mutex_unlock(&s->lock);
  if (!*settled) {  // as if it had not run
    clear_readahead(s);
    s->n_parts = 0;
    s->open_state = OPEN_NONE;
  }
  return 0;
}

/// Streaming mode: the bytes of the one GET, cut into parts as they come.
static int stream_sink(struct xfer* x, const uint8_t* data, int64_t n) {
  struct sl_http_source* s = x->s;
  // A resumed transfer starts from byte 0 again: drop what we already have.
  while (n > 0) {
    int64_t k = x->stream_received / s->part_size;
    int64_t within = x->stream_received % s->part_size;
    struct http_part* slot = &s->slots[k % s->depth];
    if (within == 0) {
      pthread_mutex_lock(&s->lock);
      while (!atomic_load(&s->stopping) && k >= s->cur + s->lead_window) {
        pthread_cond_wait(&s->cond, &s->lock);
      }
      pthread_mutex_unlock(&s->lock);
      if (atomic_load(&s->stopping)) return ECANCELED;
      uint8_t* block;
      struct sl_ref* ref;
      struct sluice_error err;
      int recycled;
      if (new_block(s, s->part_size, &block, &ref, &recycled, &err) != 0) return ENOMEM;
      pthread_mutex_lock(&s->lock);
      start_part(slot, k, block, ref, s->part_size);  // stream_worker trims the last one
      pthread_mutex_unlock(&s->lock);
      x->faulted = recycled ? s->part_size : 0;
    }
    int64_t room = s->part_size - within;
    int64_t take = n < room ? n : room;
    fault_ahead(slot->data, s->part_size, within + take, &x->faulted);
    memcpy(slot->data + within, data, (size_t)take);
    data += take;
    n -= take;
    x->stream_received += take;
    publish_filled(s, slot, within + take, take == room);
  }
  return 0;
}

static void* stream_worker(void* arg) {
  struct sl_http_source* s = arg;
  struct xfer x;
  memset(&x, 0, sizeof x);
  x.s = s;
  x.sink = stream_sink;
  x.from_start = 1;
  char errbuf[CURL_ERROR_SIZE];
  struct sluice_error err;
  memset(&err, 0, sizeof err);
  unsigned seed = make_seed(s, 1);
  int rc = 0;
  CURL* h = sl_http_pool_get(s->handles);
  if (h == NULL) rc = sl_error_set(&err, ENOMEM, "%s: cannot create an HTTP handle", s->base.name);
  for (int attempt = 0; rc == 0; ++attempt) {
    int sign_rc;
    x.stream_rc = 0;
    CURLcode c = http_perform(s, h, "GET", -1, -1, &x, errbuf, &sign_rc, &err);
    if (sign_rc != 0) {
      rc = sign_rc;
      break;
    }
    if (c == CURLE_OK && x.status >= 200 && x.status <= 299 && !x.changed && !x.coded) {
      if (s->base.size >= 0 && x.stream_received != s->base.size) {
        rc = sl_error_set(&err, EIO, "%s: GET: the object ended after %" PRId64
                          " bytes, where its size is %" PRId64 " (Content-Length)",
                          s->base.name, x.stream_received, s->base.size);
      }
      break;
    }
    if (x.stream_rc != 0) {
      rc = x.stream_rc == ECANCELED
               ? sl_error_set(&err, ECANCELED, "%s: cancelled", s->base.name)
               : sl_error_set(&err, x.stream_rc, "%s: out of memory for a read buffer",
                              s->base.name);
      break;
    }
    if (x.changed) {
      rc = changed_error(s, &x, "GET", &err);
      break;
    }
    if (x.coded) {
      rc = coded_error(s, &x, "GET", &err);
      break;
    }
    if (c == CURLE_BAD_CONTENT_ENCODING || (c == CURLE_WRITE_ERROR && s->coding[0] != '\0')) {
      // (a write error here is libcurl's decoder failing on the body)
      rc = sl_error_set(&err, EIO, "%s: GET: cannot decode its Content-Encoding: %s (%s)",
                        s->base.name, s->coding, errbuf[0] != '\0' ? errbuf : "libcurl");
      break;
    }
    int retry;
    if (busy_retryable(&x)) {
      retry = 1;
      status_error(s, &x, "GET", &err);
    } else if (x.status >= 300) {
      retry = 0;
      rc = status_error(s, &x, "GET", &err);
    } else {
      retry = sl_curl_retryable(c) || c == CURLE_OK;
      int e = curl_error(s, &x, c == CURLE_OK ? CURLE_PARTIAL_FILE : c, errbuf, "GET", &err);
      if (!retry) rc = e;
    }
    if (!retry) break;
    if (attempt + 1 >= HTTP_MAX_ATTEMPTS) {
      rc = err.code != 0 ? err.code : EIO;
      break;
    }
    backoff(attempt, &x, &seed);
  }
  sl_http_pool_put(s->handles, h);
  pthread_mutex_lock(&s->lock);
  if (rc != 0) {
    s->failed = 1;
    s->fail_error = err;
    if (s->fail_error.code == 0) s->fail_error.code = rc;
  } else {
    int64_t k = x.stream_received / s->part_size;
    int64_t within = x.stream_received % s->part_size;
    if (within > 0) {
      struct http_part* slot = &s->slots[k % s->depth];
      slot->size = slot->filled = within;
      slot->state = PART_READY;
    }
    s->stream_end = x.stream_received;
  }
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/// Starts the download threads, once (under the lock: a dataset may ask
/// from another thread, sl_source_prefetch, while this object's split reads).
static int start_readahead(struct sl_http_source* s, struct sluice_error* error) {
  int rc = 0;
  pthread_mutex_lock(&s->lock);
  if (!s->started && s->slots == NULL) {
    s->slots = sl_calloc(s->base.alloc, (size_t)s->depth, sizeof *s->slots);
    if (s->slots == NULL) rc = sl_error_set(error, ENOMEM, "%s: out of memory", s->base.name);
  }
  if (rc == 0 && !s->started) {
    // One download thread (ranged: the lead, which calls helpers if its
    // link is slow), from the part the consumer is in.
    if (s->ranges) {
      s->n_parts = (s->base.size + s->part_size - 1) / s->part_size;
      s->cur = s->next_fetch = s->pos / s->part_size;
    }
    if (pthread_create(&s->threads[0], NULL, s->ranges ? lead_worker : stream_worker, s) == 0) {
      s->started = 1;
      s->n_threads = 1;
    } else {
      rc = sl_error_set(error, EAGAIN, "%s: cannot start a download thread", s->base.name);
    }
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/// Leaves the parts below `k` (lock held): their slots are free to refill.
/// Stops at a part still being fetched (all its bytes may have been read,
/// but its worker still owns the slot); a later call leaves it.
static void leave_parts(struct sl_http_source* s, int64_t k) {
  int64_t was = s->cur;
  while (s->cur < k) {
    struct http_part* slot = &s->slots[s->cur % s->depth];
    if (slot->index == s->cur && slot->state == PART_FETCHING) break;
    if (slot->index == s->cur && (slot->state == PART_READY || slot->state == PART_FAILED)) {
      sl_ref_release(slot->ref);
      slot->ref = NULL;
      slot->data = NULL;
      slot->state = PART_EMPTY;
    }
    ++s->cur;
  }
  if (s->cur != was) pthread_cond_broadcast(&s->cond);
}

/// Waits (lock held) until part k is fetched, or has its first `want` bytes;
/// returns its slot, or NULL with *rc set on failure, or NULL with *rc 0 when
/// the data ends before part k.
static struct http_part* wait_part(struct sl_http_source* s, int64_t k, int64_t want, int* rc,
                                   struct sluice_error* error) {
  *rc = 0;
  for (;;) {
    leave_parts(s, s->pos / s->part_size);  // parts read while still being fetched
    struct http_part* slot = &s->slots[k % s->depth];
    if (slot->index == k && (slot->state == PART_READY ||
                             (slot->state == PART_FETCHING && slot->filled >= want))) {
      return slot;
    }
    if (slot->index == k && slot->state == PART_FAILED) {
      *rc = slot->rc;
      if (error != NULL) *error = slot->error;
      return NULL;
    }
    if (s->stream_end >= 0 && k * s->part_size >= s->stream_end) return NULL;
    if (s->failed) {
      *rc = s->fail_error.code != 0 ? s->fail_error.code : EIO;
      if (error != NULL) *error = s->fail_error;
      return NULL;
    }
    s->starved++;
    if (!sl_source_asks_here(&s->base)) {
      pthread_cond_wait(&s->cond, &s->lock);
      continue;
    }
    // An open that may be cancelled: a body that trickles is waited for in
    // slices, the hook asked between them.
    if (sl_source_cancelled(&s->base)) {
      struct sluice_error ignored;
      *rc = sl_error_set(error != NULL ? error : &ignored, ECANCELED, "%s: interrupted",
                         s->base.name);
      return NULL;
    }
    wait_cancel_slice(s);
  }
}

/// A forward read that edges[0] holds, as a view of it: a small object held
/// whole (up to its end), or, before the readahead starts, a read within the
/// head edge the opening GET brought (an IPC stream's schema, an Avro
/// header: what opening a reader reads). Opening the objects of a dataset,
/// all before its scan, then starts no readahead (each object used to fetch
/// and hold a full readahead until its turn: 20 objects of 40 MB, 600 MB).
/// 1 when it served the read (edges[0] may have been dropped meanwhile).
static int edge_view(struct sl_http_source* s, int64_t length, int consume, struct sl_view* out) {
  int whole = atomic_load(&s->whole);
  int64_t end = whole || s->base.size < HTTP_EDGE_CACHE ? s->base.size : HTTP_EDGE_CACHE;
  int served = 0;
  pthread_mutex_lock(&s->edge_lock);
  pthread_mutex_lock(&s->lock);
  int64_t at = s->pos;
  // The kept head (a CSV's sample) serves a forward read too (an object
  // that fits the sample is read whole, forward) before the readahead starts.
  if (s->head.ref != NULL && !s->started &&
      (at + length <= s->head_size || (s->head_size == s->base.size && at <= s->head_size))) {
    int64_t n = length < s->head_size - at ? length : s->head_size - at;
    if (consume) s->pos += n;
    out->data = n > 0 ? s->head.data + at : sl_empty_bytes;
    out->size = n;
    out->owner = n > 0 ? sl_ref_retain(s->head.ref) : NULL;
    served = 1;
  } else if (s->edges[0].ref != NULL &&
             (whole || (s->ranges && !s->started && at + length <= end))) {
    int64_t n = length < end - at ? length : end - at;
    if (consume) s->pos += n;
    out->data = n > 0 ? s->edges[0].data + at : sl_empty_bytes;
    out->size = n;
    out->owner = n > 0 ? sl_ref_retain(s->edges[0].ref) : NULL;
    served = 1;
  }
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_unlock(&s->edge_lock);
  return served;
}

/// A view of up to `length` bytes from the stream position; consumes them
/// unless peeking. Views into one part share it; a read across parts copies.
/// `some`: fewer bytes will do (at least one unless the data ended), so the
/// view may end where the download has got to.
static int readahead_view(struct sl_http_source* s, int64_t length, int consume, int some,
                          struct sl_view* out, struct sluice_error* error) {
  out->data = NULL;
  out->size = 0;
  out->owner = NULL;
  if (length < 0) {
    return sl_error_set(error, EINVAL, "%s: negative read length %" PRId64, s->base.name, length);
  }
  atomic_store(&s->forward, 1);
  if (edge_view(s, length, consume, out)) return 0;
  pthread_mutex_lock(&s->lock);
  // At the end: the last part may be gone (left once read, below).
  int at_end = s->stream_end >= 0 && s->pos >= s->stream_end;
  pthread_mutex_unlock(&s->lock);
  if (at_end) {
    out->data = sl_empty_bytes;
    return 0;
  }
  SL_RETURN_NOT_OK(start_readahead(s, error));
  int rc = 0;
  pthread_mutex_lock(&s->lock);
  int64_t k = s->pos / s->part_size;
  int64_t within = s->pos % s->part_size;
  struct http_part* slot =
      length > 0 ? wait_part(s, k, some ? within + 1 : within + length, &rc, error) : NULL;
  if (slot == NULL || within >= slot->size) {
    pthread_mutex_unlock(&s->lock);
    if (rc == 0) out->data = sl_empty_bytes;  // end of data
    return rc;
  }
  int64_t avail = slot->filled - within;
  if (some && length > avail) length = avail;
  if (length <= avail) {
    // The common case: a view into the part, no copy.
    out->data = slot->data + within;
    out->size = length;
    out->owner = sl_ref_retain(slot->ref);
    if (consume) {
      s->pos += length;
      // Read to its end (the last part is shorter): it goes. A dataset's
      // objects each kept their last part until the dataset closed.
      if (within + length == slot->size) leave_parts(s, k + 1);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
  }
  // Across a part boundary: copy exactly these bytes (or up to the end).
  pthread_mutex_unlock(&s->lock);
  uint8_t* data;
  struct sl_ref* ref;
  int recycled;
  SL_RETURN_NOT_OK(new_block(s, length, &data, &ref, &recycled, error));
  int64_t copied = 0;
  pthread_mutex_lock(&s->lock);
  int64_t at = s->pos;
  while (copied < length) {
    if (s->stream_end >= 0 && at >= s->stream_end) break;  // the last part may be gone
    int64_t pk = at / s->part_size;
    int64_t pw = at % s->part_size;
    // Only the bytes wanted of this part: a peek of 1 MiB + 64 KiB waited
    // for a whole second part (2 MiB) from a server that stalled before.
    struct http_part* p = wait_part(s, pk, pw + (length - copied), &rc, error);
    if (p == NULL || pw >= p->size) break;
    int64_t have = (p->state == PART_READY ? p->size : p->filled) - pw;
    if (have <= 0) break;  // (wait_part returns a part once it holds what was wanted)
    int64_t take = have < length - copied ? have : length - copied;
    memcpy(data + copied, p->data + pw, (size_t)take);
    copied += take;
    at += take;
    if (consume && pw + take == p->size) {
      s->pos = at;
      leave_parts(s, pk + 1);
    }
    if (!consume && pk + 1 >= s->cur + s->depth) break;  // a peek cannot wait past the ring
  }
  if (consume && rc == 0) s->pos = at;
  pthread_mutex_unlock(&s->lock);
  if (rc != 0) {
    sl_ref_release(ref);
    return rc;
  }
  out->data = data;
  out->size = copied;
  out->owner = ref;
  return 0;
}

static int http_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                          struct sluice_error* error) {
  return readahead_view((struct sl_http_source*)source, length, 1, 0, out, error);
}

static int http_read_some(struct sl_source* source, int64_t length, struct sl_view* out,
                          struct sluice_error* error) {
  return readahead_view((struct sl_http_source*)source, length, 1, 1, out, error);
}

static int http_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                     struct sluice_error* error) {
  return readahead_view((struct sl_http_source*)source, length, 0, 0, out, error);
}

/* ---- Open / close --------------------------------------------------------------- */

/// Ends the readahead's downloads and joins their threads (the reader's
/// thread, not reading meanwhile).
static void stop_downloads(struct sl_http_source* s) {
  pthread_mutex_lock(&s->lock);
  int n_threads = s->started ? s->n_threads : 0;
  atomic_store(&s->stopping, 1);
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);  // no helper starts once stopping is set
  for (int i = 0; i < n_threads; ++i) pthread_join(s->threads[i], NULL);
}

/// Stops the downloads and leaves the readahead as start_readahead found
/// it (empty slots, no threads, nothing taken); views keep their parts'
/// bytes.
static void clear_readahead(struct sl_http_source* s) {
  stop_downloads(s);
  pthread_mutex_lock(&s->lock);
  if (s->slots != NULL) {
    for (int i = 0; i < s->depth; ++i) {
      sl_ref_release(s->slots[i].ref);
      memset(&s->slots[i], 0, sizeof s->slots[i]);
    }
  }
  s->started = 0;
  s->n_threads = 0;
  atomic_store(&s->helping, 0);
  s->starved = 0;
  s->cur = s->next_fetch = 0;
  atomic_store(&s->stopping, 0);
  pthread_mutex_unlock(&s->lock);
}

static void http_destroy(struct sl_http_source* s) {
  const struct sluice_allocator* alloc = s->base.alloc;
  stop_downloads(s);
  if (s->slots != NULL) {
    for (int i = 0; i < s->depth; ++i) sl_ref_release(s->slots[i].ref);
    sl_free(alloc, s->slots, (size_t)s->depth * sizeof *s->slots);
  }
  if (s->handles != NULL) {
    give_back(s);
    release_head(s);
  }
  sl_http_pool_release(s->handles);  // after the workers: they return handles
  for (int i = 0; i < 2; ++i) sl_ref_release(s->edges[i].ref);
  sl_block_pool_close(s->blocks);  // blocks still viewed go when their views do
  pthread_mutex_destroy(&s->edge_lock);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  if (s->has_signer && s->signer.destroy != NULL) s->signer.destroy(s->signer.ctx);
  if (s->url != NULL) sl_free(alloc, s->url, strlen(s->url) + 1);
  if (s->ca_bundle != NULL) sl_free(alloc, s->ca_bundle, strlen(s->ca_bundle) + 1);
  if (s->base.name != NULL) sl_free(alloc, s->base.name, strlen(s->base.name) + 1);
  sl_free(alloc, s, sizeof *s);
}

/// Lets go of edges[from..1] (edge_lock held); views keep their bytes.
static void release_edges(struct sl_http_source* s, int from) {
  for (int i = from; i < 2; ++i) {
    sl_ref_release(s->edges[i].ref);
    s->edges[i].ref = NULL;
    s->edges[i].data = NULL;
  }
}

/// A reader is done with the whole object (the last split of it closed):
/// the cached edges, or the whole small object, go (views keep their bytes);
/// a later read fetches them again. A scan over many objects then holds
/// only those being read.
static void http_drop(struct sl_source* source, int64_t offset, int64_t length) {
  struct sl_http_source* s = (struct sl_http_source*)source;
  if (offset > 0 || length < source->size) return;
  pthread_mutex_lock(&s->edge_lock);
  release_edges(s, 0);
  atomic_store(&s->whole, 0);
  give_back(s);
  pthread_mutex_unlock(&s->edge_lock);
  release_head(s);
  sl_block_pool_idle(s->blocks);
}

/// The reader has opened and planned: the edges that served that go (a
/// Parquet footer is a copy of its own by now), unless edges[0] is the whole
/// small object, which the scan reads from memory.
static void http_trim(struct sl_source* source) {
  struct sl_http_source* s = (struct sl_http_source*)source;
  pthread_mutex_lock(&s->edge_lock);
  release_edges(s, atomic_load(&s->whole) ? 1 : 0);
  s->trimmed = 1;
  pthread_mutex_unlock(&s->edge_lock);
  release_head(s);
  sl_block_pool_idle(s->blocks);
}

/// The dataset reads this object soon: a source its reader reads forward
/// starts fetching from the stream position (the readahead's own bound).
static void http_prefetch(struct sl_source* source) {
  struct sl_http_source* s = (struct sl_http_source*)source;
  if (!s->ranges || !atomic_load(&s->forward) || atomic_load(&s->whole)) return;
  struct sluice_error ignored;  // the read itself starts it again and reports
  memset(&ignored, 0, sizeof ignored);
  (void)start_readahead(s, &ignored);
}

/// Forward reads go on from `offset` (sl_source_seek): the downloads stop
/// and their parts go; the next read (or a prefetch) starts a GET from the
/// part holding `offset`. Ranged objects only: a stream without ranges
/// cannot start over without another GET of everything.
static int http_seek(struct sl_source* source, int64_t offset, struct sluice_error* error) {
  struct sl_http_source* s = (struct sl_http_source*)source;
  (void)error;
  // The position first: a prefetch (another worker opening its split) that
  // starts the readahead between the two takes it from the new position,
  // or is stopped by the clearing. In the other order one could restart it
  // from the old position (the object's end after a first scan) and leave
  // the reader waiting for a part nobody fetches.
  pthread_mutex_lock(&s->lock);
  s->pos = offset;  // start_readahead takes cur and next_fetch from it
  atomic_store(&s->forward, 1);  // a reader that seeks reads forward: prefetch may start it
  pthread_mutex_unlock(&s->lock);
  clear_readahead(s);
  sl_block_pool_idle(s->blocks);
  return 0;
}

static void http_close(struct sl_source* source) {
  http_destroy((struct sl_http_source*)source);
}

static const struct sl_source_ops sl_http_ranged_ops = {
    .read_at = http_read_at,
    .read_next = http_read_next,
    .read_some = http_read_some,
    .close = http_close,
    .peek = NULL,
    .drop = http_drop,
    .trim = http_trim,
    .prefetch = http_prefetch,
    .seek = http_seek,
};

static const struct sl_source_ops sl_http_stream_ops = {
    .read_at = NULL,
    .read_next = http_read_next,
    .read_some = http_read_some,
    .close = http_close,
    .peek = http_peek,
    .drop = http_drop,
    .trim = http_trim,
    .prefetch = http_prefetch,
};

int sl_http_source_untouched(const struct sl_source* source) {
  if (source == NULL || source->ops != &sl_http_stream_ops) return 0;
  const struct sl_http_source* s = (const struct sl_http_source*)source;
  return s->pos == 0;
}

int sl_http_source_coded(const struct sl_source* source) {
  if (source == NULL ||
      (source->ops != &sl_http_stream_ops && source->ops != &sl_http_ranged_ops)) {
    return 0;
  }
  return ((const struct sl_http_source*)source)->coding[0] != '\0';
}

/// The environment variable `name` as a positive number, or `fallback`.
static int64_t size_from_env(const char* name, int64_t fallback) {
  const char* text = getenv(name);
  int64_t v;
  return text != NULL && sl_parse_int64(text, strlen(text), 1, INT64_C(1) << 40, &v) == 0
             ? v
             : fallback;
}

int sl_http_source_open_config(const struct sl_http_config* config,
                               const struct sluice_allocator* alloc, struct sl_source** out,
                               struct sluice_error* error) {
  *out = NULL;
  // Messages name the object without the URL's password.
  char shown_url[1024];
  if (config->name == NULL) sl_location_shown(config->url, shown_url, sizeof shown_url);
  const char* name = config->name != NULL ? config->name : shown_url;
  struct sl_http_source* s = sl_calloc(alloc, 1, sizeof *s);
  int rc = s == NULL ? sl_error_set(error, ENOMEM, "%s: out of memory", name) : 0;
  if (rc == 0 && config->remote.http_pool != NULL) {
    s->handles = config->remote.http_pool;
    sl_http_pool_retain(s->handles);
  } else if (rc == 0) {
    rc = sl_http_pool_create(alloc, name, HTTP_WHOLE_OBJECT, &s->handles, error);
  }
  if (rc != 0) {
    if (config->signer != NULL && config->signer->destroy != NULL) {
      config->signer->destroy(config->signer->ctx);
    }
    if (s != NULL) sl_free(alloc, s, sizeof *s);
    return rc;
  }
  s->curl = sl_http_pool_curl(s->handles);
  s->base.alloc = alloc;
  // (reads: while the dataset opens, on this thread)
  sl_source_ask_cancel(&s->base, config->remote.cancelled, config->remote.cancelled_user);
  s->base.size = -1;
  s->total = -1;
  s->base.owner = NULL;
  s->base.ops = &sl_http_stream_ops;
  pthread_mutex_init(&s->edge_lock, NULL);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  atomic_init(&s->stopping, 0);
  atomic_init(&s->whole, 0);
  if (config->signer != NULL) {
    s->signer = *config->signer;
    s->has_signer = 1;
  }
  s->insecure = config->remote.tls_insecure;
  s->timeout_s = config->remote.timeout_s;
  s->part_size = size_from_env("SLUICE_HTTP_PART_SIZE",
                               config->part_size > 0 ? config->part_size : HTTP_DEFAULT_PART);
  s->fast_link = size_from_env("SLUICE_HTTP_FAST_LINK", HTTP_FAST_LINK);
  s->park_ms = size_from_env("SLUICE_HTTP_PARK_MS", HTTP_PARK_AFTER_MS);
  s->parallel = config->parallel > 0 ? config->parallel : HTTP_DEFAULT_PARALLEL;
  if (s->parallel > HTTP_MAX_PARALLEL) s->parallel = HTTP_MAX_PARALLEL;
  // Within the budget: at least two parts (the one being read and one
  // ahead), smaller ones if the budget is small, never below 64 KiB.
  int64_t budget = config->remote.readahead_bytes > 0 ? config->remote.readahead_bytes
                                                      : HTTP_DEFAULT_PARALLEL * HTTP_RUN_BYTES;
  if (budget / 2 < s->part_size) {
    s->part_size = budget / 2 > HTTP_MIN_PART ? budget / 2 : HTTP_MIN_PART;
  }
  int64_t parts = budget / s->part_size;
  s->depth = parts > HTTP_MAX_SLOTS ? HTTP_MAX_SLOTS : parts < 2 ? 2 : (int)parts;
  // A helper's run fits the slots beside the others'.
  s->run_parts = HTTP_RUN_BYTES / s->part_size;
  if (s->run_parts > s->depth / s->parallel) s->run_parts = s->depth / s->parallel;
  if (s->run_parts < 1) s->run_parts = 1;
  s->lead_window = HTTP_LEAD_WINDOW / s->part_size;
  if (s->lead_window > s->depth) s->lead_window = s->depth;
  if (s->lead_window < 2) s->lead_window = 2;
  s->stream_end = -1;
  s->blocks = sl_block_pool_create(alloc, HTTP_POOL_BYTES);
  if (config->name != NULL) {
    s->base.name = sl_strdup(alloc, config->name);
  } else {  // (a presigned URL may be longer than shown_url)
    size_t n = sl_location_shown(config->url, NULL, 0) + 1;
    s->base.name = sl_alloc(alloc, n);
    if (s->base.name != NULL) sl_location_shown(config->url, s->base.name, n);
  }
  s->url = sl_strdup(alloc, config->url);
  if (config->remote.ca_bundle != NULL) s->ca_bundle = sl_strdup(alloc, config->remote.ca_bundle);
  if (s->blocks == NULL || s->base.name == NULL || s->url == NULL ||
      (config->remote.ca_bundle != NULL && s->ca_bundle == NULL)) {
    http_destroy(s);
    return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  }
  int settled = 0;
  int64_t hint = config->remote.size_hint;
  if (config->remote.stream_first && (hint == 0 || hint > HTTP_WHOLE_OBJECT)) {
    rc = http_open_by_stream(s, &settled, error);
  }
  if (rc == 0 && !settled) {
    rc = http_open_by_get(s, hint, config->remote.tail_first, &settled, error);
  }
  if (rc == 0 && !settled) rc = http_head(s, error);
  if (rc != 0) {
    http_destroy(s);
    return rc;
  }
  if (s->ranges) {
    s->base.ops = &sl_http_ranged_ops;
    // (an open by download set it, and its lead reads it now)
    if (s->open_state != OPEN_SETTLED) s->stream_end = s->base.size;
  }
  enum sl_compression coding = own_decoding(s->coding);
  if (coding != SL_COMPRESS_NONE) {
    // Content-Encoding metadata that the bytes contradict (an object stored
    // plain with Content-Encoding: gzip set on it): read as they are, as
    // pyarrow and boto3 read them (it was "corrupt gzip data").
    enum sl_compression found = SL_COMPRESS_NONE;
    const char* unread = NULL;
    rc = sl_source_compression(&s->base, &found, &unread, error);
    if (rc != 0) {
      s->base.ops->close(&s->base);
      return rc;
    }
    if (found == coding) return sl_source_inflate_adopt(&s->base, coding, out, error);
  }
  *out = &s->base;
  return 0;
}

int sl_http_source_open(const char* url, const struct sl_remote_options* remote,
                        const struct sluice_allocator* alloc, struct sl_source** out,
                        struct sluice_error* error) {
  struct sl_http_config config;
  memset(&config, 0, sizeof config);
  config.url = url;
  if (remote != NULL) config.remote = *remote;
  return sl_http_source_open_config(&config, alloc, out, error);
}

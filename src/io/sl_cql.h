// Apache Cassandra's native protocol (CQL binary protocol v4, over TCP or TLS): a
// location's parts, one connection (STARTUP, PasswordAuthenticator's SASL
// PLAIN, QUERY with paging), and a bounds-checked cursor over the answers.
// What a RESULT's rows mean is the cql format reader's business
// (src/format/cql/); this file only moves frames.
#ifndef SL_CQL_H
#define SL_CQL_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/// What `cql://[user[:password]@]host[:port]/keyspace.table` names. The
/// user and password may also come from SLUICE_CQL_USER / SLUICE_CQL_PASSWORD
/// (so that a password need not appear in a command line); the URL wins,
/// and a user in it without a password takes SLUICE_CQL_PASSWORD's.
struct sl_cql_address {
  char host[256];
  char port[8];
  char user[256];
  char password[256];
  char keyspace[256];
  char table[256];
  /// Not from the location, set by the caller from options: TLS (OpenSSL)
  /// on the connection; tls_insecure skips the certificate and host name
  /// checks; ca_bundle is a PEM file of trusted CAs ("" = the system's);
  /// tls_cert a PEM client certificate (chain) for nodes that ask for one
  /// (require_client_auth), tls_key its private key ("" = in tls_cert).
  int tls;
  int tls_insecure;
  char ca_bundle[4096];
  char tls_cert[4096];
  char tls_key[4096];
  /// 1: frames compressed with LZ4 both ways (option compression=lz4).
  int compression;
  /// Seconds to connect, and to wait for a byte of an answer or for room to
  /// send (0 = CQL_SOCKET_TIMEOUT_S).
  double timeout_s;
};

/// Sets the TLS fields of `address` that come from the global options
/// (ca_bundle NULL = the system store). EINVAL when the CA file name is too
/// long, or a client certificate or key is set without tls.
int sl_cql_set_tls(struct sl_cql_address* address, int insecure, const char* ca_bundle,
                   struct sluice_error* error);

/// Parses a cql:// location (%XX escapes in the user and password are
/// decoded). EINVAL with a message naming what is wrong.
int sl_cql_parse_location(const char* location, struct sl_cql_address* out,
                          const struct sluice_allocator* alloc, struct sluice_error* error);

/// `location` for messages: a password in it becomes "***" (NUL-terminated,
/// cut to `cap` bytes).
void sl_cql_redacted(const char* location, char* out, size_t cap);

/// Consistency levels ([consistency] in the protocol).
enum {
  SL_CQL_ANY = 0x0000,
  SL_CQL_ONE = 0x0001,
  SL_CQL_TWO = 0x0002,
  SL_CQL_THREE = 0x0003,
  SL_CQL_QUORUM = 0x0004,
  SL_CQL_ALL = 0x0005,
  SL_CQL_LOCAL_QUORUM = 0x0006,
  SL_CQL_EACH_QUORUM = 0x0007,
  SL_CQL_LOCAL_ONE = 0x000A,
};

/// One connection to one node, used by one thread at a time. Queries go on
/// stream 0, one at a time, except that a query may be sent before the
/// previous answer has been decoded (the answer waits in the socket);
/// sl_cql_send / sl_cql_receive keep many requests in flight on streams of
/// the caller's choosing.
struct sl_cql_conn;

/// Connects (and starts TLS when the address says so), starts protocol v4
/// and logs in when the node asks for it.
/// `name` (the location) prefixes error messages.
int sl_cql_connect(const struct sl_cql_address* address, const char* name,
                   const struct sluice_allocator* alloc, struct sl_cql_conn** out,
                   struct sluice_error* error);
void sl_cql_close(struct sl_cql_conn* conn);

/// Sends a QUERY of `cql` at `consistency`, `page_rows` rows per page
/// (0 = no paging), continuing from `paging_state` (NULL = the first page);
/// `skip_metadata` asks for rows without the column specs (the caller
/// knows them). Does not wait for the answer.
int sl_cql_send_query(struct sl_cql_conn* conn, const char* cql, int consistency,
                      int32_t page_rows, const uint8_t* paging_state, int32_t paging_state_len,
                      int skip_metadata, struct sluice_error* error);

/// Waits for the answer to the request sent last: the body of a RESULT
/// (past any tracing id, warnings or custom payload), valid until the next
/// call on this connection. An ERROR answer becomes an error naming the
/// server's code and message; `what` says what was asked (for messages).
int sl_cql_receive_result(struct sl_cql_conn* conn, const char* what, const uint8_t** body,
                          int64_t* length, struct sluice_error* error);

/// Request opcodes whose bodies the caller builds (sl_cql_send).
enum {
  SL_CQL_OP_PREPARE = 0x09,
  SL_CQL_OP_EXECUTE = 0x0A,
  SL_CQL_OP_BATCH = 0x0D,
};

/// Sends a request of `opcode` with `body` (the bytes after the frame
/// header) on `stream` (0..32767) without waiting for the answer.
int sl_cql_send(struct sl_cql_conn* conn, int opcode, int16_t stream, const uint8_t* body,
                size_t length, struct sluice_error* error);

/// Waits for the next answer, whichever request it answers: *stream (when
/// not NULL) is that request's stream, also when the answer is an ERROR
/// (then -1 only if the connection broke). Otherwise as
/// sl_cql_receive_result.
int sl_cql_receive(struct sl_cql_conn* conn, const char* what, int16_t* stream,
                   const uint8_t** body, int64_t* length, struct sluice_error* error);

/// After a failed sl_cql_receive_result or sl_cql_receive: the server's error code when the
/// answer was an ERROR frame (the connection is still usable: e.g. 0x1200
/// read timeout, 0x1000 unavailable, 0x1001 overloaded), else -1 (the
/// connection broke or went out of step, and must be closed).
int sl_cql_server_error(const struct sl_cql_conn* conn);

/// Whether a server error code says "not now" rather than "never": read or
/// write timeout, unavailable, overloaded, bootstrapping. The same request
/// may succeed when sent again a little later.
int sl_cql_transient(int code);

/// A node that cannot be reached (connection reset or refused: restarting)
/// is tried again for this long since the last answer, long enough for a
/// node to restart (15 to 40 s), pausing 100 ms, then twice as long each
/// time up to 2 s.
#define SL_CQL_OUTAGE_MS 60000
#define SL_CQL_OUTAGE_PAUSE_MS 100
#define SL_CQL_OUTAGE_PAUSE_CAP_MS 2000

/// The tries since the last answer of a node (zeroed: none yet).
struct sl_cql_outage {
  int tries;          ///< failed tries since the last answer
  long long since_ms;  ///< when the first of them failed (monotonic clock)
};

/// After a failed try: pauses and returns 1 while the outage is shorter
/// than SL_CQL_OUTAGE_MS, else returns 0 at once (give up).
int sl_cql_outage_wait(struct sl_cql_outage* o);

/// The outage's length so far in seconds (for error messages).
double sl_cql_outage_seconds(const struct sl_cql_outage* o);

/// An answer came: the next failure starts a new outage.
void sl_cql_outage_end(struct sl_cql_outage* o);

/// Bounds-checked reading of protocol notations from an answer. Each read
/// returns 0, or -1 (and reads nothing) when the bytes run out or a length
/// is invalid: the caller reports where.
struct sl_cql_cursor {
  const uint8_t* p;
  const uint8_t* end;
};

int sl_cql_read_int(struct sl_cql_cursor* c, int32_t* out);
int sl_cql_read_short(struct sl_cql_cursor* c, uint16_t* out);
/// [string]: a [short] length and that many bytes (not NUL-terminated).
int sl_cql_read_string(struct sl_cql_cursor* c, const uint8_t** s, size_t* n);
/// [bytes]: an [int] length and that many bytes; *n = -1 for null.
int sl_cql_read_bytes(struct sl_cql_cursor* c, const uint8_t** data, int32_t* n);

#endif

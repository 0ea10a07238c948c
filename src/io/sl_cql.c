// Cassandra's native protocol v4 over TCP or TLS (OpenSSL): see sl_cql.h.
// Written by hand: Debian packages no C driver for Cassandra (the DataStax
// C++ driver is not in Debian), and a bulk reader needs only a handful of the
// protocol's messages: STARTUP, AUTH_RESPONSE, paged QUERYs, and for
// writing PREPARE, EXECUTE and BATCH, whose bodies the cql writer builds.
#include "sl_cql.h"

#include <arpa/inet.h>
#include <errno.h>
#include <lz4.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../core/sl_alloc.h"
#include "../core/sl_buffer.h"
#include "../core/sl_endian.h"
#include "../core/sl_error.h"
#include "../core/sl_sleep.h"
#include "../core/sl_value_text.h"

#define CQL_VERSION_REQUEST 0x04
#define CQL_VERSION_RESPONSE 0x84
#define CQL_HEADER 9
/// The protocol's limit on a frame body.
#define CQL_MAX_BODY ((int64_t)256 << 20)
/// Request bodies from this size on are sent LZ4-compressed when the
/// connection compresses (smaller ones gain nothing worth the work).
#define CQL_COMPRESS_MIN 512
/// A node that says nothing for this long is gone (its own read timeout,
/// 5 s by default, answers long before).
#define CQL_SOCKET_TIMEOUT_S 120

enum {
  OP_ERROR = 0x00,
  OP_STARTUP = 0x01,
  OP_READY = 0x02,
  OP_AUTHENTICATE = 0x03,
  OP_QUERY = 0x07,
  OP_RESULT = 0x08,
  OP_EVENT = 0x0C,
  OP_AUTH_CHALLENGE = 0x0E,
  OP_AUTH_RESPONSE = 0x0F,
  OP_AUTH_SUCCESS = 0x10,
};

enum {
  FLAG_COMPRESSION = 0x01,
  FLAG_TRACING = 0x02,
  FLAG_CUSTOM_PAYLOAD = 0x04,
  FLAG_WARNING = 0x08,
};

struct sl_cql_conn {
  const struct sluice_allocator* alloc;
  char name[512];  ///< the location, for messages
  char peer[300];  ///< host:port
  int fd;
  struct sl_buffer out;  ///< the request being written
  uint8_t* in;  ///< the body of the last frame received
  size_t in_cap;
  /// compression=lz4 was asked for at STARTUP: frames after it may carry LZ4
  /// bodies (flag 0x01); `plain` holds an answer's body inflated, `packed` a
  /// request's body compressed.
  int lz4;
  uint8_t* plain;
  size_t plain_cap;
  uint8_t* packed;
  size_t packed_cap;
  SSL_CTX* tls_ctx;  ///< TLS connections: OpenSSL's context and session
  SSL* tls;
  unsigned long tls_error;  ///< OpenSSL's error of the last failed read (0 = none)
  int cert_asked;  ///< the node asked for a client certificate, and there was none
  int answered;    ///< a frame has come: the node took the TLS handshake
  /// The code of the ERROR frame the last receive got (the connection is
  /// still in step), or -1 (none, or an I/O or protocol error).
  int32_t server_error;
  double timeout_s;  ///< the sockets' send and receive timeout, for messages
};

/* ---- Location ------------------------------------------------------------- */

static int copy_part(char* dst, size_t cap, const char* s, size_t n) {
  if (n >= cap) return -1;
  memcpy(dst, s, n);
  dst[n] = '\0';
  return 0;
}

static int copy_decoded(char* dst, size_t cap, const char* s, size_t n,
                        const struct sluice_allocator* alloc) {
  char* text = sl_percent_decoded(s, n, alloc);
  if (text == NULL) return -2;
  int rc = copy_part(dst, cap, text, strlen(text));
  sl_free(alloc, text, strlen(text) + 1);
  return rc;
}

/// The '@' that ends user[:password] after the scheme (`rest`), or NULL:
/// the last one, so that a password may hold '@' and '/' unescaped (a
/// keyspace or table name has neither); *slash = the '/' that ends the
/// authority after it, or NULL.
static const char* userinfo_end(const char* rest, const char** slash) {
  const char* at = strrchr(rest, '@');
  *slash = strchr(at != NULL ? at : rest, '/');
  return at;
}

void sl_cql_redacted(const char* location, char* out, size_t cap) {
  if (cap == 0) return;
  const char* rest = strstr(location, "://");
  rest = rest != NULL ? rest + 3 : location;
  const char* slash;
  const char* at = userinfo_end(rest, &slash);
  const char* colon = at != NULL ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
  if (colon == NULL) {
    snprintf(out, cap, "%s", location);
  } else {
    snprintf(out, cap, "%.*s:***%s", (int)(colon - location), location, at);
  }
}

int sl_cql_parse_location(const char* location, struct sl_cql_address* out,
                          const struct sluice_allocator* alloc, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  char shown[1024];  // the location in messages, without its password
  sl_cql_redacted(location, shown, sizeof shown);
  static const char scheme[] = "cql://";
  if (strncmp(location, scheme, sizeof scheme - 1) != 0) {
    return sl_error_set(error, EINVAL, "%s: not a cql:// location", shown);
  }
  const char* rest = location + sizeof scheme - 1;
  const char* slash;
  const char* at = userinfo_end(rest, &slash);
  if (slash == NULL || slash[1] == '\0') {
    return sl_error_set(error, EINVAL,
                        "%s: no table: write cql://[user[:password]@]host[:port]/keyspace.table",
                        shown);
  }
  int rc = 0;
  const char* host = rest;
  int has_password = 0;  // "user:password@" (even an empty one): the env's is not used
  if (at != NULL) {
    const char* colon = memchr(rest, ':', (size_t)(at - rest));
    has_password = colon != NULL;
    size_t user_len = (size_t)((colon != NULL ? colon : at) - rest);
    rc = copy_decoded(out->user, sizeof out->user, rest, user_len, alloc);
    if (rc == 0 && colon != NULL) {
      rc = copy_decoded(out->password, sizeof out->password, colon + 1,
                        (size_t)(at - colon - 1), alloc);
    }
    host = at + 1;
  }
  if (rc == -2) return sl_error_set(error, ENOMEM, "%s: out of memory", shown);
  if (rc != 0) return sl_error_set(error, EINVAL, "%s: the user or password is too long", shown);
  // host, [v6 address], either with :port.
  const char* host_end = slash;
  const char* port = NULL;
  if (host[0] == '[') {
    const char* close = memchr(host, ']', (size_t)(slash - host));
    if (close == NULL) return sl_error_set(error, EINVAL, "%s: unclosed '[' in the host", shown);
    if (close + 1 < slash && close[1] != ':') {
      return sl_error_set(error, EINVAL, "%s: unexpected text after ']'", shown);
    }
    port = close + 1 < slash ? close + 2 : NULL;
    ++host;
    host_end = close;
  } else {
    const char* colon = memchr(host, ':', (size_t)(slash - host));
    if (colon != NULL) {
      port = colon + 1;
      host_end = colon;
    }
  }
  if (host_end == host) return sl_error_set(error, EINVAL, "%s: no host", shown);
  if (copy_part(out->host, sizeof out->host, host, (size_t)(host_end - host)) != 0) {
    return sl_error_set(error, EINVAL, "%s: the host name is too long", shown);
  }
  if (port != NULL) {
    size_t n = (size_t)(slash - port);
    int digits = n > 0 && n < 6;
    for (size_t i = 0; digits && i < n; ++i) digits = port[i] >= '0' && port[i] <= '9';
    if (!digits || atoi(port) < 1 || atoi(port) > 65535) {
      return sl_error_set(error, EINVAL, "%s: the port '%.*s' is not a number from 1 to 65535",
                          shown, (int)n, port);
    }
    copy_part(out->port, sizeof out->port, port, n);
  } else {
    strcpy(out->port, "9042");
  }
  // keyspace.table (names as Cassandra stores them: case matters).
  const char* path = slash + 1;
  const char* dot = strchr(path, '.');
  if (dot == NULL || dot == path || dot[1] == '\0' || strchr(dot + 1, '.') != NULL ||
      strchr(path, '/') != NULL) {
    return sl_error_set(error, EINVAL, "%s: the path must be keyspace.table, not '%s'", shown,
                        path);
  }
  if (copy_part(out->keyspace, sizeof out->keyspace, path, (size_t)(dot - path)) != 0 ||
      copy_part(out->table, sizeof out->table, dot + 1, strlen(dot + 1)) != 0) {
    return sl_error_set(error, EINVAL, "%s: the keyspace or table name is too long", shown);
  }
  // The user from the location, else from SLUICE_CQL_USER; the password
  // from SLUICE_CQL_PASSWORD unless the location has one (as PGPASSWORD
  // with psql -U user: cql://user@host keeps the password off the command
  // line).
  const char* user = out->user[0] == '\0' ? getenv("SLUICE_CQL_USER") : NULL;
  const char* password = getenv("SLUICE_CQL_PASSWORD");
  if (user != NULL && copy_part(out->user, sizeof out->user, user, strlen(user)) != 0) {
    return sl_error_set(error, EINVAL, "SLUICE_CQL_USER is too long");
  }
  if (out->user[0] != '\0' && !has_password && password != NULL &&
      copy_part(out->password, sizeof out->password, password, strlen(password)) != 0) {
    return sl_error_set(error, EINVAL, "SLUICE_CQL_PASSWORD is too long");
  }
  return 0;
}

/* ---- Cursor ------------------------------------------------------------------ */

int sl_cql_read_int(struct sl_cql_cursor* c, int32_t* out) {
  if (c->end - c->p < 4) return -1;
  *out = (int32_t)sl_load_be32(c->p);
  c->p += 4;
  return 0;
}

int sl_cql_read_short(struct sl_cql_cursor* c, uint16_t* out) {
  if (c->end - c->p < 2) return -1;
  *out = (uint16_t)(c->p[0] << 8 | c->p[1]);
  c->p += 2;
  return 0;
}

int sl_cql_read_string(struct sl_cql_cursor* c, const uint8_t** s, size_t* n) {
  struct sl_cql_cursor at = *c;
  uint16_t len;
  if (sl_cql_read_short(&at, &len) != 0 || at.end - at.p < (ptrdiff_t)len) return -1;
  *s = at.p;
  *n = len;
  c->p = at.p + len;
  return 0;
}

int sl_cql_read_bytes(struct sl_cql_cursor* c, const uint8_t** data, int32_t* n) {
  struct sl_cql_cursor at = *c;
  int32_t len;
  if (sl_cql_read_int(&at, &len) != 0) return -1;
  if (len < 0) {
    *data = NULL;
    *n = -1;
    c->p = at.p;
    return 0;
  }
  if (at.end - at.p < (ptrdiff_t)len) return -1;
  *data = at.p;
  *n = len;
  c->p = at.p + len;
  return 0;
}

/* ---- Frames ------------------------------------------------------------------ */

static int put_bytes(struct sl_cql_conn* c, const void* p, size_t n) {
  return sl_buffer_append(&c->out, p, (int64_t)n);
}

static int put_u16(struct sl_cql_conn* c, unsigned v) { return sl_buffer_append_be(&c->out, v, 2); }

static int put_u32(struct sl_cql_conn* c, uint32_t v) { return sl_buffer_append_be(&c->out, v, 4); }

static int put_string(struct sl_cql_conn* c, const char* s) {
  size_t n = strlen(s);
  if (n > 0xFFFF) return EINVAL;
  int rc = put_u16(c, (unsigned)n);
  return rc != 0 ? rc : put_bytes(c, s, n);
}

/// Starts a request frame (its length is filled in by send_frame).
static int begin_frame(struct sl_cql_conn* c, int opcode) {
  c->out.size = 0;
  uint8_t header[CQL_HEADER] = {CQL_VERSION_REQUEST, 0, 0, 0, (uint8_t)opcode, 0, 0, 0, 0};
  return put_bytes(c, header, sizeof header);
}

static void put_length(uint8_t* header, size_t body) { sl_store_be(header + 5, body, 4); }

/// Makes *buf hold at least `need` bytes (its contents are not kept).
static int reserve(const struct sluice_allocator* alloc, uint8_t** buf, size_t* cap,
                   size_t need) {
  if (need <= *cap) return 0;
  size_t grown = *cap > 0 ? *cap : 4096;
  while (grown < need) grown *= 2;
  uint8_t* fresh = sl_alloc(alloc, grown);
  if (fresh == NULL) return ENOMEM;
  sl_free(alloc, *buf, *cap);
  *buf = fresh;
  *cap = grown;
  return 0;
}

/// Why a send or read failed with errno `e`, into out. A node that refuses
/// the client's certificate (none, or not of a CA it trusts) sends its
/// alert only after the client's side of a TLS 1.3 handshake is done, so
/// the refusal shows as the first send or read failing: say so.
static const char* io_failure(const struct sl_cql_conn* c, int e, char* out, size_t n) {
  const char* alert = c->tls_error != 0 ? ERR_reason_error_string(c->tls_error) : NULL;
  snprintf(out, n, "%s", alert != NULL ? alert : strerror(e));
  if (c->tls == NULL || c->answered) return out;
  size_t len = strlen(out);
  if (c->cert_asked) {
    snprintf(out + len, n - len, " (the node asks for a client certificate: tls_cert=FILE, "
             "tls_key=FILE)");
  } else if (SSL_get_certificate(c->tls) != NULL) {
    snprintf(out + len, n - len, " (the node may have refused the client certificate)");
  }
  return out;
}

static int send_failed(struct sl_cql_conn* c, int e, struct sluice_error* error) {
  if (e == EAGAIN || e == EWOULDBLOCK) {
    return sl_error_set(error, ETIMEDOUT, "%s: cannot send to %s: no room within %g s", c->name,
                        c->peer, c->timeout_s);
  }
  char why[256];
  return sl_error_set(error, EIO, "%s: cannot send to %s: %s", c->name, c->peer,
                      io_failure(c, e, why, sizeof why));
}

/// Sends the `n` pieces in full (sendmsg may take part of them; over TLS,
/// one SSL_write each).
static int send_all(struct sl_cql_conn* c, struct iovec* iov, int n, struct sluice_error* error) {
  if (c->tls != NULL) {
    // OpenSSL writes with write(2), which raises SIGPIPE when the node has
    // gone: held back in this thread and taken away, as libcurl does, so
    // that a library never kills its process.
    sigset_t pipe_only, before, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; ++i) {
      size_t done = 0;
      errno = 0;
      ERR_clear_error();
      if (iov[i].iov_len > 0 && SSL_write_ex(c->tls, iov[i].iov_base, iov[i].iov_len, &done) != 1) {
        c->tls_error = ERR_peek_last_error();
        ERR_clear_error();
        rc = send_failed(c, errno != 0 ? errno : EIO, error);
      }
    }
    sigpending(&pending);
    if (!was_pending && sigismember(&pending, SIGPIPE)) {
      struct timespec now = {0, 0};
      (void)sigtimedwait(&pipe_only, NULL, &now);
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    return rc;
  }
  while (n > 0) {
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)n;
    ssize_t k = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return send_failed(c, k < 0 ? errno : EIO, error);
    size_t sent = (size_t)k;
    while (n > 0 && sent >= iov->iov_len) {
      sent -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = (uint8_t*)iov->iov_base + sent;
      iov->iov_len -= sent;
    }
  }
  return 0;
}

/// Sends a frame of the header (its flags and length are set here) and the
/// body, LZ4-compressed when the connection compresses and it pays.
static int send_body(struct sl_cql_conn* c, uint8_t* header, const uint8_t* body, size_t n,
                     struct sluice_error* error) {
  if ((int64_t)n > CQL_MAX_BODY) {
    return sl_error_set(error, EINVAL, "%s: a request of %zu bytes is too large", c->name, n);
  }
  if (c->lz4 && n >= CQL_COMPRESS_MIN) {
    size_t bound = (size_t)LZ4_compressBound((int)n);
    if (reserve(c->alloc, &c->packed, &c->packed_cap, 4 + bound) != 0) {
      return sl_error_set(error, ENOMEM, "%s: out of memory", c->name);
    }
    int k = LZ4_compress_default((const char*)body, (char*)c->packed + 4, (int)n, (int)bound);
    if (k > 0 && (size_t)k + 4 < n) {
      sl_store_be(c->packed, n, 4);
      body = c->packed;
      n = (size_t)k + 4;
      header[1] |= FLAG_COMPRESSION;
    }
  }
  put_length(header, n);
  struct iovec iov[2] = {{header, CQL_HEADER}, {(void*)body, n}};
  return send_all(c, iov, n > 0 ? 2 : 1, error);
}

static int send_frame(struct sl_cql_conn* c, struct sluice_error* error) {
  return send_body(c, c->out.data, c->out.data + CQL_HEADER, (size_t)c->out.size - CQL_HEADER,
                   error);
}

/// Some bytes into dst: their count, 0 when the peer closed, -1 (errno set).
static ssize_t recv_some(struct sl_cql_conn* c, uint8_t* dst, size_t n) {
  if (c->tls == NULL) return recv(c->fd, dst, n, 0);
  size_t got = 0;
  errno = 0;
  ERR_clear_error();  // what another OpenSSL user left on this thread is not ours
  if (SSL_read_ex(c->tls, dst, n, &got) == 1) return (ssize_t)got;
  int why = SSL_get_error(c->tls, 0);
  c->tls_error = ERR_peek_last_error();
  ERR_clear_error();
  if (why == SSL_ERROR_ZERO_RETURN) return 0;
  if (errno == 0) errno = why == SSL_ERROR_SYSCALL ? ECONNRESET : EPROTO;
  return -1;
}

static int recv_all(struct sl_cql_conn* c, uint8_t* dst, size_t n, struct sluice_error* error) {
  for (size_t got = 0; got < n;) {
    ssize_t k = recv_some(c, dst + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) {
      return sl_error_set(error, EIO, "%s: %s closed the connection in the middle of an answer",
                          c->name, c->peer);
    }
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return sl_error_set(error, ETIMEDOUT, "%s: cannot read from %s: no answer within %g s",
                            c->name, c->peer, c->timeout_s);
      }
      char why[256];
      return sl_error_set(error, EIO, "%s: cannot read from %s: %s", c->name, c->peer,
                          io_failure(c, errno, why, sizeof why));
    }
    got += (size_t)k;
  }
  return 0;
}

static const char* error_code_name(int32_t code) {
  switch (code) {
    case 0x0000: return "server error";
    case 0x000A: return "protocol error";
    case 0x0100: return "authentication error";
    case 0x1000: return "unavailable";
    case 0x1001: return "overloaded";
    case 0x1002: return "is bootstrapping";
    case 0x1100: return "write timeout";
    case 0x1200: return "read timeout";
    case 0x1300: return "read failure";
    case 0x2000: return "syntax error";
    case 0x2100: return "unauthorized";
    case 0x2200: return "invalid query";
    case 0x2300: return "config error";
    default: return "error";
  }
}

static int server_error(struct sl_cql_conn* c, const char* what, struct sl_cql_cursor* body,
                        struct sluice_error* error) {
  int32_t code;
  const uint8_t* msg = (const uint8_t*)"";
  size_t msg_len = 0;
  if (sl_cql_read_int(body, &code) != 0) {
    return sl_error_set(error, EIO, "%s: %s: %s sent an ERROR without a code", c->name, what,
                        c->peer);
  }
  c->server_error = code;
  (void)sl_cql_read_string(body, &msg, &msg_len);
  int e = code == 0x0100 || code == 0x2100          ? EACCES
          : code == 0x1200 || code == 0x1100        ? ETIMEDOUT
          : code == 0x1000 || code == 0x1001 || code == 0x1002 ? EAGAIN
          : code == 0x2000 || code == 0x2200 || code == 0x2300 ? EINVAL
                                                     : EIO;
  return sl_error_set(error, e, "%s: %s: %s (0x%04x): %.*s", c->name, what,
                      error_code_name(code), (unsigned)code, (int)(msg_len > 400 ? 400 : msg_len),
                      (const char*)msg);
}

/// An LZ4 body (protocol v4: the inflated length, 4 bytes big-endian, then
/// one LZ4 block) inflated into c->plain; *cur then points there.
static int inflate_body(struct sl_cql_conn* c, struct sl_cql_cursor* cur,
                        struct sluice_error* error) {
  if (!c->lz4) {
    return sl_error_set(error, EPROTO, "%s: %s sent a compressed frame without being asked",
                        c->name, c->peer);
  }
  int64_t packed = cur->end - cur->p;
  if (packed < 4) {
    return sl_error_set(error, EPROTO, "%s: %s: a compressed frame of %lld bytes, too short for "
                        "its inflated length", c->name, c->peer, (long long)packed);
  }
  int64_t plain = (int64_t)sl_load_be32(cur->p);
  // LZ4 expands at most 255-fold: a larger claim would only make us
  // allocate for nothing.
  if (plain > CQL_MAX_BODY || packed - 4 > INT32_MAX || plain > (packed - 4) * 255 + 16) {
    return sl_error_set(error, EPROTO, "%s: %s: a compressed frame of %lld bytes declares %lld "
                        "bytes inflated (at most %lld)", c->name, c->peer, (long long)packed,
                        (long long)plain, (long long)CQL_MAX_BODY);
  }
  if (reserve(c->alloc, &c->plain, &c->plain_cap, (size_t)(plain > 0 ? plain : 1)) != 0) {
    return sl_error_set(error, ENOMEM, "%s: out of memory for a %lld-byte answer", c->name,
                        (long long)plain);
  }
  int got = LZ4_decompress_safe((const char*)cur->p + 4, (char*)c->plain, (int)(packed - 4),
                                (int)plain);
  if (got != plain) {
    return sl_error_set(error, EPROTO, "%s: %s: a compressed frame does not inflate to the %lld "
                        "bytes it declares", c->name, c->peer, (long long)plain);
  }
  cur->p = c->plain;
  cur->end = c->plain + plain;
  return 0;
}

/// Receives the next answer (server events, on stream -1, are skipped): the
/// stream it answers (NULL: not wanted), its opcode and its body past
/// tracing id, warnings and custom payload. ERROR frames become errors.
static int receive_frame(struct sl_cql_conn* c, const char* what, int16_t* answers, int* opcode,
                         struct sl_cql_cursor* body, struct sluice_error* error) {
  c->server_error = -1;
  if (answers != NULL) *answers = -1;
  for (;;) {
    uint8_t h[CQL_HEADER];
    SL_RETURN_NOT_OK(recv_all(c, h, sizeof h, error));
    c->answered = 1;
    if (h[0] != CQL_VERSION_RESPONSE) {
      return sl_error_set(error, EPROTO,
                          "%s: %s answered with protocol version byte 0x%02x, not 0x%02x (is "
                          "this a Cassandra native-protocol port speaking protocol v4?)",
                          c->name, c->peer, h[0], CQL_VERSION_RESPONSE);
    }
    int64_t length = (int32_t)sl_load_be32(h + 5);
    if (length < 0 || length > CQL_MAX_BODY) {
      return sl_error_set(error, EPROTO, "%s: %s: a frame claims a body of %lld bytes", c->name,
                          c->peer, (long long)length);
    }
    if (reserve(c->alloc, &c->in, &c->in_cap, (size_t)length) != 0) {
      return sl_error_set(error, ENOMEM, "%s: out of memory for a %lld-byte answer", c->name,
                          (long long)length);
    }
    SL_RETURN_NOT_OK(recv_all(c, c->in, (size_t)length, error));
    int16_t stream = (int16_t)(h[2] << 8 | h[3]);
    if (h[4] == OP_EVENT || stream < 0) continue;
    if (answers != NULL) *answers = stream;
    struct sl_cql_cursor cur = {c->in, c->in + length};
    if (h[1] & FLAG_COMPRESSION) SL_RETURN_NOT_OK(inflate_body(c, &cur, error));
    int bad = 0;
    if (h[1] & FLAG_TRACING) {
      bad = cur.end - cur.p < 16;
      if (!bad) cur.p += 16;
    }
    if (!bad && (h[1] & FLAG_WARNING)) {  // [string list]
      uint16_t n;
      bad = sl_cql_read_short(&cur, &n) != 0;
      for (uint16_t i = 0; !bad && i < n; ++i) {
        const uint8_t* s;
        size_t len;
        bad = sl_cql_read_string(&cur, &s, &len) != 0;
      }
    }
    if (!bad && (h[1] & FLAG_CUSTOM_PAYLOAD)) {  // [bytes map]
      uint16_t n;
      bad = sl_cql_read_short(&cur, &n) != 0;
      for (uint16_t i = 0; !bad && i < n; ++i) {
        const uint8_t* s;
        size_t len;
        int32_t vlen;
        bad = sl_cql_read_string(&cur, &s, &len) != 0 || sl_cql_read_bytes(&cur, &s, &vlen) != 0;
      }
    }
    if (bad) {
      return sl_error_set(error, EPROTO, "%s: %s: a frame's header fields overrun its body",
                          c->name, c->peer);
    }
    if (h[4] == OP_ERROR) return server_error(c, what, &cur, error);
    *opcode = h[4];
    *body = cur;
    return 0;
  }
}

/* ---- Connection ---------------------------------------------------------------- */

static int open_socket(struct sl_cql_conn* c, const struct sl_cql_address* a,
                       struct sluice_error* error) {
  struct addrinfo hints, *found = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int g = getaddrinfo(a->host, a->port, &hints, &found);
  if (g != 0) {
    return sl_error_set(error, EHOSTUNREACH, "%s: cannot resolve %s: %s", c->name, a->host,
                        gai_strerror(g));
  }
  int last = ECONNREFUSED;
  for (struct addrinfo* ai = found; ai != NULL; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    // Within [1 ms, 1e6 s], as curl's timeouts (sl_curl.c): a zero timeval
    // would mean no timeout at all, and a huge one does not fit time_t.
    double seconds = a->timeout_s > 0 ? a->timeout_s : CQL_SOCKET_TIMEOUT_S;
    seconds = seconds < 1e-3 ? 1e-3 : seconds > 1e6 ? 1e6 : seconds;
    c->timeout_s = seconds;
    time_t whole = (time_t)seconds;
    suseconds_t micros = (suseconds_t)((seconds - (double)whole) * 1e6);
    struct timeval tv = {whole, whole == 0 && micros == 0 ? 1000 : micros};
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      c->fd = fd;
      freeaddrinfo(found);
      return 0;
    }
    // A blocking connect gives up after SO_SNDTIMEO with EINPROGRESS.
    last = errno == EINPROGRESS ? ETIMEDOUT : errno;
    close(fd);
  }
  freeaddrinfo(found);
  if (last == ETIMEDOUT) {
    return sl_error_set(error, ETIMEDOUT, "%s: cannot connect to %s: no answer within %g s",
                        c->name, c->peer, c->timeout_s);
  }
  return sl_error_set(error, last == ECONNREFUSED ? ECONNREFUSED : EHOSTUNREACH,
                      "%s: cannot connect to %s: %s", c->name, c->peer, strerror(last));
}

int sl_cql_set_tls(struct sl_cql_address* a, int insecure, const char* ca_bundle,
                   struct sluice_error* error) {
  a->tls_insecure = insecure;
  a->ca_bundle[0] = '\0';
  if (!a->tls && (a->tls_cert[0] != '\0' || a->tls_key[0] != '\0')) {
    return sl_error_set(error, EINVAL, "a client certificate (tls_cert, tls_key) needs tls=true");
  }
  if (a->tls_key[0] != '\0' && a->tls_cert[0] == '\0') {
    return sl_error_set(error, EINVAL, "tls_key names a key, but tls_cert names no certificate");
  }
  if (ca_bundle == NULL) return 0;
  if (strlen(ca_bundle) >= sizeof a->ca_bundle) {
    return sl_error_set(error, EINVAL, "CA bundle path of %zu bytes is too long",
                        strlen(ca_bundle));
  }
  snprintf(a->ca_bundle, sizeof a->ca_bundle, "%s", ca_bundle);
  return 0;
}

/// OpenSSL's reason for the last error, for messages.
static const char* tls_reason(char* out, size_t n) {
  unsigned long e = ERR_peek_last_error();
  const char* why = e != 0 ? ERR_reason_error_string(e) : NULL;
  snprintf(out, n, "%s", why != NULL ? why : "unreadable");
  ERR_clear_error();
  return out;
}

/// OpenSSL asks when the node wants a client certificate and none is set:
/// noted for the message if the node then ends the connection.
static int no_client_cert(SSL* ssl, X509** cert, EVP_PKEY** key) {
  (void)cert, (void)key;
  struct sl_cql_conn* c = SSL_get_app_data(ssl);
  if (c != NULL) c->cert_asked = 1;
  return 0;  // go on without one
}

static int no_passphrase(char* buf, int size, int rwflag, void* user) {
  (void)buf, (void)size, (void)rwflag, (void)user;
  return 0;
}

/// Loads the client certificate and key of the address, if any, into the
/// context: the node asks for them when its client_encryption_options
/// have require_client_auth.
static int use_client_cert(struct sl_cql_conn* c, const struct sl_cql_address* a,
                           struct sluice_error* error) {
  if (a->tls_cert[0] == '\0') {
    SSL_CTX_set_client_cert_cb(c->tls_ctx, no_client_cert);
    return 0;
  }
  const char* key = a->tls_key[0] != '\0' ? a->tls_key : a->tls_cert;
  char why[128];
  // An encrypted key would make OpenSSL ask for its pass phrase on the
  // terminal, from every connection's thread: refused instead.
  SSL_CTX_set_default_passwd_cb(c->tls_ctx, no_passphrase);
  if (SSL_CTX_use_certificate_chain_file(c->tls_ctx, a->tls_cert) != 1) {
    return sl_error_set(error, EINVAL, "%s: cannot use the client certificate %s: %s", c->name,
                        a->tls_cert, tls_reason(why, sizeof why));
  }
  // OpenSSL checks that the key is the certificate's as it loads it.
  if (SSL_CTX_use_PrivateKey_file(c->tls_ctx, key, SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return sl_error_set(error, EINVAL, "%s: the client key %s does not belong to the "
                          "certificate %s", c->name, key, a->tls_cert);
    }
    return sl_error_set(error, EINVAL, "%s: cannot use the client key %s: %s", c->name, key,
                        tls_reason(why, sizeof why));
  }
  return 0;
}

/// The TLS handshake on the connected socket: TLS 1.2 or later, the node's
/// certificate checked against the CAs and the host name (or IP address) of
/// the location, unless the address says insecure.
static int start_tls(struct sl_cql_conn* c, const struct sl_cql_address* a,
                     struct sluice_error* error) {
  c->tls_ctx = SSL_CTX_new(TLS_client_method());
  if (c->tls_ctx == NULL) return sl_error_set(error, ENOMEM, "%s: cannot set up TLS", c->name);
  SSL_CTX_set_min_proto_version(c->tls_ctx, TLS1_2_VERSION);
  if (!a->tls_insecure) {
    SSL_CTX_set_verify(c->tls_ctx, SSL_VERIFY_PEER, NULL);
    int ok = a->ca_bundle[0] != '\0'
                 ? SSL_CTX_load_verify_locations(c->tls_ctx, a->ca_bundle, NULL)
                 : SSL_CTX_set_default_verify_paths(c->tls_ctx);
    if (ok != 1) {
      ERR_clear_error();
      return sl_error_set(error, EINVAL, "%s: cannot load the CA certificates from %s", c->name,
                          a->ca_bundle[0] != '\0' ? a->ca_bundle : "the system store");
    }
  }
  SL_RETURN_NOT_OK(use_client_cert(c, a, error));
  c->tls = SSL_new(c->tls_ctx);
  if (c->tls == NULL || SSL_set_fd(c->tls, c->fd) != 1 || SSL_set_app_data(c->tls, c) != 1) {
    ERR_clear_error();
    return sl_error_set(error, ENOMEM, "%s: cannot set up TLS", c->name);
  }
  uint8_t ip[16];
  int is_ip = inet_pton(AF_INET, a->host, ip) == 1 || inet_pton(AF_INET6, a->host, ip) == 1;
  if (!is_ip) (void)SSL_set_tlsext_host_name(c->tls, a->host);  // SNI takes names only
  if (!a->tls_insecure) {
    X509_VERIFY_PARAM* param = SSL_get0_param(c->tls);
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, a->host)
                   : X509_VERIFY_PARAM_set1_host(param, a->host, 0);
    if (ok != 1) {
      ERR_clear_error();
      return sl_error_set(error, EINVAL, "%s: cannot check certificates for '%s'", c->name,
                          a->host);
    }
  }
  if (SSL_connect(c->tls) == 1) return 0;
  long verify = SSL_get_verify_result(c->tls);
  char why[384];
  if (verify != X509_V_OK) {
    snprintf(why, sizeof why, "the node's certificate: %s (insecure=True skips the check, "
             "ca_bundle=FILE names the CA; CLI: --insecure, --ca-bundle FILE)",
             X509_verify_cert_error_string(verify));
  } else {
    char detail[160] = "no answer";
    unsigned long e = ERR_peek_last_error();
    if (e != 0) ERR_error_string_n(e, detail, sizeof detail);
    snprintf(why, sizeof why, "the handshake failed: %s (does the port speak TLS? the node's "
             "client_encryption_options)", detail);
  }
  ERR_clear_error();
  return sl_error_set(error, verify != X509_V_OK ? EACCES : EPROTO, "%s: TLS with %s: %s",
                      c->name, c->peer, why);
}

/// PasswordAuthenticator's SASL PLAIN: "\0user\0password".
static int log_in(struct sl_cql_conn* c, const struct sl_cql_address* a,
                  struct sl_cql_cursor* authenticate, struct sluice_error* error) {
  const uint8_t* cls = (const uint8_t*)"";
  size_t cls_len = 0;
  (void)sl_cql_read_string(authenticate, &cls, &cls_len);
  if (a->user[0] == '\0') {
    return sl_error_set(error, EACCES,
                        "%s: the node asks for a login (%.*s); give user:password@ in the "
                        "location, or SLUICE_CQL_USER and SLUICE_CQL_PASSWORD",
                        c->name, (int)(cls_len > 200 ? 200 : cls_len), (const char*)cls);
  }
  size_t user = strlen(a->user), password = strlen(a->password);
  int rc = begin_frame(c, OP_AUTH_RESPONSE);
  if (rc == 0) rc = put_u32(c, (uint32_t)(user + password + 2));
  if (rc == 0) rc = put_bytes(c, "", 1);
  if (rc == 0) rc = put_bytes(c, a->user, user);
  if (rc == 0) rc = put_bytes(c, "", 1);
  if (rc == 0) rc = put_bytes(c, a->password, password);
  if (rc != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", c->name);
  SL_RETURN_NOT_OK(send_frame(c, error));
  int opcode;
  struct sl_cql_cursor body;
  SL_RETURN_NOT_OK(receive_frame(c, "login", NULL, &opcode, &body, error));
  if (opcode == OP_AUTH_SUCCESS) return 0;
  return sl_error_set(error, EACCES,
                      "%s: login as '%s': the node answered with opcode 0x%02x, not "
                      "AUTH_SUCCESS (only PasswordAuthenticator's login is supported)",
                      c->name, a->user, opcode);
}

int sl_cql_connect(const struct sl_cql_address* address, const char* name,
                   const struct sluice_allocator* alloc, struct sl_cql_conn** out,
                   struct sluice_error* error) {
  *out = NULL;
  struct sl_cql_conn* c = sl_calloc(alloc, 1, sizeof *c);
  if (c == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  c->alloc = alloc;
  sl_buffer_init(&c->out, alloc);
  c->fd = -1;
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->peer, sizeof c->peer, strchr(address->host, ':') ? "[%s]:%s" : "%s:%s",
           address->host, address->port);
  int rc = open_socket(c, address, error);
  if (rc == 0 && address->tls) rc = start_tls(c, address, error);
  if (rc == 0) {
    rc = begin_frame(c, OP_STARTUP);
    if (rc == 0) rc = put_u16(c, address->compression ? 2 : 1);  // [string map]
    if (rc == 0) rc = put_string(c, "CQL_VERSION");
    if (rc == 0) rc = put_string(c, "3.0.0");
    if (rc == 0 && address->compression) rc = put_string(c, "COMPRESSION");
    if (rc == 0 && address->compression) rc = put_string(c, "lz4");
    rc = rc != 0 ? sl_error_set(error, ENOMEM, "%s: out of memory", name) : send_frame(c, error);
    // Every frame after STARTUP may be compressed, its answer too.
    c->lz4 = address->compression;
  }
  int opcode = 0;
  struct sl_cql_cursor body;
  if (rc == 0) rc = receive_frame(c, "start-up", NULL, &opcode, &body, error);
  if (rc == 0 && opcode == OP_AUTHENTICATE) {
    rc = log_in(c, address, &body, error);
  } else if (rc == 0 && opcode != OP_READY) {
    rc = sl_error_set(error, EPROTO, "%s: %s answered STARTUP with opcode 0x%02x", name, c->peer,
                      opcode);
  }
  if (rc != 0) {
    sl_cql_close(c);
    return rc;
  }
  *out = c;
  return 0;
}

void sl_cql_close(struct sl_cql_conn* c) {
  if (c == NULL) return;
  SSL_free(c->tls);  // no close_notify: the socket goes away with it
  SSL_CTX_free(c->tls_ctx);
  if (c->fd >= 0) close(c->fd);
  sl_buffer_reset(&c->out);
  sl_free(c->alloc, c->in, c->in_cap);
  sl_free(c->alloc, c->plain, c->plain_cap);
  sl_free(c->alloc, c->packed, c->packed_cap);
  sl_free(c->alloc, c, sizeof *c);
}

/* ---- Queries ------------------------------------------------------------------- */

int sl_cql_send_query(struct sl_cql_conn* c, const char* cql, int consistency,
                      int32_t page_rows, const uint8_t* paging_state, int32_t paging_state_len,
                      int skip_metadata, struct sluice_error* error) {
  size_t n = strlen(cql);
  uint8_t flags = (uint8_t)((skip_metadata ? 0x02 : 0) | (page_rows > 0 ? 0x04 : 0) |
                            (paging_state != NULL ? 0x08 : 0));
  int rc = begin_frame(c, OP_QUERY);
  if (rc == 0) rc = put_u32(c, (uint32_t)n);  // [long string]
  if (rc == 0) rc = put_bytes(c, cql, n);
  if (rc == 0) rc = put_u16(c, (unsigned)consistency);
  if (rc == 0) rc = put_bytes(c, &flags, 1);
  if (rc == 0 && page_rows > 0) rc = put_u32(c, (uint32_t)page_rows);
  if (rc == 0 && paging_state != NULL) {
    rc = put_u32(c, (uint32_t)paging_state_len);
    if (rc == 0) rc = put_bytes(c, paging_state, (size_t)paging_state_len);
  }
  if (rc != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", c->name);
  return send_frame(c, error);
}

int sl_cql_server_error(const struct sl_cql_conn* c) { return c->server_error; }

int sl_cql_transient(int code) {
  return code == 0x1200 || code == 0x1100 || code == 0x1000 || code == 0x1001 || code == 0x1002;
}

static long long monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sl_cql_outage_wait(struct sl_cql_outage* o) {
  long long now = monotonic_ms();
  if (o->tries == 0) o->since_ms = now;
  long long left = o->since_ms + SL_CQL_OUTAGE_MS - now;
  if (left <= 0) return 0;
  long pause = SL_CQL_OUTAGE_PAUSE_MS;
  for (int i = 0; i < o->tries && pause < SL_CQL_OUTAGE_PAUSE_CAP_MS; ++i) pause *= 2;
  if (pause > SL_CQL_OUTAGE_PAUSE_CAP_MS) pause = SL_CQL_OUTAGE_PAUSE_CAP_MS;
  sl_sleep_ms(pause < left ? pause : (long)left);
  ++o->tries;
  return 1;
}

double sl_cql_outage_seconds(const struct sl_cql_outage* o) {
  return o->tries == 0 ? 0.0 : (double)(monotonic_ms() - o->since_ms) / 1000.0;
}

void sl_cql_outage_end(struct sl_cql_outage* o) { o->tries = 0; }

int sl_cql_receive_result(struct sl_cql_conn* c, const char* what, const uint8_t** body,
                          int64_t* length, struct sluice_error* error) {
  return sl_cql_receive(c, what, NULL, body, length, error);
}

int sl_cql_send(struct sl_cql_conn* c, int opcode, int16_t stream, const uint8_t* body,
                size_t length, struct sluice_error* error) {
  if (stream < 0 || (int64_t)length > CQL_MAX_BODY) {
    return sl_error_set(error, EINVAL, "%s: a request of %zu bytes on stream %d cannot be sent",
                        c->name, length, (int)stream);
  }
  uint8_t header[CQL_HEADER] = {CQL_VERSION_REQUEST, 0, (uint8_t)((uint16_t)stream >> 8),
                                (uint8_t)stream, (uint8_t)opcode, 0, 0, 0, 0};
  return send_body(c, header, body, length, error);
}

int sl_cql_receive(struct sl_cql_conn* c, const char* what, int16_t* stream,
                   const uint8_t** body, int64_t* length, struct sluice_error* error) {
  int opcode;
  struct sl_cql_cursor cur;
  SL_RETURN_NOT_OK(receive_frame(c, what, stream, &opcode, &cur, error));
  if (opcode != OP_RESULT) {
    return sl_error_set(error, EPROTO, "%s: %s: %s answered with opcode 0x%02x, not RESULT",
                        c->name, what, c->peer, opcode);
  }
  *body = cur.p;
  *length = cur.end - cur.p;
  return 0;
}
